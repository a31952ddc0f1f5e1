/**
 * A posting's first named lock (the journal's transaction number, the AP invoice's vendor invoice
 * number) and the duplicate-number read that follows it ride in the round trip of its BEGIN and
 * lock fence on PostgreSQL (runner.ts firstLock and firstRead, storage/named-locks.ts
 * lockAtBegin, decision 0382): each a statement of its own, the read after the lock, so it
 * sees what the lock's previous holder committed. SQLite takes no named lock at all (BEGIN IMMEDIATE
 * excludes every other writer) and runs the read on the connection right after BEGIN.
 * Observed on the statements knex sends (its `query` event sees BEGIN's text on PostgreSQL).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { FX, apInvoice, countRows, journal } from '../../support/posting-fixture';

let t: TestApp;
usePostingApp((app) => (t = app));

/** The SQL of every statement the service's knex sent while `fn` ran, from the posting's BEGIN (or first statement) to its COMMIT. */
async function postingStatements(fn: () => Promise<void>): Promise<string[]> {
  const out: string[] = [];
  const listen = (q: { sql: string }) => out.push(q.sql.replace(/\s+/g, ' '));
  t.knex.on('query', listen);
  try {
    await fn();
  } finally {
    t.knex.off('query', listen);
  }
  // Outside the posting: the number blocks, the lock store's re-read, the API key cache.
  return out.filter((sql) => !/numseq|^select \* from .mntlck.|^select \* from .apikey.|idmkey/.test(sql));
}

const cases = [
  {
    what: 'a journal',
    path: '/api/v3/ledger-transactions',
    body: (n: string) => journal(n),
    lock: (n: string) => `lgrtrn.trnnum:${n}`,
    duplicateRead: 'select "_idnum" from "lgrtrn" where "trnnum" = ',
    readNames: (n: string) => `"trnnum" = '${n}'`,
    // BEGIN + fence + lock + duplicate-number read, the header, the lines with the balances, COMMIT.
    roundTrips: 4,
    // SQLite's knex statements: the header, the lines, the balances, COMMIT (BEGIN, the fence and the read run on the connection).
    sqliteStatements: 4,
  },
  {
    what: 'an AP invoice of 3 lines',
    path: '/api/v3/ap-invoices',
    body: (n: string) => apInvoice(n, 3),
    lock: (n: string) => `acpinv:${FX.vendor.withDefaults}:${n}`,
    duplicateRead: 'select "_idnum" from "acpinv" where "vndnum" = ',
    readNames: (n: string) => `"vndnum" = ${FX.vendor.withDefaults} and "invnum" = '${n}'`,
    // BEGIN + fence + lock + duplicate read, invoice, its lines, job costs, journal header, journal lines with the balances, COMMIT.
    roundTrips: 7,
    // SQLite: invoice, lines, job costs, journal header, journal lines, balances, COMMIT.
    sqliteStatements: 7,
  },
] as const;

let n = 0;
for (const c of cases) {
  test(`${c.what}: its number's lock and then its duplicate read are statements of BEGIN's round trip (PostgreSQL); SQLite's BEGIN runs the read`, async () => {
    const post = async (number: string) => {
      const res = await t.post(c.path, c.body(number));
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['idempotency-status'], 'applied');
    };
    // Two before: the second reads the balance cells the first created, then they are known (storage/balances.ts).
    await post(`LB-${++n}`);
    await post(`LB-${++n}`);
    const number = `LB-${++n}`;
    const sent = await postingStatements(() => post(number));
    const locking = sent.filter((sql) => sql.includes('pg_advisory_xact_lock'));
    if (t.engine !== 'postgres') {
      assert.deepEqual(locking, [], 'SQLite: one writer at a time, no named lock');
      // Run on the connection by BEGIN (no knex statement): SQLite's text quotes with backticks.
      assert.ok(!sent.some((sql) => sql.startsWith(c.duplicateRead.replaceAll('"', '`'))), `the duplicate read is no knex statement:\n${sent.join('\n')}`);
      assert.equal(sent.length, c.sqliteStatements, `knex statements of the posting:\n${sent.join('\n')}`);
      return;
    }
    assert.equal(locking.length, 1, `one statement takes the lock:\n${sent.join('\n')}`);
    const begin = sent[0]!;
    assert.equal(locking[0], begin, 'the lock rides in the BEGIN round trip');
    const parts = begin.split('; ');
    assert.equal(parts[0], 'BEGIN');
    assert.match(parts[1]!, /from "mntlck" .*for share/, 'the fence');
    assert.equal(parts[2], `select pg_advisory_xact_lock(hashtextextended('${c.lock(number)}', 0))`, 'then the lock, a statement of its own');
    assert.ok(parts[3]!.startsWith(c.duplicateRead) && parts[3]!.includes(c.readNames(number)), `then the duplicate read, a later statement: ${parts[3]}`);
    assert.equal(parts.length, 4, begin);
    assert.ok(!sent.slice(1).some((sql) => sql.startsWith(c.duplicateRead)), `the duplicate read is not sent again:\n${sent.join('\n')}`);
    assert.equal(sent.length, c.roundTrips, `round trips of the posting:\n${sent.join('\n')}`);
    assert.match(sent.at(-1)!, /^COMMIT/);
  });
}

test("a transaction number with a quote and a backslash: its lock is the one other postings of the number take; the second posting's read sees the first's journal", async () => {
  const number = `LB-'\\-${++n}`;
  const held = t.engine === 'postgres' ? await t.knex.transaction() : undefined;
  try {
    // Held as storage/named-locks.ts lockNameForTransaction takes it (a bound value), on another connection.
    await held?.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`lgrtrn.trnnum:${number}`]);
    const posting = Promise.all([t.post('/api/v3/ledger-transactions', journal(number)), t.post('/api/v3/ledger-transactions', journal(number))]);
    if (held) {
      // Both postings wait for the lock held here: the same lock, the name escaped right.
      const deadline = Date.now() + 15_000;
      for (;;) {
        const waiting = (await t.knex.raw("select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted")) as { rows: Array<{ n: number }> };
        if (waiting.rows[0]!.n === 2) break;
        assert.ok(Date.now() < deadline, 'both postings wait for the lock held elsewhere');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: number }), 0, 'nothing posted while the lock is held');
      await held.rollback();
    }
    const results = await posting;
    for (const r of results) assert.equal(r.status, 200, r.text);
    assert.deepEqual(results.map((r) => r.headers['idempotency-status']).sort(), ['applied', 'replayed']);
    assert.equal(results[0]!.body.document.transactionNumber, number);
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: number }), 1);
  } finally {
    if (held && !held.isCompleted()) await held.rollback();
  }
});
