/**
 * Every status the server sends is declared on the operation that sent it. The refusals decided
 * before an operation runs (401, 403 scope, 413, 415, 423, 429 by key and by address, 503) are sent to every operation
 * of openapi.yaml, and the (operation, status) pairs the app's request counter saw are checked
 * against the declarations (test/support/statuses.ts; `make test` runs the same check over the
 * whole suite through STATUS_LOG and scripts/check-statuses.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app';
import { observedStatuses, undeclared } from '../support/statuses';
import { OPERATIONS } from '../../generated/operations';

let t: TestApp;
const RATE = 3;

before(async () => {
  // The failed-key throttle off here: the disabled key's 503 on every operation would turn into
  // 429 AUTH_THROTTLED after 60; the last test checks that 429 on every operation.
  t = await startTestApp({ config: { rateLimitPerMinute: RATE, bodyLimitBytes: 1024, authFailuresPerMinute: 0 } });
});
after(() => t.close());

const freshKey = async (scopes: string[] | null = null) =>
  (await t.services.keys.create('statuses', 'integration', undefined, scopes as never)).key;
const call = (op: (typeof OPERATIONS)[number], key: string | undefined, body: string, type = 'application/json') => {
  const req = t.http.post(`/api/v3${op.path}`).set('Content-Type', type).set('Idempotency-Key', `st-${Math.random()}`);
  if (key) req.set('x-api-key', key);
  return req.send(body);
};

test('the pre-dispatch refusals of every operation are declared on it', async () => {
  const seen = new Map<string, Set<number>>();
  const note = (id: string, status: number) => (seen.get(id) ?? seen.set(id, new Set()).get(id)!).add(status);
  // Checked before the rate limit: one key each serves every operation.
  const unscoped = await freshKey([]);
  const off = await freshKey();
  await t.services.keys.setState(off, 'disabled', 'statuses test');
  // One key per operation for what the rate limit counts (423, 415, 413, then 429 once spent).
  // Created first: while locked the pool is gone (keys are then served from the lock's snapshot).
  const keys = await Promise.all(OPERATIONS.map(() => freshKey()));
  for (const op of OPERATIONS) {
    note(op.operationId, (await call(op, undefined, '{}')).status); // 401
    note(op.operationId, (await call(op, unscoped, '{}')).status); // 403 SCOPE_MISSING (not ping)
    note(op.operationId, (await call(op, off, '{}')).status); // 503
  }
  const admin = t.adminKey;
  assert.equal((await t.post('/api/v3/utility/lock', { userName: 'statuses' }, admin)).status, 200);
  try {
    // 423 while locked (reads and writes; ping, lock and un-lock stay open).
    for (const [i, op] of OPERATIONS.entries()) if (!op.path.startsWith('/utility/')) note(op.operationId, (await call(op, keys[i], '{}')).status);
  } finally {
    assert.equal((await t.post('/api/v3/utility/un-lock', { userName: 'statuses' }, admin)).status, 200);
  }
  for (const [i, op] of OPERATIONS.entries()) {
    note(op.operationId, (await call(op, keys[i], 'x=1', 'text/plain')).status); // 415
    note(op.operationId, (await call(op, keys[i], JSON.stringify({ pad: 'x'.repeat(4096) }))).status); // 413
    for (let n = 0; n < RATE + 2 && !seen.get(op.operationId)!.has(429); n++) note(op.operationId, (await call(op, keys[i], '{}')).status); // 429
  }

  // The test exercised what it claims (so an empty comparison cannot pass it).
  const query = OPERATIONS.find((o) => o.path.endsWith('/query'))!.operationId;
  for (const s of [401, 403, 413, 415, 423, 429, 503]) assert.ok(seen.get(query)?.has(s), `${query} answered ${s}`);
  assert.ok(!seen.get('ping')?.has(403), 'ping needs no scope');

  const observed = await observedStatuses(app().locals.metrics.registry);
  assert.ok(observed.length >= OPERATIONS.length * 5, `the request counter saw the pairs (${observed.length})`);
  assert.deepEqual(undeclared(observed), [], 'statuses sent but not declared');
});

test('429 AUTH_THROTTLED (the failed-key throttle, before any operation) is declared on every operation', async () => {
  const throttled = await startTestApp({ config: { authFailuresPerMinute: 1 } });
  try {
    const unknown = '00000000-0000-4000-8000-000000000000';
    assert.equal((await throttled.post('/api/v3/utility/ping', {}, unknown)).status, 401);
    for (const op of OPERATIONS) {
      const res = await throttled.http.post(`/api/v3${op.path}`).set('Content-Type', 'application/json').set('x-api-key', unknown).send('{}');
      assert.equal(res.headers['x-error-code'], 'AUTH_THROTTLED', `${op.operationId}: ${res.status}`);
    }
    const observed = await observedStatuses(throttled.app.locals.metrics.registry);
    assert.equal(observed.filter((p) => p.status === 429).length, OPERATIONS.length, 'every operation answered 429');
    assert.deepEqual(undeclared(observed), [], 'statuses sent but not declared');
  } finally {
    await throttled.close();
  }
});

test('the check fails on a status an operation does not declare', () => {
  assert.deepEqual(undeclared([{ operationId: 'ping', status: 423 }, { operationId: 'ping', status: 200 }]), ['ping 423']);
  assert.deepEqual(undeclared([{ operationId: 'noSuchOperation', status: 200 }]), ['noSuchOperation 200']);
});

test('scripts/check-statuses.ts exits 1 naming an undeclared pair, 0 when all are declared', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'statuses-'));
  try {
    const run = (lines: string) => {
      fs.writeFileSync(path.join(dir, 'log'), lines);
      return spawnSync(path.resolve(__dirname, '..', '..', 'node_modules', '.bin', 'tsx'), ['scripts/check-statuses.ts', path.join(dir, 'log')], {
        cwd: path.resolve(__dirname, '..', '..'),
        encoding: 'utf8',
      });
    };
    const bad = run('ping 200\nping 423\n');
    assert.equal(bad.status, 1, bad.stderr);
    assert.match(bad.stderr, /ping 423/);
    const good = run('ping 200\nping 415\n');
    assert.equal(good.status, 0, good.stderr);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function app() {
  return t.app;
}
