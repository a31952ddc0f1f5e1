/**
 * The demo company's books are coherent: checked from SQL on a freshly seeded database
 * (SQLite by default; TEST_ENGINE=postgres TEST_POSTGRES_URL=postgres://... for PostgreSQL).
 * Amounts are summed by the database (exact on both engines: scaled integers on SQLite,
 * DECIMAL on PostgreSQL) and decoded through the dialect.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { CATALOG } from '../generated/catalog';
import { seedDemoCompany, type SeedReport } from '../db/seed';
import { Dec } from '../src/storage/decimal';
import { dialectFor, type Dialect } from '../src/storage/dialect';
import { createTestKnex, type TestDatabase } from './support/db';

let db: TestDatabase;
let knex: Knex;
let dialect: Dialect;
let report: SeedReport;

/** Decodes a DECIMAL(p, scale) value (or a SUM of one) to an exact decimal; null is 0. */
function dec(raw: unknown, scale: number): Dec {
  return dialect.decodeDecimal(raw, scale) ?? new Dec(0);
}

const key = (...parts: unknown[]) => parts.map((p) => (p === null || p === undefined ? '' : String(p))).join('|');

/** Compares two maps of decimals (missing = 0) and reports the first differences. */
function assertSameAmounts(actual: Map<string, Dec>, expected: Map<string, Dec>, what: string): void {
  const diffs: string[] = [];
  for (const k of new Set([...actual.keys(), ...expected.keys()])) {
    const a = actual.get(k) ?? new Dec(0);
    const e = expected.get(k) ?? new Dec(0);
    if (!a.equals(e)) diffs.push(`${k}: ${a.toFixed()} != ${e.toFixed()}`);
  }
  assert.equal(diffs.length, 0, `${what}: ${diffs.length} differences, e.g. ${diffs.slice(0, 5).join('; ')}`);
}

async function rows<T = Record<string, unknown>>(sql: string, bindings: readonly unknown[] = []): Promise<T[]> {
  const result = await knex.raw(sql, bindings as Knex.RawBinding[]);
  return (Array.isArray(result) ? result : result.rows) as T[];
}

before(async () => {
  db = await createTestKnex();
  knex = db.knex;
  dialect = dialectFor(db.engine);
  report = await seedDemoCompany(knex, { scale: 1 });
});

after(async () => {
  await db?.destroy();
});

describe('demo company seed', () => {
  test('every entity table and line table of the catalog has rows', async () => {
    const empty: string[] = [];
    for (const e of Object.values(CATALOG)) {
      for (const table of [e.table, ...Object.values(e.children).map((c) => c.table)]) {
        const [r] = await rows<{ n: number | string }>(`select count(*) as n from "${table}"`);
        if (Number(r!.n) < 1) empty.push(`${e.entity}: ${table}`);
      }
    }
    assert.deepEqual(empty, []);
    assert.ok(Object.keys(CATALOG).length >= 82, 'the catalog has the 82 entities');
  });

  test('a small but full company at scale 1', async () => {
    const count = async (t: string) => Number((await rows<{ n: number }>(`select count(*) as n from "${t}"`))[0]!.n);
    assert.ok((await count('tkfprt')) >= 300, 'a few hundred parts (400)');
    assert.ok((await count('jobcst')) >= 2000, 'a few thousand job costs (about 4,000)');
    assert.equal(report.jobCosts, await count('jobcst'));
  });

  test('ledger setup: fiscal 2026 open in period 11, periods 0 to 12', async () => {
    const [s] = await rows<Record<string, number>>('select curyer, curprd, fscend, prdplc from lgrstp');
    assert.equal(Number(s!.curyer), 2026);
    assert.equal(Number(s!.curprd), 11);
    assert.equal(Number(s!.fscend), 12);
    const periods = await rows<{ actprd: number }>('select actprd from fscprd where postyr = 2026 order by actprd');
    assert.deepEqual(periods.map((p) => Number(p.actprd)), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const [late] = await rows<{ n: number }>('select count(*) as n from lgrtrn where postyr = 2026 and actprd > 11');
    assert.equal(Number(late!.n), 0, 'nothing posted after the open period');
    const types = await rows<{ recnum: number }>('select recnum from csttyp order by recnum');
    assert.deepEqual(types.map((t) => Number(t.recnum)).slice(0, 5), [1, 2, 3, 4, 5]);
    const sources = await rows<{ recnum: number; stdsrc: unknown }>('select recnum, stdsrc from source');
    for (const n of [11, 13, 16, 17, 18, 22, 23, 31, 33]) assert.ok(sources.some((s) => Number(s.recnum) === n), `standard source ${n}`);
    assert.ok(sources.some((s) => Number(s.recnum) > 33 && !s.stdsrc), 'a site-defined source above the standard set');
  });

  test('every journal balances and its header totals equal its lines', async () => {
    const bad = await rows(
      `select t.recnum, t.dbttot, t.crdtot, sum(l.dbtamt) as d, sum(l.crdamt) as c
         from lgrtrn t join lgtnln l on l._idref = t._idnum
        group by t.recnum, t.dbttot, t.crdtot
       having sum(l.dbtamt) <> sum(l.crdamt) or sum(l.dbtamt) <> t.dbttot or sum(l.crdamt) <> t.crdtot`,
    );
    assert.deepEqual(bad, []);
    const [orphans] = await rows<{ n: number }>('select count(*) as n from lgrtrn t where not exists (select 1 from lgtnln l where l._idref = t._idnum)');
    assert.equal(Number(orphans!.n), 0, 'no journal without lines');
    const [both] = await rows<{ n: number }>('select count(*) as n from lgtnln where dbtamt <> 0 and crdamt <> 0');
    assert.equal(Number(both!.n), 0, 'a line carries a debit or a credit');
  });

  test('ledger balances equal the journal lines per account, year and period', async () => {
    const lines = await rows<{ lgract: number; postyr: number; actprd: number; d: unknown; c: unknown }>(
      `select l.lgract, t.postyr, t.actprd, sum(l.dbtamt) as d, sum(l.crdamt) as c
         from lgtnln l join lgrtrn t on t._idnum = l._idref group by l.lgract, t.postyr, t.actprd`,
    );
    const balances = await rows<{ lgract: number; postyr: number; actprd: number; dbttot: unknown; crdtot: unknown }>('select lgract, postyr, actprd, dbttot, crdtot from lgrbal');
    const fromLines = new Map<string, Dec>();
    const fromBalances = new Map<string, Dec>();
    for (const l of lines) {
      fromLines.set(key(l.lgract, l.postyr, l.actprd, 'D'), dec(l.d, 2));
      fromLines.set(key(l.lgract, l.postyr, l.actprd, 'C'), dec(l.c, 2));
    }
    for (const b of balances) {
      fromBalances.set(key(b.lgract, b.postyr, b.actprd, 'D'), dec(b.dbttot, 2));
      fromBalances.set(key(b.lgract, b.postyr, b.actprd, 'C'), dec(b.crdtot, 2));
    }
    assertSameAmounts(fromBalances, fromLines, 'lgrbal vs lgtnln');
    const [total] = await rows<{ d: unknown; c: unknown }>('select sum(dbttot) as d, sum(crdtot) as c from lgrbal');
    assert.ok(dec(total!.d, 2).equals(dec(total!.c, 2)), 'the trial balance balances');
  });

  test('every posted document points to its journal', async () => {
    const headers: Array<[string, string]> = [
      ['acpinv', 'true'],
      ['acppmt', 'true'],
      ['acrinv', 'true'],
      ['acrpmt', 'true'],
      ['srvinv', 'status in (1, 4)'],
      ['srvpmt', 'true'],
      ['payrec', 'status = 3'],
      ['paychk', 'true'],
      ['invalc', 'status = 4 and ttlcst <> 0'],
      ['eqprev', 'true'],
      ['bnktrn', 'true'],
    ];
    for (const [table, posted] of headers) {
      const [missing] = await rows<{ n: number }>(
        `select count(*) as n from "${table}" h where (${posted}) and (h.lgrrec is null or not exists (select 1 from lgrtrn t where t.recnum = h.lgrrec))`,
      );
      assert.equal(Number(missing!.n), 0, `${table}: posted rows without their journal`);
      const [any] = await rows<{ n: number }>(`select count(*) as n from "${table}" where lgrrec is not null`);
      assert.ok(Number(any!.n) > 0, `${table} has posted rows`);
    }
    const [unposted] = await rows<{ n: number }>('select count(*) as n from srvinv where status = 2 and lgrrec is not null');
    assert.equal(Number(unposted!.n), 0, 'work orders not invoiced post nothing');
    const [held] = await rows<{ n: number }>('select count(*) as n from invalc where status <> 4 and lgrrec is not null');
    assert.equal(Number(held!.n), 0, 'open and held allocations post nothing');
    // PO receipts post under source 13, other payable invoices under 11 (or the card statements).
    const [receipts] = await rows<{ n: number }>('select count(*) as n from acpinv i join lgrtrn t on t.recnum = i.lgrrec where i.ordnum is not null and t.srcnum <> 13');
    assert.equal(Number(receipts!.n), 0);
  });

  test('documents agree with their journals (control accounts read from the ledger setup)', async () => {
    const [setup] = await rows<{ apcact: number; arcact: number }>('select apcact, arcact from lgrstp');
    const check = async (what: string, sql: string, bindings: unknown[] = []) => {
      const bad = await rows(sql, bindings);
      assert.deepEqual(bad.slice(0, 5), [], what);
    };
    await check(
      'AP invoice total = credit to AP control',
      `select i.recnum from acpinv i
        where i.invttl <> (select sum(l.crdamt) from lgtnln l join lgrtrn t on t._idnum = l._idref where t.recnum = i.lgrrec and l.lgract = ?)`,
      [setup!.apcact],
    );
    await check(
      'AR invoice total = debit to AR control',
      `select i.recnum from acrinv i
       where i.invttl <> (select sum(l.dbtamt) from lgtnln l join lgrtrn t on t._idnum = l._idref where t.recnum = i.lgrrec and l.lgract = ?)`,
      [setup!.arcact],
    );
    await check(
      'AP payment = debit to AP control',
      `select p.recnum from acppmt p where p.amount <> (select sum(l.dbtamt) from lgtnln l join lgrtrn t on t._idnum = l._idref where t.recnum = p.lgrrec and l.lgract = ?)`,
      [setup!.apcact],
    );
    await check(
      'AR payment = credit to AR control',
      `select p.recnum from acrpmt p where p.amount <> (select sum(l.crdamt) from lgtnln l join lgrtrn t on t._idnum = l._idref where t.recnum = p.lgrrec and l.lgract = ?)`,
      [setup!.arcact],
    );
    await check(
      'service invoice total = debit to receivables (current assets)',
      `select i.recnum from srvinv i where i.lgrrec is not null and i.invttl <> (select coalesce(sum(l.dbtamt), 0) from lgtnln l join lgrtrn t on t._idnum = l._idref join lgract a on a.recnum = l.lgract where t.recnum = i.lgrrec and a.acttyp = 2)`,
    );
    await check(
      'payroll: net pay of the records = credit to cash in their journal',
      `select p.lgrrec from payrec p group by p.lgrrec
       having sum(p.netpay) <> (select sum(l.crdamt) from lgtnln l join lgrtrn t on t._idnum = l._idref join lgract a on a.recnum = l.lgract where t.recnum = p.lgrrec and a.acttyp = 1)`,
    );
    await check(
      'paycheck = its payroll record',
      `select c.recnum from paychk c join payrec p on p.recnum = c.payrec where c.netpay <> p.netpay or c.grspay <> p.grspay or c.lgrrec <> p.lgrrec`,
    );
    await check(
      'payroll record gross = its timecard lines',
      `select p.recnum from payrec p where p.grspay <> (select sum(l.amount) from tmcdln l where l._idref = p._idnum) or p.netpay <> p.grspay - p.dedttl`,
    );
    await check(
      'equipment revenue = credits to revenue in its journal',
      `select e.lgrrec from eqprev e group by e.lgrrec
       having sum(e.revamt) <> (select sum(l.crdamt) from lgtnln l join lgrtrn t on t._idnum = l._idref join lgract a on a.recnum = l.lgract where t.recnum = e.lgrrec and l.eqpnum is not null and a.acttyp = 8)`,
    );
    await check(
      'allocation total = credit to the stock it left (or the revaluation)',
      `select a.recnum from invalc a where a.lgrrec is not null and abs(a.ttlcst) <> (select t.dbttot from lgrtrn t where t.recnum = a.lgrrec)`,
    );
  });

  test('job costs agree with the job-coded direct-expense lines that created them', async () => {
    // Which header of a source posted a job cost's document (its journal).
    const via: Record<number, string> = { 11: 'acpinv', 13: 'acpinv', 16: 'payrec', 23: 'invalc', 33: 'eqprev' };
    const costs = await rows<{ srcnum: number; srcrec: number; jobnum: number; amt: unknown }>('select srcnum, srcrec, jobnum, sum(cstamt) as amt from jobcst where status = 1 group by srcnum, srcrec, jobnum');
    const journalOf = new Map<string, number>();
    for (const [src, table] of Object.entries(via)) {
      for (const h of await rows<{ recnum: number; lgrrec: number }>(`select recnum, lgrrec from "${table}" where lgrrec is not null`)) journalOf.set(key(src, h.recnum), Number(h.lgrrec));
    }
    const fromCosts = new Map<string, Dec>();
    const unlinked: string[] = [];
    for (const c of costs) {
      const journal = Number(c.srcnum) === 31 ? Number(c.srcrec) : journalOf.get(key(c.srcnum, c.srcrec));
      if (journal === undefined) {
        unlinked.push(key(c.srcnum, c.srcrec));
        continue;
      }
      const k = key(journal, c.jobnum);
      fromCosts.set(k, (fromCosts.get(k) ?? new Dec(0)).plus(dec(c.amt, 2)));
    }
    assert.deepEqual(unlinked.slice(0, 5), [], 'every job cost leads to the journal of its document');
    const lines = await rows<{ recnum: number; jobnum: number; d: unknown; c: unknown }>(
      `select t.recnum, l.jobnum, sum(l.dbtamt) as d, sum(l.crdamt) as c
         from lgtnln l join lgrtrn t on t._idnum = l._idref join lgract a on a.recnum = l.lgract
        where a.acttyp = 9 and l.jobnum is not null group by t.recnum, l.jobnum`,
    );
    const fromLines = new Map<string, Dec>();
    for (const l of lines) fromLines.set(key(l.recnum, l.jobnum), dec(l.d, 2).minus(dec(l.c, 2)));
    assertSameAmounts(fromCosts, fromLines, 'job costs vs job-coded direct-expense lines, per journal and job');
    // Same per job, period: the job cost ledger equals the general ledger's direct-expense subledger.
    const byJob = await rows<{ jobnum: number; actprd: number; amt: unknown }>('select jobnum, actprd, sum(cstamt) as amt from jobcst group by jobnum, actprd');
    const glByJob = await rows<{ jobnum: number; actprd: number; d: unknown; c: unknown }>(
      `select l.jobnum, t.actprd, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l join lgrtrn t on t._idnum = l._idref join lgract a on a.recnum = l.lgract
        where a.acttyp = 9 and l.jobnum is not null group by l.jobnum, t.actprd`,
    );
    assertSameAmounts(
      new Map(byJob.map((j) => [key(j.jobnum, j.actprd), dec(j.amt, 2)])),
      new Map(glByJob.map((j) => [key(j.jobnum, j.actprd), dec(j.d, 2).minus(dec(j.c, 2))])),
      'job costs vs ledger per job and period',
    );
    // Equipment costs equal the equipment-expense lines per unit.
    const eq = await rows<{ eqpnum: number; amt: unknown }>('select eqpnum, sum(cstamt) as amt from eqpcst group by eqpnum');
    const glEq = await rows<{ eqpnum: number; d: unknown; c: unknown }>(
      `select l.eqpnum, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l join lgract a on a.recnum = l.lgract where a.acttyp = 10 and l.eqpnum is not null group by l.eqpnum`,
    );
    assertSameAmounts(new Map(eq.map((e) => [key(e.eqpnum), dec(e.amt, 2)])), new Map(glEq.map((e) => [key(e.eqpnum), dec(e.d, 2).minus(dec(e.c, 2))])), 'equipment costs vs ledger');
    // Inventory consumed on jobs equals its job costs.
    const [consumed] = await rows<{ n: number }>('select count(*) as n from invcsm c join jobcst j on j.recnum = c.jcsrec where c.extcst <> j.cstamt or c.jobnum <> j.jobnum');
    assert.equal(Number(consumed!.n), 0);
  });

  test('inventory on hand equals the sum of its movements, and the ledger its value', async () => {
    const qty = await rows<{ prtnum: number; locnum: number; qtyohn: unknown }>('select prtnum, locnum, qtyohn from invqty');
    const moves = await rows<{ prtnum: number; locnum: number; q: unknown }>('select prtnum, locnum, sum(hstqty) as q from invhst group by prtnum, locnum');
    assertSameAmounts(new Map(qty.map((r) => [key(r.prtnum, r.locnum), dec(r.qtyohn, 4)])), new Map(moves.map((r) => [key(r.prtnum, r.locnum), dec(r.q, 4)])), 'invqty.qtyohn vs invhst');
    const [negative] = await rows<{ n: number }>('select count(*) as n from invqty where qtyohn < 0 or qtyavl > qtyohn');
    assert.equal(Number(negative!.n), 0, 'no negative stock; available never above on hand');
    // The quantity after each movement runs up to the quantity on hand.
    const [lastBad] = await rows<{ n: number }>(
      `select count(*) as n from invqty q join invhst h on h.prtnum = q.prtnum and h.locnum = q.locnum
        where h.recnum = (select max(h2.recnum) from invhst h2 where h2.prtnum = q.prtnum and h2.locnum = q.locnum) and h.balqty <> q.qtyohn`,
    );
    assert.equal(Number(lastBad!.n), 0, 'invhst.balqty of the last movement = on hand');
    const values = await rows<{ lgract: number; v: unknown }>('select l.lgract, sum(h.extcst) as v from invhst h join invloc l on l.recnum = h.locnum group by l.lgract');
    const ledger = await rows<{ lgract: number; d: unknown; c: unknown }>(
      `select l.lgract, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l where l.lgract in (select lgract from invloc) group by l.lgract`,
    );
    assertSameAmounts(new Map(values.map((v) => [key(v.lgract), dec(v.v, 2)])), new Map(ledger.map((l) => [key(l.lgract), dec(l.d, 2).minus(dec(l.c, 2))])), 'inventory accounts vs movement values');
  });

  test('purchase order lines: received to date = the sum of the receipts', async () => {
    const lines = await rows<{ ordnum: string; linnum: number; rcvdte: unknown; linqty: unknown; cancel: unknown }>('select o.ordnum, l.linnum, l.rcvdte, l.linqty, l.cancel from pcorln l join pchord o on o._idnum = l._idref');
    const receipts = await rows<{ ordnum: string; linnum: number; q: unknown }>(
      'select i.ordnum, l.linnum, sum(l.linqty) as q from apivln l join acpinv i on i._idnum = l._idref where i.ordnum is not null group by i.ordnum, l.linnum',
    );
    assertSameAmounts(new Map(lines.map((l) => [key(l.ordnum, l.linnum), dec(l.rcvdte, 4)])), new Map(receipts.map((r) => [key(r.ordnum, r.linnum), dec(r.q, 4)])), 'pcorln.rcvdte vs receipts');
    for (const l of lines) assert.ok(dec(l.rcvdte, 4).plus(dec(l.cancel, 4)).lte(dec(l.linqty, 4)), `${l.ordnum}/${l.linnum}: not received beyond the order`);
    const totals = await rows<{ ordnum: string; rcvttl: unknown; got: unknown }>(
      `select o.ordnum, o.rcvttl, (select coalesce(sum(l.extttl), 0) from apivln l join acpinv i on i._idnum = l._idref where i.ordnum = o.ordnum) as got from pchord o`,
    );
    for (const t of totals) assert.ok(dec(t.rcvttl, 2).equals(dec(t.got, 2)), `${t.ordnum}: received total`);
    const [closed] = await rows<{ n: number }>(`select count(*) as n from pchord o where o.status = 4 and exists (select 1 from pcorln l where l._idref = o._idnum and l.rcvdte + l.cancel < l.linqty)`);
    assert.equal(Number(closed!.n), 0, 'closed orders are fully received or cancelled');
  });

  test('invoice balance = total - paid, and paid = the payments applied', async () => {
    const check = async (what: string, sql: string) => assert.deepEqual((await rows(sql)).slice(0, 5), [], what);
    await check('acpinv balance', 'select recnum from acpinv where invbal <> invttl - amtpad');
    await check('acpinv total = lines', 'select i.recnum from acpinv i where i.invttl <> (select sum(l.extttl + l.taxamt) from apivln l where l._idref = i._idnum)');
    await check('acpinv paid = payment lines', 'select i.recnum from acpinv i where i.amtpad <> (select coalesce(sum(l.amtpad), 0) from apmtln l where l.invrec = i.recnum)');
    await check('acppmt amount = its lines', 'select p.recnum from acppmt p where p.amount <> (select sum(l.amtpad) from apmtln l where l._idref = p._idnum)');
    await check('acpinv paid status', 'select recnum from acpinv where (status = 4) <> (invbal = 0)');
    await check('acrinv balance', 'select recnum from acrinv where invbal <> invttl - amtpad');
    await check('acrinv total = lines', 'select i.recnum from acrinv i where i.invttl <> (select sum(l.extttl) from arivln l where l._idref = i._idnum)');
    await check('acrinv paid = payments', 'select i.recnum from acrinv i where i.amtpad <> (select coalesce(sum(p.amount), 0) from acrpmt p where p.invrec = i.recnum)');
    await check('srvinv balance', 'select recnum from srvinv where invbal <> invttl - amtpad');
    await check('srvinv total = lines + tax', 'select i.recnum from srvinv i where i.invttl <> (select sum(l.extttl) from srvlin l where l._idref = i._idnum) + i.taxamt');
    await check('srvinv paid = payments', 'select i.recnum from srvinv i where i.amtpad <> (select coalesce(sum(p.amount), 0) from srvpmt p where p.invrec = i.recnum)');
    const [setup] = await rows<{ apcact: number; arcact: number }>('select apcact, arcact from lgrstp');
    const control = async (account: number) => {
      const [r] = await rows<{ d: unknown; c: unknown }>('select sum(dbtamt) as d, sum(crdamt) as c from lgtnln where lgract = ?', [account]);
      return dec(r!.d, 2).minus(dec(r!.c, 2));
    };
    const [ap] = await rows<{ b: unknown }>('select sum(invbal) as b from acpinv');
    assert.ok((await control(setup!.apcact)).negated().equals(dec(ap!.b, 2)), 'AP control account = open payable balances');
    const [ar] = await rows<{ b: unknown }>('select sum(invbal) as b from acrinv');
    assert.ok((await control(setup!.arcact)).equals(dec(ar!.b, 2)), 'AR control account = open receivable balances');
  });

  test('bank transactions equal the cash accounts, and reconciliations foot', async () => {
    const banks = await rows<{ recnum: number; lgract: number }>('select recnum, lgract from bnkact');
    for (const b of banks) {
      const [t] = await rows<{ d: unknown; w: unknown }>('select sum(depamt) as d, sum(wdramt) as w from bnktrn where bnkact = ? and postyr = 2026', [b.recnum]);
      const [l] = await rows<{ d: unknown; c: unknown }>('select sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l join lgrtrn t on t._idnum = l._idref where l.lgract = ? and t.postyr = 2026', [b.lgract]);
      assert.ok(dec(t!.d, 2).minus(dec(t!.w, 2)).equals(dec(l!.d, 2).minus(dec(l!.c, 2))), `bank ${b.recnum}: transactions = ledger activity of ${b.lgract}`);
    }
    const bad = await rows('select recnum from bnkrec where stmbal <> begbal + clrdep - clrpmt or dffrnc <> 0');
    assert.deepEqual(bad, []);
    const lines = await rows('select r.recnum from bnkrec r where r.clrdep - r.clrpmt <> (select sum(l.amount) from bkrcln l where l._idref = r._idnum)');
    assert.deepEqual(lines, []);
  });

  test('codes and numbers refer to records that exist', async () => {
    const checks: Array<[string, string]> = [
      ['job cost phase', 'select count(*) as n from jobcst j where j.phsnum is not null and not exists (select 1 from jobphs p where p.jobnum = j.jobnum and p.phsnum = j.phsnum)'],
      ['job cost code', 'select count(*) as n from jobcst j where not exists (select 1 from cstcde c where c.cstcde = j.cstcde)'],
      ['job cost type', 'select count(*) as n from jobcst j where not exists (select 1 from csttyp t where t.recnum = j.csttyp)'],
      ['job cost source', 'select count(*) as n from jobcst j where not exists (select 1 from source s where s.recnum = j.srcnum)'],
      ['job cost employee', 'select count(*) as n from jobcst j where j.empnum is not null and not exists (select 1 from employ e where e.recnum = j.empnum)'],
      ['job cost equipment', 'select count(*) as n from jobcst j where j.eqpnum is not null and not exists (select 1 from eqpmnt e where e.recnum = j.eqpnum)'],
      ['invoice line account', 'select count(*) as n from arivln l where l.lgract is not null and not exists (select 1 from lgract a where a.recnum = l.lgract)'],
      ['job client', 'select count(*) as n from actrec j where j.clnnum is not null and not exists (select 1 from reccln c where c.recnum = j.clnnum)'],
      ['payroll employee', 'select count(*) as n from payrec p where not exists (select 1 from employ e where e.recnum = p.empnum)'],
      ['stock location', 'select count(*) as n from invqty q where not exists (select 1 from invloc l where l.recnum = q.locnum)'],
      ['setup control accounts', 'select count(*) as n from lgrstp s where not exists (select 1 from lgract a where a.recnum = s.apcact) or not exists (select 1 from lgract a where a.recnum = s.arcact)'],
    ];
    for (const [what, sql] of checks) {
      const [r] = await rows<{ n: number }>(sql);
      assert.equal(Number(r!.n), 0, what);
    }
    const [dup] = await rows<{ n: number }>('select count(*) as n from (select trnnum from lgrtrn group by trnnum having count(*) > 1) d');
    assert.equal(Number(dup!.n), 0, 'journal numbers are unique');
  });

  test('money is exact: decimals stored at their scale', async () => {
    if (db.engine !== 'sqlite') return;
    // On SQLite decimals are scaled integers: a stored fraction would mean a float slipped in.
    const [r] = await rows<{ n: number }>("select count(*) as n from lgtnln where typeof(dbtamt) <> 'integer' or typeof(crdamt) <> 'integer'");
    assert.equal(Number(r!.n), 0);
    const [c] = await rows<{ n: number }>("select count(*) as n from jobcst where typeof(cstamt) <> 'integer' or typeof(cstcde) <> 'integer'");
    assert.equal(Number(c!.n), 0);
  });

  test('deterministic: a second seed of a fresh database gives identical rows (and bulk-load mode restores every index)', async () => {
    const other = await createTestKnex();
    const indexes = async (k: Knex) =>
      db.engine === 'sqlite'
        ? ((await k.raw("select name, sql from sqlite_master where type = 'index' order by name")) as unknown[])
        : ((await k.raw('select indexname, indexdef from pg_indexes where schemaname = current_schema() order by indexname')).rows as unknown[]);
    try {
      // The second seed drops the secondary indexes while loading and builds them again.
      await seedDemoCompany(other.knex, { scale: 1, dropIndexes: true });
      assert.deepEqual(await indexes(other.knex), await indexes(knex), 'the same indexes as the migrations made');
      for (const table of ['lgract', 'employ', 'tkfprt', 'lgrtrn', 'jobcst', 'invqty', 'acpinv', 'payrec']) {
        const a = await knex(table).select('*').orderBy('recnum');
        const b = await other.knex(table).select('*').orderBy('recnum');
        assert.equal(a.length, b.length, `${table}: row count`);
        assert.deepEqual(b, a, `${table}: identical rows`);
      }
    } finally {
      await other.destroy();
    }
  });
});
