/**
 * Two real server processes on one database (TEST_ENGINE: SQLite file or PostgreSQL): the state
 * that must be shared holds across them.
 *   - the maintenance lock is strict across them: once a lock taken through one has answered 200,
 *     the other answers 423 and neither holds a connection; once an un-lock through the other has
 *     answered 200, both serve; under a loop of reads and writes to both, nothing sent between the
 *     two answers is served and nothing answers 5xx;
 *   - idempotency: the same keys sent to both processes at once post each document exactly once,
 *     and every answer is the one recorded (or 409 in flight, then that answer);
 *   - a key claimed by a third process that is then SIGKILLed (and not restarted) posts through
 *     another process within 5 s (its heartbeat stops), not after the 30 s lease;
 *   - counts and match indexes: a commit through the other process, or any other connection, is
 *     seen by the very next read of this one (the data change token; that heartbeats do not move
 *     it is test/storage/data-change-counter.test.ts).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../support/app';
import { parseDatabaseUrl } from '../../src/storage/database';
import { countRows, installPostingFixture, journal } from '../support/posting-fixture';
import { postJson, spawnServer, type HttpResult, type SpawnedServer } from '../support/server-process';
import { assertBooksInvariants } from '../support/invariants';
import {
  assertLockRefusal,
  assertNoWindowRound,
  databaseNow,
  lockThrough,
  postKeyedJournal,
  readProbe,
  serviceConnectionsOpenedBefore,
  testConnectionUrl,
  tookMs,
  unlockThrough,
} from '../support/lock-window';

const adminKey = randomUUID();
const apiKey = randomUUID();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let db: { url: string; drop: () => Promise<void> };
let knex: Knex;
let a: SpawnedServer;
let b: SpawnedServer;

before(async () => {
  db = await createTestDatabase();
  knex = knexFactory(parseDatabaseUrl(testConnectionUrl(db.url), { min: 0, max: 2 }).config);
  await installPostingFixture(knex);
  a = await spawnServer({ databaseUrl: db.url, adminKey, apiKey, env: { INSTANCE_ID: 'node-a' } });
  b = await spawnServer({ databaseUrl: db.url, adminKey, apiKey, env: { INSTANCE_ID: 'node-b' } });
});
after(async () => {
  await a?.kill();
  await b?.kill();
  await knex?.destroy();
  await db?.drop();
});

const read = (port: number): Promise<HttpResult> => readProbe(port, apiKey);

/** Polls `probe` every 20 ms until `done`; the time it took (ms), or fails after `limitMs`. */
async function within(limitMs: number, probe: () => Promise<HttpResult>, done: (r: HttpResult) => boolean, what: string): Promise<number> {
  const started = Date.now();
  for (;;) {
    const res = await probe();
    const elapsed = Date.now() - started;
    if (done(res)) return elapsed;
    assert.ok(elapsed < limitMs, `${what} within ${limitMs} ms (last answer ${res.status})`);
    await sleep(20);
  }
}

const pgOnly = () => knex.client.config.client === 'pg';

test('the lock is strict across instances: once a lock through one has answered, the other answers 423 (its connections closed); once an un-lock through the other has answered, both serve', async (t) => {
  assert.equal((await read(a.port)).status, 200);
  assert.equal((await read(b.port)).status, 200);
  const timings: string[] = [];

  const since = pgOnly() ? await databaseNow(knex) : undefined;
  const locked = await lockThrough(a.port, 'night-ops', adminKey);
  // The very first request to the other instance after the lock's 200 (it names the holder).
  assertLockRefusal(await read(b.port), 'night-ops', 'the other instance answers 423 at once');
  assert.equal((await read(a.port)).status, 423);
  if (since) assert.equal(await serviceConnectionsOpenedBefore(knex, since), 0, 'no instance holds a connection it had before the lock');
  const ping = await postJson(b.port, '/api/v3/utility/ping', {}, { 'x-api-key': apiKey });
  assert.equal(ping.status, 200);
  assert.equal(ping.body.lockUser, 'night-ops');

  // Someone else cannot lock through the other process either: 409 naming the holder.
  const other = await postJson(b.port, '/api/v3/utility/lock', { userName: 'day-ops' }, { 'x-api-key': apiKey });
  assert.equal(other.status, 409);
  assert.equal(other.body.lockUser, 'night-ops');

  // The holder (same key and userName) un-locks through the OTHER process.
  const unlocked = await unlockThrough(b.port, 'night-ops', adminKey);
  assert.equal(unlocked.body.status, 'unlocked');
  assert.equal((await read(a.port)).status, 200, 'the locking instance serves at once');
  assert.equal((await read(b.port)).status, 200);
  assert.equal(await countRows(knex, 'mntlck'), 0);
  timings.push(`lock through A ${tookMs(locked)} ms, un-lock through B ${tookMs(unlocked)} ms`);

  // Locked and un-locked again through the same process: the other follows both ways, at once.
  for (let round = 0; round < 2; round += 1) {
    const again = await lockThrough(b.port, 'day-ops', apiKey);
    const first = await read(a.port);
    assert.equal(first.status, 423);
    assert.equal(first.body.lockUser, 'day-ops');
    const free = await unlockThrough(b.port, 'day-ops', apiKey);
    assert.equal((await read(a.port)).status, 200);
    timings.push(`lock through B ${tookMs(again)} ms, un-lock ${tookMs(free)} ms`);
  }
  t.diagnostic(`two instances: ${timings.join('; ')}`);
});

test('no window across instances: reads and writes sent to both while locking through one and un-locking through the other; nothing sent in between is served, no 5xx', async (t) => {
  t.diagnostic(await assertNoWindowRound({ knex, adminKey, lockPort: a.port, unlockPort: b.port, traffic: { ports: [a.port, b.port], apiKeys: [apiKey], tag: `INW${Date.now() % 100000}` } }));
});

test('idempotency across two processes: the same keys sent to both at once post each journal exactly once', async () => {
  const keys = Array.from({ length: 16 }, (_, i) => ({ key: `two-proc-${randomUUID()}`, number: `2P-${i}` }));
  const send = (port: number, k: { key: string; number: string }) => postKeyedJournal(port, apiKey, k.number, k.key);
  const first = await Promise.all(keys.flatMap((k) => [send(a.port, k), send(b.port, k)]));
  for (const res of first) {
    assert.ok(res.status === 200 || (res.status === 409 && res.headers['x-error-code'] === 'IDEMPOTENCY_KEY_IN_FLIGHT'), `200 or 409 in flight, got ${res.status} ${JSON.stringify(res.body)}`);
  }
  for (const [i, k] of keys.entries()) {
    const answers = [first[2 * i]!, first[2 * i + 1]!];
    // Retry the 409s (as a client does after Retry-After) against the other process.
    const settled: HttpResult[] = [];
    for (const [j, res] of answers.entries()) {
      let current = res;
      for (let attempt = 0; current.status === 409 && attempt < 50; attempt += 1) {
        await sleep(100);
        current = await send(j === 0 ? b.port : a.port, k);
      }
      assert.equal(current.status, 200, `${k.number}: ${JSON.stringify(current.body)}`);
      settled.push(current);
    }
    assert.deepEqual(settled[0]!.body, settled[1]!.body, `${k.number}: both processes answer the one recorded response`);
    assert.equal(await countRows(knex, 'lgrtrn', { trnnum: k.number }), 1, `${k.number} posted exactly once`);
    const statuses = settled.map((r) => r.headers['idempotency-status']).sort();
    assert.ok(statuses.includes('replayed'), `${k.number}: one of the two is a replay (${statuses})`);
  }
  await assertBooksInvariants(knex);
});

test('a key claimed by a process that died (no restart) is free on another process within 5 s, not after the lease', async (t) => {
  // C holds its posting transaction open for 20 s; the lease (2 x DB_DEADLINE_MS 15 s) would be 30 s.
  const c = await spawnServer({ databaseUrl: db.url, adminKey, apiKey, env: { INSTANCE_ID: 'node-c', POSTING_DELAY_MS: '20000' } });
  try {
    const key = `dies-${randomUUID()}`;
    const body = journal('2P-DIES');
    const pending = postJson(c.port, '/api/v3/ledger-transactions', body, { 'x-api-key': apiKey, 'Idempotency-Key': key }).catch(() => undefined);
    let claim: Record<string, any> | undefined;
    for (let i = 0; i < 200 && !claim; i += 1) {
      claim = await knex('idmkey').where({ idem_key: key, state: 'in_flight' }).first();
      if (!claim) await sleep(25);
    }
    assert.ok(claim, 'C claimed the key');
    assert.equal(claim.owner_instance, 'node-c');
    const retry = () => postJson(a.port, '/api/v3/ledger-transactions', body, { 'x-api-key': apiKey, 'Idempotency-Key': key });
    if (!db.url.startsWith('sqlite')) {
      // (On SQLite C's open transaction holds the file's write lock: A could not even claim; 502 busy after 5 s.)
      const whileAlive = await retry();
      assert.equal(whileAlive.status, 409, 'while C beats, its claim is in flight');
      assert.equal(whileAlive.headers['x-error-code'], 'IDEMPOTENCY_KEY_IN_FLIGHT');
    }
    await c.kill('SIGKILL');
    await pending;
    const killedAt = Date.now();
    const freedAfter = await within(5000, retry, (r) => r.status === 200, 'the retry on A posts');
    t.diagnostic(`the dead process's claim was taken over ${freedAfter} ms after the kill`);
    assert.ok(Date.now() - killedAt < 5000);
    assert.equal(await countRows(knex, 'lgrtrn', { trnnum: '2P-DIES' }), 1, 'posted exactly once');
    const row = await knex('idmkey').where({ idem_key: key }).first();
    assert.equal(row.state, 'completed');
    assert.equal(row.owner_instance, 'node-a');
  } finally {
    await c.kill();
  }
});

test('counts and match indexes: a posting through B, or a change through any connection, is seen by the next read on A', async () => {
  const tag = `CNT${Date.now() % 100000}`;
  const count = async (port: number) => {
    const res = await postJson(port, '/api/v3/ledger-transactions/query', { filters: { match: { field: 'transactionNumber', operator: 'LIKE', value: `${tag}-%` } }, select: ['recordNumber'], page: { pageNumber: 1, pageSize: 1 } }, { 'x-api-key': apiKey });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.page.totalCount as number;
  };
  assert.equal(await count(a.port), 0);
  assert.equal(await count(a.port), 0, 'the same count again (reused)');
  const posted = await postJson(b.port, '/api/v3/ledger-transactions', journal(`${tag}-1`), { 'x-api-key': apiKey });
  assert.equal(posted.status, 200, JSON.stringify(posted.body));
  assert.equal(await count(a.port), 1, 'A counts the journal B posted at once');
  assert.equal(await count(b.port), 1);

  const name = `Qzxw Instance Probe ${tag}`;
  const match = async (port: number) => {
    const res = await postJson(port, '/api/v3/parts/match', { matchString: name, matchFields: ['partName'], select: ['recordNumber'], maxDistance: 1 }, { 'x-api-key': apiKey });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return (res.body.data as Array<{ recordNumber: number }>).map((r) => r.recordNumber);
  };
  assert.deepEqual(await match(a.port), [], 'no such part yet (A builds its index now)');
  const part = await knex('tkfprt').orderBy('recnum').first('recnum', 'prtnme');
  await knex('tkfprt').where({ recnum: part.recnum }).update({ prtnme: name });
  try {
    assert.deepEqual(await match(a.port), [Number(part.recnum)], 'A sees the rename made through another connection');
    assert.deepEqual(await match(b.port), [Number(part.recnum)]);
  } finally {
    await knex('tkfprt').where({ recnum: part.recnum }).update({ prtnme: part.prtnme });
  }
  assert.deepEqual(await match(a.port), [], 'and the rename back');
});

