/**
 * The start-up warm-up (src/warm-up.ts): each posting engine rehearsed once in a rolled-back
 * transaction. It writes nothing (every table's row count, the numseq counters, the idempotency
 * records and the change events are as before, read through the database), it leaves this
 * process's number blocks alone (the next real posting gets the number it would have had), a
 * failure is logged and never stops the start, and the server reports ready only after the
 * part that runs before readiness (log order against the first 200 of /readyz).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { Knex } from 'knex';
import { loadConfig } from '../../src/config';
import { startServer } from '../../src/server';
import { WriteRunner } from '../../src/engines/posting/runner';
import { WRITES } from '../../src/engines/posting/writes';
import { BEFORE_READY, BEFORE_READY_OPERATIONS, warmUp, writeExamples } from '../../src/warm-up';
import { REHEARSAL_BATCH_RECORDS } from '../../src/engines/posting/context';
import { createTestDatabase, TEST_ENGINE, type TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';
import { secretsEnv } from '../support/secrets';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';

let t: TestApp;
useTestApp((app) => (t = app));

async function tables(knex: Knex): Promise<string[]> {
  const client = String(knex.client.config.client);
  const rows: Array<{ name: string }> = /sqlite/.test(client)
    ? await knex.raw(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`)
    : (await knex.raw(`select tablename as name from pg_tables where schemaname = current_schema() order by tablename`)).rows;
  return rows.map((r) => r.name);
}

/** Row count of every table, and the whole numseq table (counter values). */
async function snapshot(knex: Knex): Promise<{ counts: Record<string, number>; numseq: unknown[] }> {
  const counts: Record<string, number> = {};
  for (const name of await tables(knex)) {
    const row = await knex(name).count<{ n: number | string }[]>({ n: '*' }).first();
    counts[name] = Number(row?.n ?? 0);
  }
  const numseq = (await knex('numseq').select('name', 'next_value').orderBy('name')).map((r) => ({ name: r.name, next: Number(r.next_value) }));
  return { counts, numseq };
}

function lastOf(logs: Array<Record<string, any>>, msg: string): Record<string, any> | undefined {
  return [...logs].reverse().find((l) => l.msg === msg);
}

test('every posting engine is rehearsed on the seeded demo company and nothing is written: row counts, numseq, idempotency records, events unchanged', async () => {
  const examples = writeExamples();
  assert.equal(examples.size, WRITES.filter((w) => w.definition).length, 'an example body for every wired write');
  const tableNames = await tables(t.knex);
  for (const name of ['numseq', 'lgrtrn', 'acpinv', 'jobcst', 'lgrbal']) assert.ok(tableNames.includes(name), `table ${name} is in the snapshot`);
  // idmkey: idempotency records; whkdlv: change events queued for delivery.
  for (const name of ['idmkey', 'whkdlv']) assert.ok(tableNames.includes(name), `table ${name} is in the snapshot`);
  const beforeWarm = await snapshot(t.knex);

  const report = await warmUp(t.services, t.services.logger, { examples });
  assert.equal(report.failed, 0, JSON.stringify(t.logs.filter((l) => l.level >= 40)));
  assert.equal(report.refused, 0, 'the contract examples post on the demo company');
  assert.equal(report.rehearsed, examples.size);

  assert.deepEqual(await snapshot(t.knex), beforeWarm, 'the warm-up wrote nothing');

  // The process's own allocator was not touched: a real dry run afterwards answers as before and
  // the counters move only by what it allocates itself (it allocates outside its transaction).
  const receipt = examples.get('/purchase-order-receipts');
  const res = await t.post('/api/v3/purchase-order-receipts?dryRun=true', receipt);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.dryRun, true);
});

test('a batch chosen by criteria is rehearsed on at most REHEARSAL_BATCH_RECORDS records: the whole pay period of the payroll example on the demo company, its job costs included, and the selection is bounded', async () => {
  const example = writeExamples().get('/payroll-records/post') as { periodEndDate: string };
  const inPeriod = Number((await t.knex('payrec').where({ prdend: example.periodEndDate }).whereNot({ status: 5 }).count<{ n: number | string }[]>({ n: '*' }).first())?.n);
  assert.ok(inPeriod >= 2 && inPeriod <= REHEARSAL_BATCH_RECORDS, `the demo period has several records (${inPeriod}), within the rehearsal's cap`);
  const payrecReads: Array<{ rows: number; bindings: unknown[] }> = [];
  const written: string[] = [];
  const onResponse = (response: unknown, query: { sql: string; bindings?: unknown[] }) => {
    // The first select of payroll records (SQLite quotes with backticks, PostgreSQL with double quotes).
    if (/^select .* from [`"]payrec[`"]/i.test(query.sql)) payrecReads.push({ rows: Array.isArray(response) ? response.length : -1, bindings: query.bindings ?? [] });
    const insert = /^insert into [`"](\w+)[`"]/i.exec(query.sql);
    if (insert) written.push(insert[1]!);
  };
  t.services.knex.on('query-response', onResponse);
  try {
    const report = await warmUp(t.services, t.services.logger, { only: (route) => route === '/payroll-records/post' });
    assert.deepEqual({ rehearsed: report.rehearsed, failed: report.failed }, { rehearsed: 1, failed: 0 });
  } finally {
    t.services.knex.off('query-response', onResponse);
  }
  assert.ok(payrecReads.length > 0, 'the rehearsal read payroll records');
  // Every record of the period (the real example's batch: its loops, its row counts, its job lines),
  // through a selection limited to the cap (a period of 3,759 records at scale 250 is not read whole).
  assert.equal(payrecReads[0]!.rows, inPeriod, `the period's selection read ${payrecReads[0]!.rows} rows`);
  assert.ok(payrecReads[0]!.bindings.map(Number).includes(REHEARSAL_BATCH_RECORDS), `the selection is limited: ${JSON.stringify(payrecReads[0]!.bindings)}`);
  assert.ok(written.includes('jobcst'), `the rehearsal wrote (and rolled back) job costs: ${written.join(', ')}`);
});

test('a rehearsal refused by the data (a 4xx: the example names references this database lacks) is counted as refused, not as a failure', async () => {
  const examples = new Map([['/ledger-transactions', { ...(writeExamples().get('/ledger-transactions') as object), lines: [{ accountNumber: 999999.99, debit: 1 }, { accountNumber: 999998.99, credit: 1 }] }]]);
  const before = await snapshot(t.knex);
  const report = await warmUp(t.services, t.services.logger, { examples });
  assert.deepEqual({ rehearsed: report.rehearsed, refused: report.refused, failed: report.failed }, { rehearsed: 0, refused: 1, failed: 0 });
  assert.deepEqual(await snapshot(t.knex), before);
});

test('a rehearsal that throws is logged as a warning and the warm-up goes on with the next engine; it never rejects', async () => {
  const original = t.services.writes.rehearse;
  let calls = 0;
  t.services.writes.rehearse = async () => {
    calls += 1;
    throw new Error('boom in the warm-up');
  };
  try {
    const report = await warmUp(t.services, t.services.logger);
    assert.equal(report.failed, calls);
    assert.equal(calls, writeExamples().size, 'every engine was tried');
    const warn = t.logs.filter((l) => l.msg === 'warm-up: posting rehearsal failed (the start goes on)');
    assert.equal(warn.length, calls);
    assert.equal(warn[0]!.level, 40);
    assert.match(JSON.stringify(warn[0]!.err), /boom in the warm-up/);
  } finally {
    t.services.writes.rehearse = original;
  }
});

test('a rehearsal held up by another transaction (the write lock, numseq rows) gives up after its deadline, logged; it still rolls back', async () => {
  const examples = new Map([['/ledger-transactions', writeExamples().get('/ledger-transactions')]]);
  const before = await snapshot(t.knex);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held!: () => void;
  const holding = new Promise<void>((resolve) => (held = resolve));
  // Another transaction holds the counters (SQLite: the write lock; PostgreSQL: numseq's rows).
  const blocker = t.knex.transaction(async (trx) => {
    await trx('numseq').update({ next_value: trx.raw('next_value') });
    held();
    await released;
    throw new Error('blocker rolled back');
  }).catch(() => undefined);
  await holding;
  const started = Date.now();
  const report = await warmUp(t.services, t.services.logger, { examples, deadlineMs: 300 });
  const took = Date.now() - started;
  release();
  await blocker;
  assert.equal(report.failed, 1);
  assert.ok(took < 3000, `gave up after its deadline, not the database's (${took} ms)`);
  assert.ok(t.logs.some((l) => l.msg === 'warm-up: posting rehearsal failed (the start goes on)' && /deadline/i.test(JSON.stringify(l.err))));
  // The abandoned rehearsal goes on once the lock is free, and rolls back.
  await new Promise((r) => setTimeout(r, 1000));
  assert.deepEqual(await snapshot(t.knex), before);
});

test('a server shutting down starts no further rehearsal', async () => {
  let calls = 0;
  const rehearse = t.services.writes.rehearse;
  t.services.writes.rehearse = async () => {
    calls += 1;
  };
  try {
    const report = await warmUp(t.services, t.services.logger, { stopping: () => calls >= 2 });
    assert.equal(calls, 2);
    assert.equal(report.rehearsed, 2);
  } finally {
    t.services.writes.rehearse = rehearse;
  }
});

test('under the maintenance lock nothing is rehearsed (the pool is dropped)', async () => {
  const lock = t.services.lock;
  const original = lock.isLocked;
  lock.isLocked = () => true;
  let calls = 0;
  const rehearse = t.services.writes.rehearse;
  t.services.writes.rehearse = async () => {
    calls += 1;
  };
  try {
    const report = await warmUp(t.services, t.services.logger);
    assert.equal(calls, 0);
    assert.equal(report.rehearsed, 0);
  } finally {
    lock.isLocked = original;
    t.services.writes.rehearse = rehearse;
  }
});

async function startLogged(db: { url: string }): Promise<{ logs: Array<Record<string, any>>; running: Awaited<ReturnType<typeof startServer>>; firstReady: number }> {
  const logs: Array<Record<string, any>> = [];
  const logger = pino({ level: 'debug' }, new Writable({ write: (c, _e, cb) => (logs.push(...String(c).trim().split('\n').map((l) => JSON.parse(l))), cb()) }));
  const config = loadConfig({ DATABASE_URL: db.url, PORT: '0', SEED_ON_START: 'false', LOG_LEVEL: 'debug', ...secretsEnv(TEST_ENGINE) });
  const running = await startServer(config, { logger, banner: false, host: '127.0.0.1' });
  // Poll /readyz until the first 200. Where it stands in the log: the request log line of that
  // first 200 (written when the server answered it; the server runs in this process, so the
  // client may read the answer later than that).
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${running.port}/readyz`);
    await res.arrayBuffer();
    if (res.status === 200) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const firstReady = logs.findIndex((l) => l.msg === 'request' && l.route === '/readyz' && l.status === 200);
  assert.ok(firstReady >= 0, 'the first 200 of /readyz is in the request log');
  return { logs, running, firstReady };
}

test('startServer: /readyz turns 200 only after the warm-up before readiness (log order), the rest is rehearsed after, and the books are untouched', async () => {
  const db = await createTestDatabase(true);
  try {
    const direct = openDatabase(parseDatabaseUrl(db.url, { min: 0, max: 1 }));
    const books = async () => {
      const s = await snapshot(direct);
      // What the start itself writes, with or without a warm-up: the admin key of a database
      // without one (apikey), this instance's heartbeat (insthb), the change detector's lease
      // (whklse), the fold of the data change log into its counter (datlog emptied; PostgreSQL), and
      // the audit log's entry for that admin key (audlog).
      for (const name of ['apikey', 'insthb', 'whklse', 'datlog', 'audlog']) delete s.counts[name];
      return s;
    };
    const beforeStart = await books();
    const { logs, running, firstReady } = await startLogged(db);
    try {
      const atReady = logs.slice(0, firstReady).map((l) => l.msg);
      const prepared = atReady.indexOf('contract validator prepared');
      const warmed = atReady.indexOf('request path warmed');
      // The rehearsal (a write transaction) first: a cluster worker then holds SQLite's write lock
      // early in its start, not while a sibling that opened the port serves its first postings.
      assert.ok(warmed >= 0 && prepared > warmed, `the warm-up, then the validator prepared, both before the first 200: ${atReady.join(' | ')}`);
      const report = logs[warmed]!;
      assert.deepEqual({ rehearsed: report.rehearsed, failed: report.failed }, { rehearsed: BEFORE_READY.size, failed: 0 });
      // The rehearsals logged before 'request path warmed' are those of BEFORE_READY; the others
      // come after it (once ready, while idle: in this process the test's own polls share the
      // event loop, so whether they land before the first 200 is not pinned down here).
      const rehearsed = logs.map((l, at) => ({ at, l })).filter(({ l }) => l.msg === 'warm-up: posting rehearsed');
      const early = rehearsed.filter(({ at }) => at < warmed).map(({ l }) => l.route);
      assert.deepEqual(early.sort(), [...BEFORE_READY].sort());
      // The payroll batch, the costliest first request (decision 0380), among them, and its request
      // validator prepared before the first 200 with ping's and the receipt's.
      assert.ok(early.includes('/payroll-records/post') && early.includes('/purchase-order-receipts'), `rehearsed before ready: ${early.join(', ')}`);
      assert.ok(BEFORE_READY_OPERATIONS.includes('postPayrollBatch'));
      assert.equal(logs[prepared]!.operations, 1 + BEFORE_READY_OPERATIONS.length, 'ping and the operations of BEFORE_READY compiled before ready');
      await running.ready;
      const rest = lastOf(logs, 'request path warmed (the rest)');
      assert.ok(rest, 'the other engines are rehearsed once ready');
      assert.equal(rest!.rehearsed + BEFORE_READY.size, WRITES.filter((w) => w.definition).length);
      assert.equal(rest!.failed, 0);
      assert.deepEqual(await books(), beforeStart, 'the warm-up wrote nothing: row counts and numseq as before the start');
    } finally {
      await running.close();
      await direct.destroy();
    }
  } finally {
    await db.drop();
  }
});

test('startServer: a warm-up that fails is logged and the server still turns ready and serves', async () => {
  const db = await createTestDatabase(true);
  const original = WriteRunner.prototype.rehearse;
  WriteRunner.prototype.rehearse = async function () {
    throw new Error('warm-up exploded');
  };
  try {
    const { logs, running, firstReady } = await startLogged(db);
    try {
      const atReady = logs.slice(0, firstReady);
      assert.ok(atReady.some((l) => l.msg === 'warm-up: posting rehearsal failed (the start goes on)' && l.level === 40));
      assert.ok(atReady.some((l) => l.msg === 'request path warmed' && l.failed === BEFORE_READY.size));
      await running.ready;
      const key = (await running.services.keys.create(`warm-${randomUUID().slice(0, 8)}`, 'integration')).key;
      const ping = await fetch(`http://127.0.0.1:${running.port}/api/v3/utility/ping`, { method: 'POST', headers: { 'x-api-key': key } });
      assert.equal(ping.status, 200);
    } finally {
      await running.close();
    }
  } finally {
    WriteRunner.prototype.rehearse = original;
    await db.drop();
  }
});

test('a cluster worker whose sibling opens the port between two rehearsals before readiness starts no further write transaction before it listens: the rest are rehearsed once it listens, every one', async () => {
  const db = await createTestDatabase(true);
  const original = WriteRunner.prototype.rehearse;
  // The sibling opens the port (the primary's `open`) while this worker rehearses its first posting.
  let siblingServes = false;
  const rehearsals: Array<{ route: string; siblingServes: boolean }> = [];
  WriteRunner.prototype.rehearse = async function (this: WriteRunner, ...args: Parameters<WriteRunner['rehearse']>) {
    rehearsals.push({ route: args[0].route, siblingServes });
    try {
      return await original.apply(this, args);
    } finally {
      siblingServes = true;
    }
  };
  const logs: Array<Record<string, any>> = [];
  const logger = pino({ level: 'debug' }, new Writable({ write: (c, _e, cb) => (logs.push(...String(c).trim().split('\n').map((l) => JSON.parse(l))), cb()) }));
  try {
    const config = loadConfig({ DATABASE_URL: db.url, PORT: '0', SEED_ON_START: 'false', LOG_LEVEL: 'debug', ...secretsEnv(TEST_ENGINE) });
    const running = await startServer(config, { logger, banner: false, host: '127.0.0.1', listenWhenPrepared: true, siblingsServe: () => siblingServes });
    try {
      const listening = logs.findIndex((l) => l.msg === 'listening');
      assert.ok(listening >= 0);
      const beforeListening = rehearsals.slice(0, logs.slice(0, listening).filter((l) => l.msg === 'warm-up: posting rehearsed').length);
      assert.equal(BEFORE_READY.size >= 2, true, 'two postings are rehearsed before readiness, so a sibling can open between them');
      assert.deepEqual(beforeListening.map((r) => r.siblingServes), [false], `one rehearsal before it listened, none once the sibling served: ${JSON.stringify(rehearsals)}`);
      const early = logs.find((l) => l.msg === 'request path warmed');
      assert.deepEqual({ rehearsed: early?.rehearsed, failed: early?.failed }, { rehearsed: 1, failed: 0 });
      await running.ready;
      const rest = lastOf(logs, 'request path warmed (the rest)');
      assert.ok(rest);
      assert.equal(rest!.rehearsed + 1, WRITES.filter((w) => w.definition).length, 'every other posting once it listened, the second of BEFORE_READY too');
      assert.equal(new Set(rehearsals.map((r) => r.route)).size, rehearsals.length, 'none twice');
    } finally {
      await running.close();
    }
  } finally {
    WriteRunner.prototype.rehearse = original;
    await db.drop();
  }
});
