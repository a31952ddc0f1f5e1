/**
 * The invariants a posting must keep, checked from SQL after a write (the same SQL as
 * test/seed-invariants.test.ts): every journal balances, ledger balances equal the journal lines,
 * stock on hand equals the sum of its movements (and the inventory accounts their values), and
 * job costs equal the job-coded direct-expense lines of the journals that created them.
 */
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { Dec } from '../../src/storage/decimal';
import { dialectFor, engineOf } from '../../src/storage/dialect';

const key = (...parts: unknown[]) => parts.map((p) => (p === null || p === undefined ? '' : String(p))).join('|');

function assertSameAmounts(actual: Map<string, Dec>, expected: Map<string, Dec>, what: string): void {
  const diffs: string[] = [];
  for (const k of new Set([...actual.keys(), ...expected.keys()])) {
    const a = actual.get(k) ?? new Dec(0);
    const e = expected.get(k) ?? new Dec(0);
    if (!a.equals(e)) diffs.push(`${k}: ${a.toFixed()} != ${e.toFixed()}`);
  }
  assert.equal(diffs.length, 0, `${what}: ${diffs.length} differences, e.g. ${diffs.slice(0, 5).join('; ')}`);
}

export async function assertBooksInvariants(knex: Knex): Promise<void> {
  const dialect = dialectFor(engineOf(knex));
  const dec = (raw: unknown, scale: number) => dialect.decodeDecimal(raw, scale) ?? new Dec(0);
  const rows = async <T = Record<string, any>>(sql: string): Promise<T[]> => {
    const result = await knex.raw(sql);
    return (Array.isArray(result) ? result : result.rows) as T[];
  };

  // Books balance: per journal, and the balances equal the lines.
  const unbalanced = await rows(
    `select t.recnum from lgrtrn t join lgtnln l on l._idref = t._idnum
      group by t.recnum, t.dbttot, t.crdtot
     having sum(l.dbtamt) <> sum(l.crdamt) or sum(l.dbtamt) <> t.dbttot or sum(l.crdamt) <> t.crdtot`,
  );
  assert.deepEqual(unbalanced, [], 'every journal balances');
  const lines = await rows<{ lgract: number; postyr: number; actprd: number; d: unknown; c: unknown }>(
    `select l.lgract, t.postyr, t.actprd, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l join lgrtrn t on t._idnum = l._idref group by l.lgract, t.postyr, t.actprd`,
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

  // Stock: on hand = the sum of its movements; never negative; available within on hand; the last
  // movement's quantity after = on hand; inventory accounts = the values of their movements.
  const qty = await rows<{ prtnum: number; locnum: number; qtyohn: unknown }>('select prtnum, locnum, qtyohn from invqty');
  const moves = await rows<{ prtnum: number; locnum: number; q: unknown }>('select prtnum, locnum, sum(hstqty) as q from invhst group by prtnum, locnum');
  assertSameAmounts(new Map(qty.map((r) => [key(r.prtnum, r.locnum), dec(r.qtyohn, 4)])), new Map(moves.map((r) => [key(r.prtnum, r.locnum), dec(r.q, 4)])), 'invqty.qtyohn vs invhst');
  const [negative] = await rows<{ n: number }>('select count(*) as n from invqty where qtyohn < 0 or qtyavl < 0 or qtyavl > qtyohn');
  assert.equal(Number(negative!.n), 0, 'no negative stock; available within on hand');
  const [lastBad] = await rows<{ n: number }>(
    `select count(*) as n from invqty q join invhst h on h.prtnum = q.prtnum and h.locnum = q.locnum
      where h.recnum = (select max(h2.recnum) from invhst h2 where h2.prtnum = q.prtnum and h2.locnum = q.locnum) and h.balqty <> q.qtyohn`,
  );
  assert.equal(Number(lastBad!.n), 0, 'invhst.balqty of the last movement = on hand');
  const values = await rows<{ lgract: number; v: unknown }>('select l.lgract, sum(h.extcst) as v from invhst h join invloc l on l.recnum = h.locnum group by l.lgract');
  const ledger = await rows<{ lgract: number; d: unknown; c: unknown }>(
    'select l.lgract, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l where l.lgract in (select lgract from invloc) group by l.lgract',
  );
  assertSameAmounts(new Map(values.map((v) => [key(v.lgract), dec(v.v, 2)])), new Map(ledger.map((l) => [key(l.lgract), dec(l.d, 2).minus(dec(l.c, 2))])), 'inventory accounts vs movement values');

  // Job costs = the job-coded direct-expense lines, per job and period.
  const byJob = await rows<{ jobnum: number; actprd: number; postyr: number; amt: unknown }>('select jobnum, actprd, postyr, sum(cstamt) as amt from jobcst group by jobnum, actprd, postyr');
  const glByJob = await rows<{ jobnum: number; actprd: number; postyr: number; d: unknown; c: unknown }>(
    `select l.jobnum, t.actprd, t.postyr, sum(l.dbtamt) as d, sum(l.crdamt) as c from lgtnln l join lgrtrn t on t._idnum = l._idref join lgract a on a.recnum = l.lgract
      where a.acttyp = 9 and l.jobnum is not null group by l.jobnum, t.actprd, t.postyr`,
  );
  assertSameAmounts(
    new Map(byJob.map((j) => [key(j.jobnum, j.actprd, j.postyr), dec(j.amt, 2)])),
    new Map(glByJob.map((j) => [key(j.jobnum, j.actprd, j.postyr), dec(j.d, 2).minus(dec(j.c, 2))])),
    'job costs vs ledger per job and period',
  );
  const [consumed] = await rows<{ n: number }>('select count(*) as n from invcsm c join jobcst j on j.recnum = c.jcsrec where c.extcst <> j.cstamt or c.jobnum <> j.jobnum');
  assert.equal(Number(consumed!.n), 0, 'inventory consumed = its job cost');
}
