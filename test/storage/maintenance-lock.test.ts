/**
 * The maintenance lock (spec, States and transitions): lock / un-lock by the holder, by someone
 * else (409), with override; 423 on every read and write while locked, ping answering without the
 * database; every connection of the service dropped and kept dropped; the lock surviving a restart.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { usePostingApp } from '../support/posting-app';
import { assertProblem } from '../support/http';
import { FX, countRows, installPostingFixture, journal } from '../support/posting-fixture';
import { assertBooksInvariants } from '../support/invariants';
import { parseDatabaseUrl } from '../../src/storage/database';
import { toDbTime } from '../../src/storage/db-time';
import { ApiKeyRepository } from '../../src/storage/api-keys';

let t: TestApp;

usePostingApp((app) => (t = app), { invariants: false });

function pool(app: TestApp) {
  return app.services.lock.poolStats();
}

/** Reads mntlck through a connection of its own (the service's pool is empty while locked). */
async function lockRow(app: TestApp): Promise<Record<string, any> | undefined> {
  const other = knexFactory(parseDatabaseUrl(app.services.config.databaseUrl, { min: 0, max: 1 }).config);
  try {
    return await other('mntlck').where({ id: 1 }).first();
  } finally {
    await other.destroy();
  }
}

test('any valid key may lock (spec guard "any"): an integration key locks, un-locks what it holds, and overrides', async () => {
  assertProblem(await t.post('/api/v3/utility/lock', {}, t.apiKey), 'VALIDATION_FAILED');
  const locked = await t.post('/api/v3/utility/lock', { userName: 'integrator' }, t.apiKey);
  assert.equal(locked.status, 200, locked.text);
  assert.equal(locked.body.lockUser, 'integrator');
  assert.equal((await lockRow(t))?.user_name, 'integrator', 'persisted in mntlck');
  // A non-holder (the admin key) without override: 409 naming the holder; the lock stays.
  const held = assertProblem(await t.post('/api/v3/utility/un-lock', { userName: 'ops' }, t.adminKey), 'LOCK_HELD');
  assert.equal(held.lockUser, 'integrator');
  assert.equal(t.services.lock.current?.userName, 'integrator');
  // The holder un-locks.
  const unlocked = await t.post('/api/v3/utility/un-lock', { userName: 'integrator' }, t.apiKey);
  assert.equal(unlocked.status, 200, unlocked.text);
  assert.equal(unlocked.body.status, 'unlocked');
  assert.equal((await lockRow(t))?.user_name ?? null, null, 'released in mntlck');
  // Override by an integration key releases a lock the admin key holds.
  assert.equal((await t.post('/api/v3/utility/lock', { userName: 'ops' }, t.adminKey)).status, 200);
  assertProblem(await t.post('/api/v3/utility/un-lock', { userName: 'integrator' }, t.apiKey), 'LOCK_HELD');
  const overridden = await t.post('/api/v3/utility/un-lock', { userName: 'integrator', override: true }, t.apiKey);
  assert.equal(overridden.status, 200, overridden.text);
  assert.equal(overridden.body.response.previousHolder, 'ops');
  assert.equal(t.services.lock.current, null);
  assert.equal((await t.post('/api/v3/ledger-transactions', journal('LK-ANY'))).status, 200, 'writes work again after un-lock');
});

test('LOCK_ADMIN_ONLY=true (operator opt-in): an integration key gets 403 on lock and un-lock; an admin key locks', async () => {
  const strict = await startTestApp({ config: { lockAdminOnly: true } });
  try {
    assertProblem(await strict.post('/api/v3/utility/lock', { userName: 'jsmith' }, strict.apiKey), 'FORBIDDEN');
    assertProblem(await strict.post('/api/v3/utility/un-lock', { userName: 'jsmith', override: true }, strict.apiKey), 'FORBIDDEN');
    assert.equal(strict.services.lock.current, null, 'nothing locked by the refused call');
    assert.equal((await lockRow(strict))?.user_name ?? null, null);
    assert.equal((await strict.post('/api/v3/utility/lock', { userName: 'ops' }, strict.adminKey)).status, 200);
    assertProblem(await strict.post('/api/v3/utility/un-lock', { userName: 'ops', override: true }, strict.apiKey), 'FORBIDDEN');
    assert.equal(strict.services.lock.current!.userName as string | undefined, 'ops');
    assert.equal((await strict.post('/api/v3/utility/un-lock', { userName: 'ops' }, strict.adminKey)).status, 200);
  } finally {
    await strict.close();
  }
});

test('un-lock while unlocked answers unlocked', async () => {
  const res = await t.post('/api/v3/utility/un-lock', { userName: 'nobody' }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.status, 'unlocked');
});

test('lock: status locked with the holder; the pool is emptied and stays empty while locked', async () => {
  assert.equal((await t.post('/api/v3/ledger-transactions', journal('LK-1'))).status, 200);
  const res = await t.post('/api/v3/utility/lock', { userName: 'jsmith' }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.status, 'locked');
  assert.equal(res.body.lockUser, 'jsmith');
  assert.equal(res.body.response.connectionsDropped, true);
  assert.ok(!Number.isNaN(Date.parse(res.body.response.lockedAt)));
  const stats = pool(t);
  assert.equal(stats.used + stats.free, 0, JSON.stringify(stats));
  const row = await lockRow(t);
  assert.equal(row?.user_name, 'jsmith', 'persisted in mntlck');
});

test('while locked every read and write is 423 MAINTENANCE_LOCK with Retry-After 60 and the holder, without a connection', async () => {
  for (const [path, body] of [
    ['/api/v3/ledger-transactions', journal('LK-2')],
    ['/api/v3/ap-invoices', {}],
    ['/api/v3/ledger-accounts/query', {}],
    ['/api/v3/vendors/match', { matchString: 'x', matchFields: ['vendorName'], select: ['vendorName'], maxDistance: 1 }],
  ] as const) {
    const res = await t.post(path, body);
    const problem = assertProblem(res, 'MAINTENANCE_LOCK', path);
    assert.equal(res.headers['retry-after'], '60');
    assert.equal(problem.lockUser, 'jsmith');
    assert.match(problem.detail, /jsmith/);
  }
  const stats = pool(t);
  assert.equal(stats.exists, false);
  assert.equal(stats.used + stats.free, 0);
});

test('ping while locked answers 200 status locked with lockUser, without touching the database', async () => {
  const res = await t.post('/api/v3/utility/ping');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.status, 'locked');
  assert.equal(res.body.lockUser, 'jsmith');
  assert.equal(res.body.databaseRoundTripMs, undefined);
  assert.equal(pool(t).exists, false);
});

test('lock again: by the holder answers locked; by someone else 409 LOCK_HELD naming the holder', async () => {
  const same = await t.post('/api/v3/utility/lock', { userName: 'jsmith' }, t.adminKey);
  assert.equal(same.status, 200);
  assert.equal(same.body.lockUser, 'jsmith');
  const other = await t.post('/api/v3/utility/lock', { userName: 'mjones' }, t.adminKey);
  const body = assertProblem(other, 'LOCK_HELD');
  assert.equal(body.lockUser, 'jsmith');
});

test('un-lock by someone else without override is 409 LOCK_HELD; the lock stays', async () => {
  const res = await t.post('/api/v3/utility/un-lock', { userName: 'mjones' }, t.adminKey);
  const body = assertProblem(res, 'LOCK_HELD');
  assert.equal(body.lockUser, 'jsmith');
  assert.match(body.detail, /jsmith/);
  assertProblem(await t.post('/api/v3/ledger-transactions', journal('LK-3')), 'MAINTENANCE_LOCK');
  assert.equal(pool(t).exists, false);
});

test('the lock survives a restart: a new service on the same database starts locked with an empty pool', async () => {
  const restarted = await startTestApp({ databaseUrl: t.services.config.databaseUrl });
  try {
    const res = await restarted.post('/api/v3/ledger-transactions', journal('LK-4'));
    const body = assertProblem(res, 'MAINTENANCE_LOCK');
    assert.equal(body.lockUser, 'jsmith');
    const stats = pool(restarted);
    assert.equal(stats.used + stats.free, 0, 'the restarted service dropped its pool after reading the lock');
    const ping = await restarted.post('/api/v3/utility/ping');
    assert.equal(ping.body.status, 'locked');
    // Its admin key is another key: not the holder.
    assertProblem(await restarted.post('/api/v3/utility/un-lock', { userName: 'jsmith' }, restarted.adminKey), 'LOCK_HELD');
  } finally {
    await restarted.detach();
  }
});

test('un-lock by the holder: unlocked, the pool comes back, writes work again', async () => {
  const res = await t.post('/api/v3/utility/un-lock', { userName: 'JSmith' }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.status, 'unlocked');
  assert.equal(res.body.response.previousHolder, 'jsmith');
  assert.equal(await lockRow(t), undefined, 'mntlck is empty');
  const ping = await t.post('/api/v3/utility/ping');
  assert.equal(ping.body.status, 'ok');
  const write = await t.post('/api/v3/ledger-transactions', journal('LK-5'));
  assert.equal(write.status, 200, write.text);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'LK-5' }), 1);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'LK-2' }), 0);
});

test('un-lock with override releases a lock held by someone else', async () => {
  const other = await t.services.keys.create('second admin', 'admin');
  assert.equal((await t.post('/api/v3/utility/lock', { userName: 'mjones' }, other.key)).status, 200);
  assertProblem(await t.post('/api/v3/utility/un-lock', { userName: 'mjones' }, t.adminKey), 'LOCK_HELD');
  const res = await t.post('/api/v3/utility/un-lock', { userName: 'ops', override: true }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.response.previousHolder, 'mjones');
  assert.equal((await t.post('/api/v3/ledger-transactions', journal('LK-6', { transactionDate: FX.openDate }))).status, 200);
});

test('the holder is the API key that locked and its userName (docs/decisions/0242): across two keys', async () => {
  const a = await t.services.keys.create('key A', 'integration');
  const b = await t.services.keys.create('key B', 'integration');
  assert.equal((await t.post('/api/v3/utility/lock', { userName: 'jsmith' }, a.key)).status, 200);
  // Key B, even with the holder's userName, is not the holder: 409 naming the holder; the lock stays.
  const byB = assertProblem(await t.post('/api/v3/utility/un-lock', { userName: 'jsmith' }, b.key), 'LOCK_HELD');
  assert.equal(byB.lockUser, 'jsmith');
  assert.match(byB.detail, /held by jsmith/);
  assert.equal((await lockRow(t))?.api_key_id, a.record.id, 'recorded against key A');
  // Key A with another userName is not the holder either; locking again as that user neither.
  assert.equal(assertProblem(await t.post('/api/v3/utility/un-lock', { userName: 'mjones' }, a.key), 'LOCK_HELD').lockUser, 'jsmith');
  assert.equal(assertProblem(await t.post('/api/v3/utility/lock', { userName: 'mjones' }, a.key), 'LOCK_HELD').lockUser, 'jsmith');
  assert.equal(t.services.lock.current?.userName, 'jsmith');
  // Key A with its userName (any case) is the holder.
  const again = await t.post('/api/v3/utility/lock', { userName: 'JSmith' }, a.key);
  assert.equal(again.status, 200, again.text);
  const byA = await t.post('/api/v3/utility/un-lock', { userName: ' JSMITH ' }, a.key);
  assert.equal(byA.status, 200, byA.text);
  assert.equal(byA.body.response.previousHolder, 'jsmith');
  // Key B with override releases a lock key A holds.
  assert.equal((await t.post('/api/v3/utility/lock', { userName: 'jsmith' }, a.key)).status, 200);
  const overridden = await t.post('/api/v3/utility/un-lock', { userName: 'mjones', override: true }, b.key);
  assert.equal(overridden.status, 200, overridden.text);
  assert.equal(overridden.body.response.previousHolder, 'jsmith');
  assert.equal(t.services.lock.current, null);
  assert.equal((await lockRow(t)) ?? null, null);
});

// ---- The lock takes effect before it answers (issue 24; docs/decisions/0200-lock-takes-effect-before-it-answers.md)

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A connection of the test's own to the app's database (the app's pool may be closed). */
function sideConnection(app: TestApp) {
  return knexFactory(parseDatabaseUrl(app.services.config.databaseUrl, { min: 0, max: 1 }).config);
}

test('requests waiting for a connection when the lock closes the pool answer 423 with nothing written; those holding one finish; never 5xx', async (t2) => {
  // Four connections, each posting held 100 ms before COMMIT: most of the 100 wait in the pool's queue.
  const app = await startTestApp({ config: { dbPoolMax: 4 } });
  try {
    await installPostingFixture(app.knex);
    let holding = 0;
    app.services.writes.hooks.beforeCommit = async () => {
      holding += 1;
      await sleep(100);
      holding -= 1;
    };
    const planned = Array.from({ length: 100 }, (_, i) => ({ key: `q-${i}-${Date.now()}`, number: `LKQ-${i}` }));
    const answers = Promise.all(planned.map((p) => app.post('/api/v3/ledger-transactions', journal(p.number)).set('Idempotency-Key', p.key).then((r) => r)));
    // Until most of them wait for a connection.
    for (let i = 0; i < 1000 && (app.services.lock.poolStats().pendingAcquires < 60 || holding === 0); i += 1) await sleep(2);
    const queued = app.services.lock.poolStats().pendingAcquires;
    assert.ok(queued >= 60, `requests queued for a connection: ${queued}`);
    assert.ok(holding > 0, 'postings inside their transaction');
    const lockSent = Date.now();
    const locked = await app.post('/api/v3/utility/lock', { userName: 'queue-ops' }, app.adminKey);
    assert.equal(locked.status, 200, locked.text);
    const lockMs = Date.now() - lockSent;
    // Every request inside ended before the lock answered, and the pool is gone.
    assert.equal(app.services.lock.drain.requestsInside, 0, 'no request left inside');
    assert.equal(pool(app).exists, false);
    const settled = await answers;
    const statuses = settled.map((r) => r.status);
    t2.diagnostic(`lock answered in ${lockMs} ms; ${queued} queued; ${statuses.filter((s) => s === 200).length} posted, ${statuses.filter((s) => s === 423).length} turned away`);
    for (const [i, res] of settled.entries()) {
      assert.ok(res.status === 200 || res.status === 423, `${planned[i]!.number}: 200 or 423, got ${res.status} ${res.text}`);
      if (res.status === 423) assertProblem(res, 'MAINTENANCE_LOCK');
    }
    assert.ok(statuses.filter((s) => s === 423).length >= 40, 'the queued requests were turned away, not served');
    assert.ok(statuses.filter((s) => s === 200).length >= 1, 'the postings inside their transaction committed');
    const side = sideConnection(app);
    try {
      for (const [i, p] of planned.entries()) {
        const posted = Number((await side('lgrtrn').where({ trnnum: p.number }).count('* as n').first())!.n);
        const claims = await side('idmkey').where({ idem_key: p.key }).select('state');
        if (settled[i]!.status === 200) {
          assert.equal(posted, 1, `${p.number} posted once`);
          assert.deepEqual(claims.map((c) => c.state), ['completed']);
        } else {
          assert.equal(posted, 0, `${p.number}: nothing posted`);
          assert.deepEqual(claims, [], `${p.number}: its Idempotency-Key was given back`);
        }
      }
    } finally {
      await side.destroy();
    }
    // After the un-lock the turned-away requests post with the same keys.
    app.services.writes.hooks.beforeCommit = undefined;
    assert.equal((await app.post('/api/v3/utility/un-lock', { userName: 'queue-ops' }, app.adminKey)).status, 200);
    for (const [i, p] of planned.entries()) {
      if (settled[i]!.status !== 423) continue;
      const again = await app.post('/api/v3/ledger-transactions', journal(p.number)).set('Idempotency-Key', p.key);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers['idempotency-status'], 'applied');
    }
    await assertBooksInvariants(app.knex);
  } finally {
    await app.close();
  }
});

test('a posting re-checks the lock inside its transaction: a lock this process has not seen yet turns it away (423, nothing written, key given back)', async () => {
  // No re-reads: this process learns of the lock only through the posting's own transaction.
  const app = await startTestApp({ config: { lockPollMs: 0 } });
  try {
    await installPostingFixture(app.knex);
    // The lock state is read (unlocked) before the first request is served; from then on only re-reads would see a change.
    assert.equal((await app.post('/api/v3/ledger-transactions', journal('LK-BEFORE'))).status, 200);
    const side = sideConnection(app);
    try {
      // Recorded through another process (its pool has not closed yet: the fence is all that stands between).
      await side('mntlck').insert({ id: 1, user_name: 'elsewhere', api_key_id: null, locked_at: toDbTime(app.engine, new Date()), lock_id: 'other-process-lock' });
      assert.equal(app.services.lock.isLocked(), false, 'this process has not seen the lock');
      const res = await app.post('/api/v3/ledger-transactions', journal('LK-FENCE')).set('Idempotency-Key', 'fence-1');
      const problem = assertProblem(res, 'MAINTENANCE_LOCK');
      assert.equal(problem.lockUser, 'elsewhere');
      assert.equal(await countRows(side, 'lgrtrn', { trnnum: 'LK-FENCE' }), 0, 'nothing posted');
      assert.equal(await countRows(side, 'idmkey', { idem_key: 'fence-1' }), 0, 'the key was given back');
      // A dry run too.
      assertProblem(await app.post('/api/v3/ledger-transactions?dryRun=true', journal('LK-FENCE')), 'MAINTENANCE_LOCK');
      await side('mntlck').where({ id: 1 }).del();
    } finally {
      await side.destroy();
    }
    const again = await app.post('/api/v3/ledger-transactions', journal('LK-FENCE')).set('Idempotency-Key', 'fence-1');
    assert.equal(again.status, 200, again.text);
  } finally {
    await app.close();
  }
});

test('lock and un-lock wait for every live process: 504 LOCK_NOT_CONFIRMED with the change recorded, the retry is idempotent; a dead process is not waited for', async () => {
  const app = await startTestApp({ config: { lockAckTimeoutMs: 400 } });
  const side = sideConnection(app);
  // Another process on the database: alive (it beats) but it never confirms anything.
  const beat = async (ageMs = 0) => {
    const row = { boot_id: '00000000-0000-4000-8000-000000000001', last_seen: toDbTime(app.engine, new Date(Date.now() - ageMs)), beat_ms: 1000 };
    if (Number(await side('insthb').where({ instance_id: 'ghost' }).update(row)) === 0) await side('insthb').insert({ instance_id: 'ghost', started_at: toDbTime(app.engine, new Date()), ...row });
  };
  await beat();
  let beating = true;
  const beats = (async () => {
    while (beating) {
      await beat();
      await sleep(100);
    }
  })();
  try {
    const started = Date.now();
    const first = await app.post('/api/v3/utility/lock', { userName: 'ops' }, app.adminKey);
    assertProblem(first, 'LOCK_NOT_CONFIRMED');
    assert.ok(Date.now() - started >= 400, 'it waited for the bound');
    const row = await side('mntlck').where({ id: 1 }).first();
    assert.equal(row?.user_name, 'ops', 'the lock is recorded');
    assertProblem(await app.post('/api/v3/ledger-accounts/query', {}), 'MAINTENANCE_LOCK');
    assertProblem(await app.post('/api/v3/utility/lock', { userName: 'someone-else' }, app.adminKey), 'LOCK_HELD');
    // The retry by the holder waits again: still 504 while the other process has not confirmed.
    assertProblem(await app.post('/api/v3/utility/lock', { userName: 'ops' }, app.adminKey), 'LOCK_NOT_CONFIRMED');
    // Once it confirms (its heartbeat row shows the lock), the retry answers locked; nothing changed.
    await side('insthb').where({ instance_id: 'ghost' }).update({ lock_state: row.lock_id });
    const retried = await app.post('/api/v3/utility/lock', { userName: 'ops' }, app.adminKey);
    assert.equal(retried.status, 200, retried.text);
    assert.equal((await side('mntlck').where({ id: 1 }).first())?.lock_id, row.lock_id, 'the same lock');

    // The un-lock waits the same way: 504 with the release recorded, this process serving again.
    assertProblem(await app.post('/api/v3/utility/un-lock', { userName: 'ops' }, app.adminKey), 'LOCK_NOT_CONFIRMED');
    assert.equal(await countRows(side, 'mntlck'), 0, 'the release is recorded');
    assert.equal((await app.post('/api/v3/ledger-accounts/query', {})).status, 200);
    // The other process stops beating: dead, it is not waited for; the retry answers unlocked.
    beating = false;
    await beats;
    await beat(10_000);
    const unlocked = await app.post('/api/v3/utility/un-lock', { userName: 'ops' }, app.adminKey);
    assert.equal(unlocked.status, 200, unlocked.text);
    const lockedAgain = await app.post('/api/v3/utility/lock', { userName: 'ops' }, app.adminKey);
    assert.equal(lockedAgain.status, 200, 'a dead process does not hold a lock back');
    assert.equal((await app.post('/api/v3/utility/un-lock', { userName: 'ops' }, app.adminKey)).status, 200);
  } finally {
    beating = false;
    await beats;
    await side.destroy();
    await app.close();
  }
});

/**
 * Keys while locked (docs/decisions/0450-key-snapshot-fresh-while-locked.md): the lock answers
 * authentication from its key snapshot, which it keeps no older than API_KEY_CACHE_MS. The lock is
 * re-read every 900 ms here (LOCK_POLL_MS at its maximum), longer than the bound: the bound holds
 * through the lookup's own read, not by the re-read's luck. Changes go through a connection of the
 * test's own, as the keys CLI or another instance makes them.
 */
const KEY_BOUND_MS = 300;

/** Runs `fn` while Frank (the admin key) holds the lock; `key`: an integration key created before the lock (key X). */
async function withLockedApp(fn: (app: TestApp, side: ReturnType<typeof sideConnection>, key: string) => Promise<void>): Promise<void> {
  const app = await startTestApp({ config: { apiKeyCacheMs: KEY_BOUND_MS, lockPollMs: 900 } });
  const side = sideConnection(app);
  try {
    const { key } = await new ApiKeyRepository(side).create('key X', 'integration');
    assert.equal((await app.post('/api/v3/utility/ping', undefined, key)).status, 200);
    const locked = await app.post('/api/v3/utility/lock', { userName: 'Frank' }, app.adminKey);
    assert.equal(locked.status, 200, locked.text);
    await fn(app, side, key);
    const unlocked = await app.post('/api/v3/utility/un-lock', { userName: 'Frank' }, app.adminKey);
    assert.equal(unlocked.status, 200, unlocked.text);
  } finally {
    await side.destroy();
    await app.close();
  }
}

/**
 * Pings with `key` until `done(status)`; every ping that starts more than KEY_BOUND_MS after
 * `committed` must already be done (README: API_KEY_CACHE_MS, the bound is about when a request
 * starts). Returns the first answer that is done.
 */
async function pingLockedUntil(app: TestApp, key: string, committed: number, done: (status: number) => boolean) {
  for (;;) {
    const started = performance.now();
    const res = await app.post('/api/v3/utility/ping', undefined, key);
    if (done(res.status)) return res;
    assert.ok(started - committed <= KEY_BOUND_MS, `a ping started ${(started - committed).toFixed(0)} ms after the commit (bound ${KEY_BOUND_MS} ms) still answered ${res.status} ${res.text}`);
    await sleep(20);
  }
}

test('while locked, a key revoked through another connection (the keys CLI) gets 401 within API_KEY_CACHE_MS; its override un-lock gets 401 and the lock row is unchanged', async () => {
  await withLockedApp(async (app, side, key) => {
    const before = await app.post('/api/v3/utility/ping', undefined, key);
    assert.equal(before.status, 200, before.text);
    assert.equal(before.body.status, 'locked');
    assert.equal(before.body.lockUser, 'Frank');
    const row = await lockRow(app);
    await new ApiKeyRepository(side).setState(key, 'revoked', null);
    const revoked = await pingLockedUntil(app, key, performance.now(), (s) => s !== 200);
    assertProblem(revoked, 'UNAUTHORIZED');
    assertProblem(await app.post('/api/v3/utility/un-lock', { userName: 'mallory', override: true }, key), 'UNAUTHORIZED');
    assert.deepEqual(await lockRow(app), row, 'the lock row is unchanged');
    assert.equal(app.services.lock.current?.userName, 'Frank', 'still locked by Frank');
    assert.equal(app.services.lock.poolStats().exists, false, 'the pool stays dropped: the keys are read through the lock\'s own connection');
    assertProblem(await app.post('/api/v3/utility/ping', undefined, key), 'UNAUTHORIZED');
  });
});

test('while locked, a key disabled through another connection gets 503 SERVICE_DISABLED with Retry-After 300 within API_KEY_CACHE_MS; enabled again, the ping answers locked', async () => {
  await withLockedApp(async (app, side, key) => {
    assert.equal((await app.post('/api/v3/utility/ping', undefined, key)).status, 200);
    await new ApiKeyRepository(side).setState(key, 'disabled', 'Invoice unpaid');
    const off = await pingLockedUntil(app, key, performance.now(), (s) => s !== 200);
    const problem = assertProblem(off, 'SERVICE_DISABLED');
    assert.equal(off.headers['retry-after'], '300');
    assert.equal(problem.reason, 'Invoice unpaid');
    await new ApiKeyRepository(side).setState(key, 'active', null);
    const on = await pingLockedUntil(app, key, performance.now(), (s) => s === 200);
    assert.equal(on.body.status, 'locked');
  });
});

test('while locked, a key created through another connection is accepted within API_KEY_CACHE_MS (the ping answers locked)', async () => {
  await withLockedApp(async (app, side) => {
    // Used before it exists: the snapshot does not hold it yet.
    const key = randomUUID();
    assertProblem(await app.post('/api/v3/utility/ping', undefined, key), 'UNAUTHORIZED');
    await new ApiKeyRepository(side).create('created while locked', 'integration', key);
    const res = await pingLockedUntil(app, key, performance.now(), (s) => s === 200);
    assert.equal(res.body.status, 'locked');
    assert.equal(res.body.lockUser, 'Frank');
    assertProblem(await app.post('/api/v3/ledger-accounts/query', {}, key), 'MAINTENANCE_LOCK');
  });
});
