/**
 * Invariants of the books that hold on any company after any sequence of postings: the seeded
 * demo company, and the same company after the write tests have posted. Each check reads SQL,
 * lets the database sum (exact on both engines: scaled integers on SQLite, DECIMAL on
 * PostgreSQL), decodes through the dialect and throws an AssertionError naming the offending
 * rows. assertBooksInvariants runs them all and reports every failing check at once.
 *
 * Checks that only hold for the seed as generated (every document posted, control accounts
 * equal to the open balances) stay in test/db/seed-invariants.test.ts.
 */
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { Dec } from '../../src/storage/decimal';
import { dialectFor, engineOf, type Dialect } from '../../src/storage/dialect';

/** Account types whose job-coded lines carry job costs: 3 WIP asset, 9 direct expense. */
const JOB_COST_ACCOUNT_TYPES = '(3, 9)';
/** Account type of equipment expense. */
const EQUIPMENT_EXPENSE_TYPE = 10;
/** How many offending rows a message names. */
const SHOWN = 8;

/** Rows of a raw statement on either engine. */
export async function queryRows<T = Record<string, unknown>>(knex: Knex, sql: string, bindings: readonly unknown[] = []): Promise<T[]> {
  const result = await knex.raw(sql, bindings as Knex.RawBinding[]);
  return (Array.isArray(result) ? result : result.rows) as T[];
}

function decoder(knex: Knex): (raw: unknown, scale: number) => Dec {
  const dialect: Dialect = dialectFor(engineOf(knex));
  return (raw, scale) => dialect.decodeDecimal(raw, scale) ?? new Dec(0);
}

/** `account 7030 / year 2026 / period 11` from labelled parts. */
function label(parts: Record<string, unknown>): string {
  return Object.entries(parts)
    .map(([k, v]) => `${k} ${v === null || v === undefined ? '-' : String(v)}`)
    .join(' / ');
}

/** Fails naming every key (up to SHOWN) where the two maps of amounts differ (missing = 0). */
function assertSameAmounts(actual: Map<string, Dec>, expected: Map<string, Dec>, what: string, actualName: string, expectedName: string): void {
  const diffs: string[] = [];
  for (const k of new Set([...actual.keys(), ...expected.keys()])) {
    const a = actual.get(k) ?? new Dec(0);
    const e = expected.get(k) ?? new Dec(0);
    if (!a.equals(e)) diffs.push(`${k}: ${actualName} ${a.toFixed()}, ${expectedName} ${e.toFixed()}`);
  }
  assert.equal(diffs.length, 0, `${what}: ${diffs.length} differences:\n  ${diffs.slice(0, SHOWN).join('\n  ')}`);
}

/** Fails when the statement returns rows, naming them. */
async function assertNoRows(knex: Knex, what: string, sql: string, bindings: readonly unknown[] = []): Promise<void> {
  const bad = await queryRows(knex, sql, bindings);
  assert.equal(bad.length, 0, `${what}: ${bad.length} offending rows, e.g.\n  ${bad.slice(0, SHOWN).map((r) => JSON.stringify(r)).join('\n  ')}`);
}

function addTo(map: Map<string, Dec>, k: string, v: Dec): void {
  map.set(k, (map.get(k) ?? new Dec(0)).plus(v));
}

/** Every journal balances, its header totals equal its lines, it has lines, and a line is a debit or a credit. */
export async function assertJournalsBalance(knex: Knex): Promise<void> {
  await assertNoRows(
    knex,
    'journals whose debits differ from their credits or from their header totals (lgrtrn vs lgtnln)',
    `select t.recnum, t.trnnum, t.dbttot, t.crdtot, sum(l.dbtamt) as line_debits, sum(l.crdamt) as line_credits
       from lgrtrn t join lgtnln l on l._idref = t._idnum
      group by t.recnum, t.trnnum, t.dbttot, t.crdtot
     having sum(l.dbtamt) <> sum(l.crdamt) or sum(l.dbtamt) <> t.dbttot or sum(l.crdamt) <> t.crdtot
      order by t.recnum`,
  );
  await assertNoRows(knex, 'journals without lines', 'select t.recnum, t.trnnum from lgrtrn t where not exists (select 1 from lgtnln l where l._idref = t._idnum) order by t.recnum');
  await assertNoRows(
    knex,
    'journal lines carrying both a debit and a credit',
    'select t.recnum, l.linnum, l.lgract, l.dbtamt, l.crdamt from lgtnln l join lgrtrn t on t._idnum = l._idref where l.dbtamt <> 0 and l.crdamt <> 0 order by t.recnum, l.linnum',
  );
}

/** lgrbal equals the sum of the journal lines per account, year and period, and the trial balance balances. */
export async function assertLedgerBalancesMatchLines(knex: Knex): Promise<void> {
  const dec = decoder(knex);
  const lines = await queryRows<{ lgract: number; postyr: number; actprd: number; d: unknown; c: unknown }>(
    knex,
    `select l.lgract, t.postyr, t.actprd, sum(l.dbtamt) as d, sum(l.crdamt) as c
       from lgtnln l join lgrtrn t on t._idnum = l._idref group by l.lgract, t.postyr, t.actprd`,
  );
  const balances = await queryRows<{ lgract: number; postyr: number; actprd: number; dbttot: unknown; crdtot: unknown }>(knex, 'select lgract, postyr, actprd, dbttot, crdtot from lgrbal');
  const fromLines = new Map<string, Dec>();
  const fromBalances = new Map<string, Dec>();
  const at = (r: { lgract: number; postyr: number; actprd: number }, side: string) => `${label({ account: r.lgract, year: r.postyr, period: r.actprd })} ${side}`;
  for (const l of lines) {
    addTo(fromLines, at(l, 'debit'), dec(l.d, 2));
    addTo(fromLines, at(l, 'credit'), dec(l.c, 2));
  }
  for (const b of balances) {
    addTo(fromBalances, at(b, 'debit'), dec(b.dbttot, 2));
    addTo(fromBalances, at(b, 'credit'), dec(b.crdtot, 2));
  }
  await assertNoRows(
    knex,
    'ledger balance rows (lgrbal) repeated for one account, year and period',
    'select lgract, postyr, actprd, count(*) as n from lgrbal group by lgract, postyr, actprd having count(*) > 1 order by lgract, postyr, actprd',
  );
  assertSameAmounts(fromBalances, fromLines, 'ledger balances (lgrbal) vs journal lines (lgtnln)', 'lgrbal', 'lines');
  const [total] = await queryRows<{ d: unknown; c: unknown }>(knex, 'select sum(dbttot) as d, sum(crdtot) as c from lgrbal');
  const debits = dec(total?.d, 2);
  const credits = dec(total?.c, 2);
  assert.ok(debits.equals(credits), `the trial balance does not balance: lgrbal debits ${debits.toFixed(2)}, credits ${credits.toFixed(2)}`);
}

/**
 * Stock on hand equals the sum of its movements per part and location; never negative, available
 * never above on hand, the running balance of the last movement equals on hand.
 */
export async function assertStockMatchesMovements(knex: Knex): Promise<void> {
  const dec = decoder(knex);
  const at = (r: { prtnum: number; locnum: number }) => label({ part: r.prtnum, location: r.locnum });
  const qty = await queryRows<{ prtnum: number; locnum: number; qtyohn: unknown }>(knex, 'select prtnum, locnum, qtyohn from invqty');
  const moves = await queryRows<{ prtnum: number; locnum: number; q: unknown }>(knex, 'select prtnum, locnum, sum(hstqty) as q from invhst group by prtnum, locnum');
  const onHand = new Map<string, Dec>();
  const moved = new Map<string, Dec>();
  for (const r of qty) addTo(onHand, at(r), dec(r.qtyohn, 4));
  for (const r of moves) addTo(moved, at(r), dec(r.q, 4));
  assertSameAmounts(onHand, moved, 'stock on hand (invqty.qtyohn) vs the sum of its movements (invhst.hstqty)', 'on hand', 'movements');
  await assertNoRows(knex, 'negative stock, negative available, or available above on hand (invqty)', 'select prtnum, locnum, qtyohn, qtyavl from invqty where qtyohn < 0 or qtyavl < 0 or qtyavl > qtyohn order by prtnum, locnum');
  await assertNoRows(
    knex,
    'the running balance of the last movement (invhst.balqty) differs from on hand',
    `select q.prtnum, q.locnum, q.qtyohn, h.recnum as last_movement, h.balqty from invqty q join invhst h on h.prtnum = q.prtnum and h.locnum = q.locnum
      where h.recnum = (select max(h2.recnum) from invhst h2 where h2.prtnum = q.prtnum and h2.locnum = q.locnum) and h.balqty <> q.qtyohn
      order by q.prtnum, q.locnum`,
  );
}

/** The value of the movements per inventory account equals that account's ledger activity. */
export async function assertInventoryValueMatchesLedger(knex: Knex): Promise<void> {
  const dec = decoder(knex);
  const values = await queryRows<{ lgract: number; v: unknown }>(knex, 'select l.lgract, sum(h.extcst) as v from invhst h join invloc l on l.recnum = h.locnum group by l.lgract');
  const ledger = await queryRows<{ lgract: number; d: unknown; c: unknown }>(
    knex,
    'select l.lgract, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l where l.lgract in (select lgract from invloc) group by l.lgract',
  );
  assertSameAmounts(
    new Map(values.map((v) => [label({ account: v.lgract }), dec(v.v, 2)])),
    new Map(ledger.map((l) => [label({ account: l.lgract }), dec(l.d, 2).minus(dec(l.c, 2))])),
    'inventory accounts: value of the movements (invhst.extcst) vs ledger debits - credits',
    'movements',
    'ledger',
  );
}

/**
 * Purchase order lines: received to date (pcorln.rcvdte) equals the receipts (payable invoice lines
 * of the order); the order's received total equals the receipts' value; closed orders are fully
 * received or cancelled. Received to date may exceed the order (over-receipt is accepted: spec,
 * Writes, "nothing refuses an identical second receipt").
 */
export async function assertPurchaseOrdersMatchReceipts(knex: Knex): Promise<void> {
  const dec = decoder(knex);
  const at = (r: { ordnum: string; linnum: number }) => label({ order: r.ordnum, line: r.linnum });
  const lines = await queryRows<{ ordnum: string; linnum: number; rcvdte: unknown; linqty: unknown; cancel: unknown }>(
    knex,
    'select o.ordnum, l.linnum, l.rcvdte, l.linqty, l.cancel from pcorln l join pchord o on o._idnum = l._idref',
  );
  const receipts = await queryRows<{ ordnum: string; linnum: number; q: unknown }>(
    knex,
    'select i.ordnum, l.linnum, sum(l.linqty) as q from apivln l join acpinv i on i._idnum = l._idref where i.ordnum is not null group by i.ordnum, l.linnum',
  );
  const toDate = new Map<string, Dec>();
  const received = new Map<string, Dec>();
  for (const l of lines) addTo(toDate, at(l), dec(l.rcvdte, 4));
  for (const r of receipts) addTo(received, at(r), dec(r.q, 4));
  assertSameAmounts(toDate, received, 'purchase order lines: received to date (pcorln.rcvdte) vs the receipts (apivln of acpinv.ordnum)', 'to date', 'receipts');
  const totals = await queryRows<{ ordnum: string; rcvttl: unknown; got: unknown }>(
    knex,
    `select o.ordnum, o.rcvttl, (select coalesce(sum(l.extttl), 0) from apivln l join acpinv i on i._idnum = l._idref where i.ordnum = o.ordnum) as got from pchord o`,
  );
  const wrongTotals = totals.filter((t) => !dec(t.rcvttl, 2).equals(dec(t.got, 2))).map((t) => `order ${t.ordnum}: rcvttl ${dec(t.rcvttl, 2).toFixed(2)}, receipts ${dec(t.got, 2).toFixed(2)}`);
  assert.equal(wrongTotals.length, 0, `purchase orders whose received total differs from their receipts:\n  ${wrongTotals.slice(0, SHOWN).join('\n  ')}`);
  await assertNoRows(
    knex,
    'closed purchase orders (status 4) with lines neither received nor cancelled',
    'select o.ordnum from pchord o where o.status = 4 and exists (select 1 from pcorln l where l._idref = o._idnum and l.rcvdte + l.cancel < l.linqty) order by o.ordnum',
  );
}

/**
 * Job costs equal the job-coded direct-expense / WIP lines of the journal that created them (per
 * journal and job, and per job and period); equipment costs equal the equipment-expense lines per
 * unit; inventory consumed on jobs equals its job costs.
 */
export async function assertJobCostsMatchLedger(knex: Knex): Promise<void> {
  const dec = decoder(knex);
  // Which header of a source posted a job cost's document (its journal); source 31 points at the journal itself.
  const via: Record<number, string> = { 11: 'acpinv', 13: 'acpinv', 16: 'payrec', 23: 'invalc', 33: 'eqprev' };
  const costs = await queryRows<{ srcnum: number; srcrec: number; jobnum: number; amt: unknown }>(
    knex,
    'select srcnum, srcrec, jobnum, sum(cstamt) as amt from jobcst where status = 1 group by srcnum, srcrec, jobnum',
  );
  const journalOf = new Map<string, number>();
  for (const [src, table] of Object.entries(via)) {
    for (const h of await queryRows<{ recnum: number; lgrrec: number }>(knex, `select recnum, lgrrec from "${table}" where lgrrec is not null`)) {
      journalOf.set(`${src}|${Number(h.recnum)}`, Number(h.lgrrec));
    }
  }
  const fromCosts = new Map<string, Dec>();
  const unlinked: string[] = [];
  for (const c of costs) {
    const journal = Number(c.srcnum) === 31 ? Number(c.srcrec) : journalOf.get(`${Number(c.srcnum)}|${Number(c.srcrec)}`);
    if (journal === undefined) {
      unlinked.push(label({ source: c.srcnum, 'source record': c.srcrec, job: c.jobnum }));
      continue;
    }
    addTo(fromCosts, label({ journal, job: c.jobnum }), dec(c.amt, 2));
  }
  assert.equal(unlinked.length, 0, `open job costs whose document has no journal:\n  ${unlinked.slice(0, SHOWN).join('\n  ')}`);
  const lines = await queryRows<{ recnum: number; jobnum: number; d: unknown; c: unknown }>(
    knex,
    `select t.recnum, l.jobnum, sum(l.dbtamt) as d, sum(l.crdamt) as c
       from lgtnln l join lgrtrn t on t._idnum = l._idref join lgract a on a.recnum = l.lgract
      where a.acttyp in ${JOB_COST_ACCOUNT_TYPES} and l.jobnum is not null group by t.recnum, l.jobnum`,
  );
  const fromLines = new Map<string, Dec>();
  for (const l of lines) addTo(fromLines, label({ journal: l.recnum, job: l.jobnum }), dec(l.d, 2).minus(dec(l.c, 2)));
  assertSameAmounts(fromCosts, fromLines, 'open job costs (jobcst) vs job-coded direct-expense/WIP lines, per journal and job', 'job costs', 'ledger');

  // Per job, year and period: the job cost ledger equals the general ledger's job subledger.
  const byJob = await queryRows<{ jobnum: number; postyr: number; actprd: number; amt: unknown }>(knex, 'select jobnum, postyr, actprd, sum(cstamt) as amt from jobcst group by jobnum, postyr, actprd');
  const glByJob = await queryRows<{ jobnum: number; postyr: number; actprd: number; d: unknown; c: unknown }>(
    knex,
    `select l.jobnum, t.postyr, t.actprd, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l join lgrtrn t on t._idnum = l._idref join lgract a on a.recnum = l.lgract
      where a.acttyp in ${JOB_COST_ACCOUNT_TYPES} and l.jobnum is not null group by l.jobnum, t.postyr, t.actprd`,
  );
  const costByJob = new Map<string, Dec>();
  const ledgerByJob = new Map<string, Dec>();
  const jobAt = (j: { jobnum: number; postyr: number; actprd: number }) => label({ job: j.jobnum, year: j.postyr, period: j.actprd });
  for (const j of byJob) addTo(costByJob, jobAt(j), dec(j.amt, 2));
  for (const j of glByJob) addTo(ledgerByJob, jobAt(j), dec(j.d, 2).minus(dec(j.c, 2)));
  assertSameAmounts(costByJob, ledgerByJob, 'job costs vs ledger per job, year and period', 'job costs', 'ledger');

  // Equipment costs equal the equipment-expense lines per unit.
  const eq = await queryRows<{ eqpnum: number; amt: unknown }>(knex, 'select eqpnum, sum(cstamt) as amt from eqpcst group by eqpnum');
  const glEq = await queryRows<{ eqpnum: number; d: unknown; c: unknown }>(
    knex,
    `select l.eqpnum, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l join lgract a on a.recnum = l.lgract
      where a.acttyp = ${EQUIPMENT_EXPENSE_TYPE} and l.eqpnum is not null group by l.eqpnum`,
  );
  assertSameAmounts(
    new Map(eq.map((e) => [label({ equipment: e.eqpnum }), dec(e.amt, 2)])),
    new Map(glEq.map((e) => [label({ equipment: e.eqpnum }), dec(e.d, 2).minus(dec(e.c, 2))])),
    'equipment costs (eqpcst) vs equipment-expense ledger lines per unit',
    'equipment costs',
    'ledger',
  );
  await assertNoRows(
    knex,
    'inventory consumed on a job (invcsm) differs from its job cost',
    'select c.recnum, c.jobnum, c.extcst, j.recnum as job_cost, j.jobnum as job_cost_job, j.cstamt from invcsm c join jobcst j on j.recnum = c.jcsrec where c.extcst <> j.cstamt or c.jobnum <> j.jobnum order by c.recnum',
  );
}

/** Invoice balance = total - paid, total = its lines, paid = the payments applied (AP, AR, service). */
export async function assertInvoiceBalances(knex: Knex): Promise<void> {
  const check = (what: string, sql: string) => assertNoRows(knex, what, sql);
  await check('AP invoices whose balance is not total - paid (acpinv)', 'select recnum, vndnum, invnum, invttl, amtpad, invbal from acpinv where invbal <> invttl - amtpad order by recnum');
  await check(
    'AP invoices whose total is not the sum of their lines + tax (acpinv vs apivln)',
    'select i.recnum, i.vndnum, i.invnum, i.invttl from acpinv i where i.invttl <> (select coalesce(sum(l.extttl + l.taxamt), 0) from apivln l where l._idref = i._idnum) order by i.recnum',
  );
  await check(
    'AP invoices whose amount paid is not their payment lines (acpinv vs apmtln)',
    'select i.recnum, i.vndnum, i.invnum, i.amtpad from acpinv i where i.amtpad <> (select coalesce(sum(l.amtpad), 0) from apmtln l where l.invrec = i.recnum) order by i.recnum',
  );
  await check('AP payments whose amount is not their lines (acppmt vs apmtln)', 'select p.recnum, p.amount from acppmt p where p.amount <> (select coalesce(sum(l.amtpad), 0) from apmtln l where l._idref = p._idnum) order by p.recnum');
  // An invoice of total 0 (a PO receipt at zero cost) owes nothing and is not paid either: it keeps its status.
  await check(
    'AP invoices marked paid (status 4) with a balance, or with no balance (and a total) and not marked paid',
    'select recnum, vndnum, invnum, status, invttl, invbal from acpinv where (status = 4 and invbal <> 0) or (status <> 4 and invbal = 0 and invttl <> 0) order by recnum',
  );
  await check('AR invoices whose balance is not total - paid (acrinv)', 'select recnum, invnum, invttl, amtpad, invbal from acrinv where invbal <> invttl - amtpad order by recnum');
  await check(
    'AR invoices whose total is not the sum of their lines (acrinv vs arivln)',
    'select i.recnum, i.invnum, i.invttl from acrinv i where i.invttl <> (select coalesce(sum(l.extttl), 0) from arivln l where l._idref = i._idnum) order by i.recnum',
  );
  await check(
    'AR invoices whose amount paid is not their payments (acrinv vs acrpmt)',
    'select i.recnum, i.invnum, i.amtpad from acrinv i where i.amtpad <> (select coalesce(sum(p.amount), 0) from acrpmt p where p.invrec = i.recnum) order by i.recnum',
  );
  await check('service invoices whose balance is not total - paid (srvinv)', 'select recnum, invnum, invttl, amtpad, invbal from srvinv where invbal <> invttl - amtpad order by recnum');
  await check(
    'service invoices whose total is not their lines + tax (srvinv vs srvlin)',
    'select i.recnum, i.invnum, i.invttl from srvinv i where i.invttl <> (select coalesce(sum(l.extttl), 0) from srvlin l where l._idref = i._idnum) + i.taxamt order by i.recnum',
  );
  await check(
    'service invoices whose amount paid is not their payments (srvinv vs srvpmt)',
    'select i.recnum, i.invnum, i.amtpad from srvinv i where i.amtpad <> (select coalesce(sum(p.amount), 0) from srvpmt p where p.invrec = i.recnum) order by i.recnum',
  );
}

/** Every check above, in order; fails once, listing each failing check with its offending rows. */
export const BOOKS_INVARIANTS: ReadonlyArray<readonly [string, (knex: Knex) => Promise<void>]> = [
  ['journals balance', assertJournalsBalance],
  ['ledger balances equal the journal lines', assertLedgerBalancesMatchLines],
  ['stock on hand equals its movements', assertStockMatchesMovements],
  ['inventory value equals its ledger accounts', assertInventoryValueMatchesLedger],
  ['purchase orders equal their receipts', assertPurchaseOrdersMatchReceipts],
  ['job and equipment costs equal their ledger lines', assertJobCostsMatchLedger],
  ['invoice balances equal total - paid', assertInvoiceBalances],
];

/**
 * Runs every check of BOOKS_INVARIANTS but those in `except` (a test that moves stock without
 * posting, for instance, leaves out assertInventoryValueMatchesLedger: nothing else is skipped).
 */
export async function assertBooksInvariants(knex: Knex, options: { except?: ReadonlyArray<(knex: Knex) => Promise<void>> } = {}): Promise<void> {
  const failures: string[] = [];
  for (const [name, check] of BOOKS_INVARIANTS) {
    if (options.except?.includes(check)) continue;
    try {
      await check(knex);
    } catch (err) {
      if (!(err instanceof assert.AssertionError)) throw err;
      failures.push(`- ${name}: ${err.message}`);
    }
  }
  assert.equal(failures.length, 0, `books invariants broken (${failures.length}):\n${failures.join('\n')}`);
}
