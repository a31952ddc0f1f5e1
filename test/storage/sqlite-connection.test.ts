/**
 * What every SQLite connection of the service is set up with (src/storage/database.ts afterCreate):
 * WAL, foreign keys, a busy timeout, and a 4 MB page cache instead of better-sqlite3's 16 MB, which
 * a scan of a large table filled and held for the life of the process; and how a write transaction
 * takes the write lock beside another connection (on a timer, not in SQLite’s busy handler).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, parseDatabaseUrl, SQLITE_BUSY_TIMEOUT_MS } from '../../src/storage/database';

test('a SQLite connection: WAL, foreign keys on, busy timeout 5 s, page cache 4 MB', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-conn-'));
  const knex = openDatabase(parseDatabaseUrl(`sqlite://${path.join(dir, 'c.sqlite')}`));
  try {
    const pragma = async (name: string) => Object.values(((await knex.raw(`pragma ${name}`)) as Array<Record<string, unknown>>)[0]!)[0];
    assert.equal(await pragma('journal_mode'), 'wal');
    assert.equal(await pragma('foreign_keys'), 1);
    assert.equal(await pragma('busy_timeout'), 5000);
    assert.equal(await pragma('cache_size'), -4096, 'KiB (negative), not better-sqlite3’s -16000');
  } finally {
    await knex.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a snapshot read and knex share one prepared statement per SQL text: each still gets row objects', async () => {
  // The query engine reads rows as arrays (query-dialect-sqlite.ts) from the same statement object knex runs
  // (database.ts reuses one per SQL text); array mode must not leak into knex's results.
  const { queryDialectFor } = await import('../../src/storage/dialect');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-conn-'));
  const knex = openDatabase(parseDatabaseUrl(`sqlite://${path.join(dir, 'c.sqlite')}`));
  try {
    await knex.schema.createTable('t', (t) => {
      t.integer('id').primary();
      t.string('note');
    });
    await knex('t').insert([{ id: 1, note: 'one' }, { id: 2, note: 'two' }]);
    const query = () => knex('t').select('id', 'note').where('id', '>', 0).orderBy('id');
    const viaSnapshot = await queryDialectFor('sqlite').readSnapshot(knex, (reader) => reader.all(query()));
    assert.deepEqual(viaSnapshot, [{ id: 1, note: 'one' }, { id: 2, note: 'two' }]);
    assert.deepEqual(await query(), [{ id: 1, note: 'one' }, { id: 2, note: 'two' }], 'knex, same SQL text after the snapshot read');
    assert.deepEqual(await queryDialectFor('sqlite').readSnapshot(knex, (reader) => reader.all(query())), viaSnapshot);
  } finally {
    await knex.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/** Two services (two connections) on one SQLite file, with a table to write to. */
async function twoConnections(): Promise<{ a: ReturnType<typeof openDatabase>; b: ReturnType<typeof openDatabase>; done: () => Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-lock-'));
  const url = `sqlite://${path.join(dir, 'l.sqlite')}`;
  const a = openDatabase(parseDatabaseUrl(url));
  await a.schema.createTable('t', (t) => {
    t.integer('id').primary();
  });
  const b = openDatabase(parseDatabaseUrl(url));
  return {
    a,
    b,
    done: async () => {
      await Promise.all([a.destroy(), b.destroy()]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a write transaction waits for another connection’s write lock on a timer, not in SQLite’s busy handler: the event loop runs meanwhile', { timeout: 20_000 }, async () => {
  // Left to the busy handler, B's BEGIN IMMEDIATE would sleep on this thread: A's timer (its
  // COMMIT) could not fire, B would fail with SQLITE_BUSY after 5 s and A commit only then.
  const { a, b, done } = await twoConnections();
  try {
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 5);
    const started = Date.now();
    let aCommittedAt = 0;
    const holder = a.transaction(async (trx) => {
      await trx('t').insert({ id: 1 });
      await sleep(300);
    }).then(() => (aCommittedAt = Date.now() - started));
    await sleep(30);
    const ticksBefore = ticks;
    await b.transaction(async (trx) => {
      await trx('t').insert({ id: 2 });
    });
    const bDoneAt = Date.now() - started;
    clearInterval(ticker);
    await holder;
    assert.ok(aCommittedAt > 0 && aCommittedAt < 1500, `A committed after its 300 ms, not after B gave up (${aCommittedAt} ms)`);
    assert.ok(bDoneAt >= aCommittedAt, `B wrote only once A had committed (${bDoneAt} ms, A ${aCommittedAt} ms)`);
    // About 54 ticks on an idle machine, 0 when the wait blocks the thread; a loaded CI machine delays timers.
    assert.ok(ticks - ticksBefore >= 10, `timers ran while B waited (${ticks - ticksBefore} ticks of 5 ms)`);
    assert.deepEqual((await a('t').select('id').orderBy('id')).map((r) => r.id), [1, 2]);
    const timeout = Object.values(((await b.raw('pragma busy_timeout')) as Array<Record<string, unknown>>)[0]!)[0];
    assert.equal(timeout, SQLITE_BUSY_TIMEOUT_MS, 'the busy timeout of other statements is back after the BEGIN');
  } finally {
    await done();
  }
});

test('a write transaction that cannot get the write lock within the busy timeout fails with SQLITE_BUSY and writes nothing', { timeout: 20_000 }, async () => {
  const { a, b, done } = await twoConnections();
  let bGaveUp!: () => void;
  const gaveUp = new Promise<void>((resolve) => (bGaveUp = resolve));
  try {
    const holder = a.transaction(async (trx) => {
      await trx('t').insert({ id: 1 });
      // Until B has given up (however late timers run on a loaded machine), not a fixed time.
      await gaveUp;
    });
    await sleep(30);
    const started = Date.now();
    await assert.rejects(
      b.transaction(async (trx) => {
        await trx('t').insert({ id: 2 });
      }),
      (err: { code?: string }) => String(err.code).startsWith('SQLITE_BUSY'),
    );
    const waited = Date.now() - started;
    bGaveUp();
    assert.ok(waited >= SQLITE_BUSY_TIMEOUT_MS - 100 && waited < SQLITE_BUSY_TIMEOUT_MS + 1_500, `gave up after the busy timeout (${waited} ms)`);
    await holder;
    assert.deepEqual((await a('t').select('id')).map((r) => r.id), [1]);
  } finally {
    bGaveUp();
    await done();
  }
});

test('opened without a logger (the command-line tools), knex warnings go to stderr, never into stdout where a tool prints its result', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-conn-'));
  const knex = openDatabase(parseDatabaseUrl(`sqlite://${path.join(dir, 'c.sqlite')}`));
  const out: string[] = [];
  const err: string[] = [];
  const [stdoutWrite, stderrWrite] = [process.stdout.write, process.stderr.write];
  try {
    process.stdout.write = ((chunk: string) => out.push(String(chunk)) > 0) as typeof process.stdout.write;
    process.stderr.write = ((chunk: string) => err.push(String(chunk)) > 0) as typeof process.stderr.write;
    (knex.client as unknown as { logger: { warn(m: string): void } }).logger.warn('probe: the pool is probably full');
  } finally {
    process.stdout.write = stdoutWrite;
    process.stderr.write = stderrWrite;
    await knex.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(out, []);
  assert.equal(err.join(''), 'database driver warning: probe: the pool is probably full\n');
});
