/**
 * The start of the oldest transaction still writing (src/storage/open-writes.ts), which no
 * change-event detection window ends after (docs/decisions/0466): on PostgreSQL what counts as
 * writing, and what the service sees of another role's transaction without pg_read_all_stats;
 * on SQL Server (not run here) the statement it sends and its fallback without VIEW SERVER STATE.
 * test/events/events-late-commits.test.ts checks detection through HTTP on both engines.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import pino from 'pino';
import pg from 'pg';
import { startTestApp, TEST_ENGINE, type TestApp } from '../support/app';
import { MSSQL_OPEN_WRITES_SQL, openWritesFor } from '../../src/storage/open-writes';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => {
  await t.close();
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const ONLY_POSTGRES = TEST_ENGINE !== 'postgres' && 'PostgreSQL only: SQLite has one writer at a time (the bound is read under the write lock) and no roles';

/** A session of its own on the test's database (PostgreSQL). */
async function session(url = t.services.config.databaseUrl): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

test('no other transaction writing: the bound is the clock read before the look', async () => {
  const open = openWritesFor(t.knex, t.engine, t.services.logger);
  const at = new Date('2031-01-01T00:00:00.000Z');
  assert.deepEqual(await open.safeUpperBound(() => at), at);
});

test('PostgreSQL: a transaction counts from its first write lock, a row written or a table locked for writing; a reader never', { skip: ONLY_POSTGRES }, async () => {
  const open = openWritesFor(t.knex, t.engine, t.services.logger);
  const reader = await session();
  const locker = await session();
  const writer = await session();
  try {
    await reader.query('begin');
    await reader.query('select count(*) from pchord');
    await sleep(300);
    let now = new Date();
    assert.ok((await open.safeUpperBound(() => now))!.getTime() === now.getTime(), 'a reader is not waited for');

    // LOCK TABLE takes no transaction id: the lock says the transaction is about to write.
    await locker.query('begin');
    const lockedAt = Date.now();
    await locker.query('lock table lgrtrn in share row exclusive mode');
    await sleep(300);
    now = new Date();
    let bound = (await open.safeUpperBound(() => now))!;
    assert.ok(bound.getTime() <= lockedAt && bound.getTime() > lockedAt - 1000, `the locking transaction's start (${bound.toISOString()})`);
    await locker.query('commit');

    await writer.query('begin');
    const writtenAt = Date.now();
    await writer.query("update pchord set updusr = 'JSMITH' where recnum = (select min(recnum) from pchord)");
    await sleep(300);
    now = new Date();
    bound = (await open.safeUpperBound(() => now))!;
    assert.ok(bound.getTime() <= writtenAt && bound.getTime() > writtenAt - 1000, `the writing transaction's start (${bound.toISOString()})`);
    await writer.query('commit');
    now = new Date();
    assert.equal((await open.safeUpperBound(() => now))!.getTime(), now.getTime(), 'nothing to wait for once it committed');
  } finally {
    for (const c of [reader, locker, writer]) await c.end();
  }
});

test("PostgreSQL without pg_read_all_stats: another role's writing transaction is unknown at the first look, then dated at the previous look; one warning", { skip: ONLY_POSTGRES }, async () => {
  const role = `ais_low_${randomUUID().slice(0, 8)}`;
  await t.knex.raw(`create role "${role}" login password 'low'`);
  const url = new URL(t.services.config.databaseUrl);
  url.username = role;
  url.password = 'low';
  const low: Knex = knexFactory({ client: 'pg', connection: url.toString(), pool: { min: 0, max: 1 } });
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const writer = await session();
  try {
    const open = openWritesFor(low, 'postgres', logger);
    let now = new Date();
    assert.equal((await open.safeUpperBound(() => now))!.getTime(), now.getTime(), 'nothing open');
    const previousLook = now;
    await writer.query('begin');
    await writer.query("update pchord set updusr = 'JSMITH' where recnum = (select min(recnum) from pchord)");
    // Its start is hidden from this role, its transaction id is not: it began after the previous look.
    now = new Date();
    assert.equal((await open.safeUpperBound(() => now))!.getTime(), previousLook.getTime());
    now = new Date();
    assert.equal((await open.safeUpperBound(() => now))!.getTime(), previousLook.getTime(), 'still the same transaction');
    // Another process's first look cannot date it, nor its later looks while the same transaction stays open.
    const fresh = openWritesFor(low, 'postgres', logger);
    assert.equal(await fresh.safeUpperBound(() => new Date()), null);
    assert.equal(await fresh.safeUpperBound(() => new Date()), null);
    await writer.query('commit');
    now = new Date();
    assert.equal((await open.safeUpperBound(() => now))!.getTime(), now.getTime(), 'nothing to wait for once it committed');
    assert.ok(await fresh.safeUpperBound(() => new Date()));
    const warnings = lines.filter((l) => /pg_read_all_stats/.test(String(l.msg)));
    assert.equal(warnings.length, 2, 'one warning per process (two here)');
  } finally {
    await writer.end();
    await low.destroy();
    await t.knex.raw(`drop role "${role}"`);
  }
});

/** A knex stand-in for SQL Server: answers `raw` with `answer` and records what was sent. */
function fakeMssql(answer: () => Promise<unknown>): { knex: Knex; sent: string[] } {
  const sent: string[] = [];
  const knex = { raw: (sql: string) => (sent.push(sql), answer()) } as unknown as Knex;
  return { knex, sent };
}

test('SQL Server: the oldest transaction holding a lock in the database, from the transaction views; the age is taken off the clock', async () => {
  const compiled = knexFactory({ client: 'mssql' });
  try {
    // A statement without bindings: knex sends it as written.
    assert.equal(compiled.raw(MSSQL_OPEN_WRITES_SQL).toSQL().sql, MSSQL_OPEN_WRITES_SQL);
  } finally {
    await compiled.destroy();
  }
  for (const part of ['sys.dm_tran_active_transactions', 'sys.dm_tran_session_transactions', 'sys.dm_tran_locks', 'DB_ID()', '@@SPID', "resource_type <> 'DATABASE'", 'DATEDIFF_BIG(MILLISECOND, t.transaction_begin_time, SYSDATETIME())']) {
    assert.ok(MSSQL_OPEN_WRITES_SQL.includes(part), part);
  }
  const at = new Date('2031-01-01T00:00:10.000Z');
  const aged = fakeMssql(async () => [{ age_ms: '4000' }]);
  assert.deepEqual(await openWritesFor(aged.knex, 'mssql', pino({ level: 'silent' })).safeUpperBound(() => at), new Date('2031-01-01T00:00:06.000Z'));
  assert.deepEqual(aged.sent, [MSSQL_OPEN_WRITES_SQL]);
  const none = fakeMssql(async () => [{ age_ms: null }]);
  assert.deepEqual(await openWritesFor(none.knex, 'mssql', pino({ level: 'silent' })).safeUpperBound(() => at), at);
});

test('SQL Server without VIEW SERVER STATE: the clock (the lag alone), one warning, the views not asked again; another failure is thrown', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const denied = Object.assign(new Error("VIEW SERVER STATE permission was denied on object 'server', database 'master'."), { number: 300 });
  const refused = fakeMssql(() => Promise.reject(denied));
  const open = openWritesFor(refused.knex, 'mssql', logger);
  const at = new Date('2031-01-01T00:00:10.000Z');
  assert.deepEqual(await open.safeUpperBound(() => at), at);
  assert.deepEqual(await open.safeUpperBound(() => at), at);
  assert.equal(refused.sent.length, 1, 'asked once');
  assert.equal(lines.filter((l) => /VIEW SERVER STATE/.test(String(l.msg))).length, 1);
  const down = fakeMssql(() => Promise.reject(Object.assign(new Error('Connection lost'), { code: 'ESOCKET' })));
  await assert.rejects(openWritesFor(down.knex, 'mssql', logger).safeUpperBound(() => at), /Connection lost/);
});

test('a row is stamped when its transaction writes, not when it began: PostgreSQL one stamp per transaction, SQLite per statement', async () => {
  const po = await t.knex('pchord').orderBy('recnum').limit(2).select('recnum');
  const stampOf = async (recnum: unknown) => {
    const row = await t.knex('pchord').where({ recnum }).first('upddte');
    return new Date(t.engine === 'sqlite' ? `${String(row.upddte).replace(' ', 'T')}Z` : row.upddte).getTime();
  };
  if (t.engine === 'postgres') {
    const other = await session();
    try {
      await other.query('begin');
      const began = Date.now();
      await other.query('select count(*) from pchord');
      await sleep(600);
      const writing = Date.now();
      await other.query("update pchord set updusr = 'JSMITH' where recnum = $1", [po[0].recnum]);
      await sleep(200);
      await other.query("update pchord set updusr = 'MARY' where recnum = $1", [po[1].recnum]);
      await other.query('commit');
      const [first, second] = [await stampOf(po[0].recnum), await stampOf(po[1].recnum)];
      assert.ok(first >= writing - 50 && first > began + 500, `stamped at the first write (${first - began} ms after BEGIN)`);
      assert.equal(second, first, 'one stamp for the whole transaction');
      // A new transaction of the same session: a new stamp.
      await other.query("update pchord set updusr = 'JSMITH' where recnum = $1", [po[1].recnum]);
      assert.ok((await stampOf(po[1].recnum)) > first);
    } finally {
      await other.end();
    }
    return;
  }
  // SQLite: CURRENT_TIMESTAMP (to the second) of the writing statement, taken under the write lock.
  const { default: Database } = await import('better-sqlite3');
  const other = new Database((t.knex.client.config.connection as { filename: string }).filename);
  try {
    other.exec('BEGIN');
    const began = Date.now();
    other.prepare('select count(*) from pchord').get();
    await sleep(1100);
    other.prepare("update pchord set updusr = 'JSMITH' where recnum = ?").run(po[0].recnum);
    other.exec('COMMIT');
    assert.ok((await stampOf(po[0].recnum)) >= Math.floor(began / 1000) * 1000 + 1000, 'stamped at the write, a second after BEGIN');
  } finally {
    other.close();
  }
});

test("PostgreSQL: a stamp is the moment of the first write whatever the session's DateStyle and TimeZone, and in a DO block that waits before it writes", { skip: ONLY_POSTGRES }, async () => {
  const [{ recnum }] = await t.knex('pchord').orderBy('recnum').limit(1).select('recnum');
  const stampOf = async () => new Date((await t.knex('pchord').where({ recnum }).first('upddte')).upddte).getTime();
  const other = await session();
  try {
    // Settings whose own text form of a timestamp reads back as another zone, or not at all.
    for (const [dateStyle, zone] of [
      ['SQL, YMD', 'UTC'],
      ['Postgres, MDY', 'Asia/Kolkata'],
      ['SQL, DMY', 'Asia/Manila'],
      ['Postgres, MDY', 'Pacific/Pago_Pago'],
      ['German', 'Asia/Shanghai'],
    ] as const) {
      await other.query(`set datestyle = '${dateStyle}'`);
      await other.query(`set timezone = '${zone}'`);
      const sent = Date.now();
      await other.query("update pchord set updusr = 'JSMITH' where recnum = $1", [recnum]);
      const done = Date.now();
      const stamp = await stampOf();
      // The database runs on this machine: its clock is the test's.
      assert.ok(stamp >= sent - 1000 && stamp <= done + 1000, `${dateStyle} / ${zone}: stamped ${stamp - sent} ms after the update was sent`);
    }
    await other.query('reset datestyle');
    await other.query('reset timezone');
    const began = Date.now();
    await other.query(`do $$ begin perform pg_sleep(0.6); update pchord set updusr = 'MARY' where recnum = ${Number(recnum)}; end $$`);
    assert.ok((await stampOf()) >= began + 500, 'a statement that waits before it writes is stamped at its write, not at its start');
  } finally {
    await other.end();
  }
});

test('a transaction that holds detection back past HELD_BACK_WARN_MS is named in a warning, at most once a minute', async () => {
  const { Detector, HELD_BACK_WARN_MS } = await import('../../src/events/detector');
  const warnings: Array<Record<string, unknown>> = [];
  const logger = { warn: (o: Record<string, unknown>) => warnings.push(o), info() {}, debug() {}, error() {} } as unknown as pino.Logger;
  let now = Date.parse('2026-11-27T10:00:00Z');
  const writerAgeMs = HELD_BACK_WARN_MS + 30_000;
  const detector = new Detector({
    store: undefined as never,
    keys: undefined as never,
    logger,
    clock: () => new Date(now),
    lagMs: 1000,
    openWrites: { safeUpperBound: async (clock) => new Date(clock().getTime() - writerAgeMs), oldestWriter: () => ({ pid: 4242, ageMs: writerAgeMs }) },
    leaseMs: 10_000,
    holder: 'test',
  });
  const look = async () => (detector as unknown as { warnIfHeldBack(at: Date, upper: Date | null): void }).warnIfHeldBack(new Date(now), await detector.upperBound(new Date(now)));
  await look();
  assert.equal(warnings.length, 1, 'warned');
  assert.equal(warnings[0]!.writerPid, 4242);
  assert.equal(warnings[0]!.heldBackSeconds, Math.round(writerAgeMs / 1000));
  now += 30_000;
  await look();
  assert.equal(warnings.length, 1, 'not again within the minute');
  now += 31_000;
  await look();
  assert.equal(warnings.length, 2, 'again after a minute');
});
