/**
 * The demo company's books are coherent: checked from SQL on a freshly seeded database
 * (SQLite by default; TEST_ENGINE=postgres TEST_POSTGRES_URL=postgres://... for PostgreSQL).
 * Amounts are summed by the database (exact on both engines: scaled integers on SQLite,
 * DECIMAL on PostgreSQL) and decoded through the dialect.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { CATALOG } from '../../generated/catalog';
import { seedDemoCompany, type SeedReport } from '../../db/seed';
import { Dec } from '../../src/storage/decimal';
import { dialectFor, type Dialect } from '../../src/storage/dialect';
import { createTestKnex, type TestDatabase } from '../support/db';
import {
  assertBooksInvariants,
  assertInventoryValueMatchesLedger,
  assertInvoiceBalances,
  assertJobCostsMatchLedger,
  assertJournalsBalance,
  assertLedgerBalancesMatchLines,
  assertPurchaseOrdersMatchReceipts,
  assertStockMatchesMovements,
} from '../support/invariants';

let db: TestDatabase;
let knex: Knex;
let dialect: Dialect;
let report: SeedReport;

/** Decodes a DECIMAL(p, scale) value (or a SUM of one) to an exact decimal; null is 0. */
function dec(raw: unknown, scale: number): Dec {
  return dialect.decodeDecimal(raw, scale) ?? new Dec(0);
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
    await assertJournalsBalance(knex);
  });

  test('ledger balances equal the journal lines per account, year and period', async () => {
    await assertLedgerBalancesMatchLines(knex);
  });

  test('every posted document points to its journal', async () => {
    const headers: Array<[string, string]> = [
      ['acpinv', 'true'],
      ['acppmt', 'true'],
      ['acrinv', 'true'],
      ['acrpmt', 'true'],
      // Invoiced service work orders (complete); an Open work order not complete is not posted yet.
      ['srvinv', 'status = 4 or (status = 1 and wrksts = 5)'],
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
    const [unposted] = await rows<{ n: number }>('select count(*) as n from srvinv where (status = 2 or wrksts <> 5) and lgrrec is not null');
    assert.equal(Number(unposted!.n), 0, 'work orders not invoiced post nothing');
    const [open] = await rows<{ n: number }>("select count(*) as n from srvinv where status = 1 and wrksts <> 5 and lgrrec is null and postyr = 2026 and actprd = 11");
    assert.ok(Number(open!.n) > 0, 'Open work orders wait in the open period for POST /service-invoices/post');
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
    await assertJobCostsMatchLedger(knex);
  });

  test('inventory on hand equals the sum of its movements, and the ledger its value', async () => {
    await assertStockMatchesMovements(knex);
    await assertInventoryValueMatchesLedger(knex);
  });

  test('purchase order lines: received to date = the sum of the receipts', async () => {
    await assertPurchaseOrdersMatchReceipts(knex);
  });

  test('invoice balance = total - paid, and paid = the payments applied', async () => {
    await assertInvoiceBalances(knex);
    // The seed posts every payable and receivable invoice in full to its control account.
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

  test('assertBooksInvariants passes on the seed and names the offending rows when the books are broken', async () => {
    await assertBooksInvariants(knex);
    // Unbalance one journal line and drift one stock quantity inside a rolled-back transaction.
    const line = await knex('lgtnln').where('dbtamt', '>', 0).orderBy('_idnum').first();
    const journal = await knex('lgrtrn').where({ _idnum: line._idref }).first();
    const stock = await knex('invqty').where('qtyohn', '>', 0).orderBy('recnum').first();
    const trx = await knex.transaction();
    try {
      await trx('lgtnln').where({ _idnum: line._idnum }).update({ dbtamt: dialect.encodeDecimal(dec(line.dbtamt, 2).plus('0.01'), 2) });
      await trx('invqty').where({ recnum: stock.recnum }).update({ qtyohn: dialect.encodeDecimal(dec(stock.qtyohn, 4).plus(1), 4) });
      await assert.rejects(assertBooksInvariants(trx as unknown as Knex), (err: Error) => {
        assert.match(err.message, /books invariants broken/);
        assert.match(err.message, new RegExp(`"recnum":${Number(journal.recnum)}\\b`), 'names the unbalanced journal');
        assert.match(err.message, new RegExp(`account ${Number(line.lgract)} / year ${Number(journal.postyr)} / period ${Number(journal.actprd)} debit`), 'names the ledger balance');
        assert.match(err.message, new RegExp(`part ${Number(stock.prtnum)} / location ${Number(stock.locnum)}:`), 'names the stock row');
        return true;
      });
    } finally {
      await trx.rollback();
    }
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
