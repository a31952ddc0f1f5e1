/**
 * The maintenance lock (spec, States and transitions): lock / un-lock by the holder, by someone
 * else (409), with override; 423 on every read and write while locked, ping answering without the
 * database; every connection of the service dropped and kept dropped; the lock surviving a restart.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import { startTestApp, type TestApp } from './support/app';
import { usePostingApp } from './support/posting-app';
import { assertProblem } from './support/http';
import { FX, countRows, journal } from './support/posting-fixture';
import { parseDatabaseUrl } from '../src/storage/database';

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
