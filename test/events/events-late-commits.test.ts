/**
 * A change whose transaction commits later than EVENT_DETECTION_LAG_SECONDS after its stamp is
 * still sent, once (the spec's Events rules 1 and 10; docs/decisions/0466): a detection window never
 * ends after the start of the oldest transaction still writing (src/storage/open-writes.ts). Here
 * with a lag of 1 s and a transaction the test holds open past it: the accounting system's own
 * long transaction, and an API posting that answered 504 and committed afterwards. And the other
 * side: idle sessions and read-only transactions never hold detection back.
 *
 * Each test has a database of its own; detection runs on the real clock (the bound is measured
 * by the database), deliveries go to a stub sender, the feed is read through HTTP.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import type { TestApp } from '../support/app';
import { freshEventsApps, exampleBody, type FreshEvents } from '../support/events';
import type { Config } from '../../src/config';

const LAG_SECONDS = 1;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

type Fresh = FreshEvents;
const startFresh = freshEventsApps();
const fresh = (config: Partial<Config> = {}): Promise<Fresh> => startFresh({ config, lagSeconds: LAG_SECONDS });

/** An endpoint and a feed for `eventTypes`, through HTTP. */
async function subscribe(f: Fresh, eventTypes: string[]): Promise<void> {
  const endpoint = await f.t.post('/api/v3/webhook-endpoints', { url: 'https://hooks.example.com/accounting', eventTypes }, f.t.adminKey);
  assert.equal(endpoint.status, 200, endpoint.text);
  const feed = await f.t.post('/api/v3/event-feeds', { eventTypes }, f.t.adminKey);
  assert.equal(feed.status, 200, feed.text);
}

/** One detection cycle on the real clock, `aheadMs` ahead of it (past the lag, for what committed). */
async function detect(f: Fresh, aheadMs = 0) {
  f.h.clock.set(new Date(Date.now() + aheadMs));
  return f.h.events.detectNow();
}

/** The whole event feed through HTTP. */
async function feedEvents(f: Fresh): Promise<any[]> {
  const res = await f.t.post('/api/v3/events/query', { page: { pageSize: 100 } });
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

/**
 * A session of its own on the test's database, as another program (the accounting system) holds
 * one: `sql` with `?` placeholders on both engines. `commitAfter` commits on its own after `ms`:
 * on SQLite the session runs in a thread of its own, since this process's connection waits for the
 * write lock in SQLite's busy handler, which blocks this thread (its event loop) meanwhile.
 */
interface Session {
  run(sql: string, bindings?: unknown[]): Promise<Array<Record<string, unknown>>>;
  commitAfter(ms: number): Promise<void>;
  close(): Promise<void>;
}

const SQLITE_SESSION = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require('better-sqlite3');
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
parentPort.on('message', ({ id, op, sql, bindings, ms }) => {
  const reply = (msg) => parentPort.postMessage({ id, ...msg });
  const attempt = (fn) => { try { reply({ rows: fn() }); } catch (err) { reply({ error: String(err && err.message) }); } };
  if (op === 'run') attempt(() => { const stmt = db.prepare(sql); return stmt.reader ? stmt.all(...bindings) : (stmt.run(...bindings), []); });
  else if (op === 'commitAfter') setTimeout(() => attempt(() => (db.exec('COMMIT'), [])), ms);
  else if (op === 'close') attempt(() => { if (db.inTransaction) db.exec('ROLLBACK'); db.close(); return []; });
});
`;

async function openSession(t: TestApp): Promise<Session> {
  if (t.engine === 'sqlite') {
    const worker = new Worker(SQLITE_SESSION, { eval: true, workerData: { file: (t.knex.client.config.connection as { filename: string }).filename } });
    const waiting = new Map<number, { resolve: (rows: any[]) => void; reject: (err: Error) => void }>();
    worker.on('message', (m: { id: number; rows?: any[]; error?: string }) => {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.error !== undefined) w?.reject(new Error(m.error));
      else w?.resolve(m.rows ?? []);
    });
    let next = 0;
    const ask = (message: Record<string, unknown>) =>
      new Promise<any[]>((resolve, reject) => {
        const id = ++next;
        waiting.set(id, { resolve, reject });
        worker.postMessage({ id, ...message });
      });
    return {
      run: (sql, bindings = []) => ask({ op: 'run', sql, bindings }),
      commitAfter: async (ms) => void (await ask({ op: 'commitAfter', ms })),
      async close() {
        await ask({ op: 'close' });
        await worker.terminate();
      },
    };
  }
  const client = new pg.Client({ connectionString: t.services.config.databaseUrl });
  await client.connect();
  const run = async (sql: string, bindings: unknown[] = []) => {
    let n = 0;
    return (await client.query(sql.replace(/\?/g, () => `$${++n}`), bindings)).rows;
  };
  return {
    run,
    async commitAfter(ms) {
      await sleep(ms);
      await run('COMMIT');
    },
    async close() {
      await client.end();
    },
  };
}

const BEGIN_WRITE = (t: TestApp) => (t.engine === 'sqlite' ? 'BEGIN IMMEDIATE' : 'BEGIN');

test('a change the accounting system commits after the lag, its transaction held open meanwhile, is sent once (webhook and feed)', async () => {
  const f = await fresh();
  await subscribe(f, ['purchase_order.updated']);
  const po = await f.t.knex('pchord').orderBy('_idnum').first('_idnum', 'recnum');
  const other = await openSession(f.t);
  let queuedFirst = 0;
  try {
    // The accounting system's transaction: it changes the order, then stays open past the lag.
    await other.run(BEGIN_WRITE(f.t));
    await other.run("UPDATE pchord SET dscrpt = ?, updusr = 'JSMITH' WHERE _idnum = ?", ['changed in a long transaction', po._idnum]);
    const changedAt = Date.now();
    const committed = other.commitAfter(LAG_SECONDS * 1000 + 3000);
    await sleep(LAG_SECONDS * 1000 + 400);
    // A cycle while it is open, past the lag after the stamp: by the clock alone its window covers the change.
    // SQLite: the cycle waits for the write lock (its lease, its bound), so it reads once the change committed.
    const first = await detect(f);
    queuedFirst = first.queued;
    const cursorAfterFirst = (await f.h.events.store.cursors()).get('purchase_order')!;
    await committed;
    if (f.t.engine === 'postgres') {
      assert.equal(first.queued, 0, 'nothing committed yet');
      assert.ok(cursorAfterFirst.getTime() < changedAt, `the window ended before the open transaction began (${cursorAfterFirst.toISOString()})`);
    }
  } finally {
    await other.close();
  }
  // Cycles after the commit (past the lag): the change is found once.
  const found = await detect(f, (LAG_SECONDS + 1) * 1000);
  const again = await detect(f, (LAG_SECONDS + 60) * 1000);
  assert.equal(queuedFirst + found.queued + again.queued, 1, 'queued once for the endpoint');
  const queued = await f.t.knex('whkdlv').where({ event_type: 'purchase_order.updated' }).select('payload');
  assert.equal(queued.length, 1);
  assert.equal(JSON.parse(queued[0].payload).data.record.recordNumber, Number(po.recnum));
  await f.h.events.deliverNow();
  assert.deepEqual(f.sent.map((b) => [b.type, b.data.record.recordNumber, b.data.changedBy]), [['purchase_order.updated', Number(po.recnum), 'JSMITH']]);
  const events = await feedEvents(f);
  assert.deepEqual(events.map((e) => [e.type, e.data.record.recordNumber]), [['purchase_order.updated', Number(po.recnum)]]);
});

/**
 * PostgreSQL stamps a transaction's rows when it begins to write (migration 20261127000466): with
 * the transaction's start (now()), this change fell in a window read while the transaction only
 * read, and was skipped. SQLite cannot show it: CURRENT_TIMESTAMP is the writing statement's.
 */
test('a transaction that reads past the lag before it writes: its change is sent once (stamped when it writes)', async () => {
  const f = await fresh();
  await subscribe(f, ['purchase_order.updated']);
  const po = await f.t.knex('pchord').orderBy('recnum').first('_idnum', 'recnum');
  const other = await openSession(f.t);
  try {
    // The accounting system opens a transaction and reads (a user editing the order), past the lag.
    await other.run('BEGIN');
    await other.run('SELECT COUNT(*) AS n FROM pchord');
    await sleep(LAG_SECONDS * 1000 + 400);
    // A cycle meanwhile: nothing is written yet, so nothing holds its window back.
    assert.equal((await detect(f)).queued, 0);
    const save = () => other.run("UPDATE pchord SET dscrpt = ?, updusr = 'JSMITH' WHERE _idnum = ?", ['saved after a long edit', po._idnum]);
    try {
      await save();
    } catch (err) {
      // SQLite: a transaction that read before another connection committed (the cycle's lease) may
      // not write any more (SQLITE_BUSY_SNAPSHOT); the program begins again, and stamps then.
      if (f.t.engine !== 'sqlite' || !/database is locked/.test(String(err))) throw err;
      await other.run('ROLLBACK');
      await other.run('BEGIN');
      await save();
    }
    await other.run('COMMIT');
  } finally {
    await other.close();
  }
  const found = await detect(f, (LAG_SECONDS + 1) * 1000);
  const again = await detect(f, (LAG_SECONDS + 60) * 1000);
  assert.equal(found.queued + again.queued, 1, 'queued once for the endpoint');
  await f.h.events.deliverNow();
  assert.deepEqual(f.sent.map((b) => [b.type, b.data.record.recordNumber, b.data.changedBy]), [['purchase_order.updated', Number(po.recnum), 'JSMITH']]);
  assert.deepEqual((await feedEvents(f)).map((e) => [e.type, e.data.record.recordNumber]), [['purchase_order.updated', Number(po.recnum)]]);
});

/**
 * PostgreSQL: the posting answers 504 and commits when the lock is released, its stamp older than the
 * lag by then. SQLite cannot show the loss: a posting stamps its rows after BEGIN IMMEDIATE, once the
 * holder of the write lock has committed (its request may answer 200, 503 or 504, whichever the
 * waits make it); the test checks the same outcome there.
 */
test('a posting that answered 504 and committed after the lag is sent once (webhook and feed)', async () => {
  // A short deadline: the posting answers 504 while it waits for the accounting system's lock.
  const f = await fresh({ dbDeadlineMs: 1000 });
  await subscribe(f, ['ledger_transaction.created']);
  const body = { ...exampleBody('postLedgerTransaction'), transactionNumber: 'LATE-0001' };
  const other = await openSession(f.t);
  let cursorWhileOpen: Date | undefined;
  try {
    // PostgreSQL: the desktop application locks the journal table, as the audit did; SQLite: it holds the write lock.
    await other.run(BEGIN_WRITE(f.t));
    if (f.t.engine === 'postgres') await other.run('LOCK TABLE lgrtrn IN SHARE ROW EXCLUSIVE MODE');
    const started = Date.now();
    const committed = other.commitAfter(LAG_SECONDS * 1000 + 3000);
    const answered = await f.t.post('/api/v3/ledger-transactions', body).set('Idempotency-Key', 'late-0001');
    if (f.t.engine === 'postgres') assert.equal(answered.status, 504, answered.text);
    // Past the lag after the posting's stamp, it still waits: a cycle now.
    await sleep(Math.max(0, started + LAG_SECONDS * 1000 + 600 - Date.now()));
    const first = await detect(f);
    cursorWhileOpen = (await f.h.events.store.cursors()).get('ledger_transaction')!;
    await committed;
    if (f.t.engine === 'postgres') assert.equal(first.queued, 0, 'nothing committed yet');
  } finally {
    await other.close();
  }
  // The same request again until it answers the posting (replayed when it committed late).
  let posted: any;
  for (let i = 0; i < 100; i++) {
    posted = await f.t.post('/api/v3/ledger-transactions', body).set('Idempotency-Key', 'late-0001');
    if (posted.status === 200) break;
    await sleep(100);
  }
  assert.equal(posted.status, 200, posted.text);
  const recordNumber = posted.body.ledgerTransaction.recordNumber;
  const row = await f.t.knex('lgrtrn').where({ recnum: recordNumber }).first('insdte');
  assert.ok(new Date(f.t.engine === 'sqlite' ? `${row.insdte.replace(' ', 'T')}Z` : row.insdte).getTime() > cursorWhileOpen!.getTime(), 'stamped after the window read while it was open');
  const found = await detect(f, (LAG_SECONDS + 1) * 1000);
  const again = await detect(f, (LAG_SECONDS + 60) * 1000);
  assert.equal(found.queued + again.queued, 1, 'queued once for the endpoint');
  await f.h.events.deliverNow();
  assert.deepEqual(f.sent.map((b) => [b.type, b.data.record.recordNumber]), [['ledger_transaction.created', recordNumber]]);
  const events = await feedEvents(f);
  assert.deepEqual(events.map((e) => [e.type, e.data.record.recordNumber]), [['ledger_transaction.created', recordNumber]]);
});

test('idle sessions and read-only transactions left open do not hold detection back', async () => {
  const f = await fresh();
  await subscribe(f, ['purchase_order.updated']);
  const idle = await openSession(f.t);
  const reader = await openSession(f.t);
  try {
    await idle.run('SELECT 1 AS one');
    // A transaction that read and stays open (a report, a backup), begun before the change.
    await reader.run('BEGIN');
    await reader.run('SELECT COUNT(*) AS n FROM pchord');
    await sleep(200);
    const po = await f.t.knex('pchord').orderBy('_idnum').first('_idnum', 'recnum');
    await f.t.knex('pchord').where({ _idnum: po._idnum }).update({ dscrpt: 'changed beside idle sessions', updusr: 'JSMITH' });
    // A cycle on the clock past the lag, the reader still open (older than the change): the change is
    // found now, and the window ends at the clock less the lag.
    await sleep(LAG_SECONDS * 1000 + 300);
    const before = Date.now();
    const d = await detect(f);
    assert.equal(d.queued, 1, 'the change is not held back');
    const cursor = (await f.h.events.store.cursors()).get('purchase_order')!;
    assert.ok(cursor.getTime() >= before - LAG_SECONDS * 1000, `the cursor moved to the clock less the lag (${cursor.toISOString()})`);
  } finally {
    await reader.close();
    await idle.close();
  }
});
