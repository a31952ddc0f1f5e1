/**
 * API keys: the three 401 cases answer the same body, a switched-off key gets 503 with the
 * operator's reason and Retry-After 300, a revoked key 401, keys are stored hashed only, and a
 * key over its rate gets 429 RATE_LIMITED with Retry-After.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';
import { assertProblem } from '../support/http';
import { RateLimiter } from '../../src/http/middleware/rate-limit';

let t: TestApp;
useTestApp((app) => (t = app));

test('missing, non-UUID and unknown x-api-key all give 401 UNAUTHORIZED with the same body', async () => {
  const missing = await t.http.post('/api/v3/utility/ping');
  const notUuid = await t.http.post('/api/v3/utility/ping').set('x-api-key', 'not-a-uuid');
  const unknown = await t.http.post('/api/v3/utility/ping').set('x-api-key', randomUUID());
  const bodies = [missing, notUuid, unknown].map((res) => assertProblem(res, 'UNAUTHORIZED', '/api/v3/utility/ping'));
  const strip = (b: Record<string, any>) => {
    const { correlationId: _c, instance: _i, ...rest } = b;
    return rest;
  };
  assert.deepEqual(strip(bodies[1]!), strip(bodies[0]!));
  assert.deepEqual(strip(bodies[2]!), strip(bodies[0]!));
  // Every 401 carries its challenge (RFC 9110: a 401 MUST send WWW-Authenticate).
  assert.equal(missing.headers['www-authenticate'], 'ApiKey header="x-api-key"');
  // Headers tell nothing apart either.
  for (const res of [notUuid, unknown]) {
    assert.equal(res.headers['www-authenticate'], missing.headers['www-authenticate']);
    assert.equal(res.headers['content-length'], missing.headers['content-length']);
  }
  assert.notEqual(bodies[0]!.correlationId, bodies[1]!.correlationId);
});

test('401 comes before routing and body checks (unknown route, bad JSON, wrong method)', async () => {
  assertProblem(await t.http.post('/api/v3/nope'), 'UNAUTHORIZED', '/api/v3/nope');
  assertProblem(await t.http.get('/api/v3/utility/ping'), 'UNAUTHORIZED');
  assertProblem(await t.http.post('/api/v3/utility/lock').set('Content-Type', 'application/json').send('{oops'), 'UNAUTHORIZED');
});

test('a disabled key gets 503 SERVICE_DISABLED with the reason and Retry-After 300; enabled again it works', async () => {
  const { key } = await t.services.keys.create('to switch off', 'integration');
  await t.services.keys.setState(key, 'disabled', 'Invoice 2026-11 unpaid: call accounts');
  const res = await t.post('/api/v3/utility/ping', undefined, key);
  const body = assertProblem(res, 'SERVICE_DISABLED', '/api/v3/utility/ping');
  assert.equal(res.headers['retry-after'], '300');
  assert.equal(body.reason, 'Invoice 2026-11 unpaid: call accounts');
  assert.match(body.detail, /Invoice 2026-11 unpaid: call accounts/);
  await t.services.keys.setState(key, 'active', null);
  assert.equal((await t.post('/api/v3/utility/ping', undefined, key)).status, 200);
});

test('a revoked key gets the same 401 as an unknown one', async () => {
  const { key } = await t.services.keys.create('to revoke', 'integration');
  await t.services.keys.setState(key, 'revoked', null);
  const revoked = assertProblem(await t.post('/api/v3/utility/ping', undefined, key), 'UNAUTHORIZED');
  const unknown = assertProblem(await t.post('/api/v3/utility/ping', undefined, randomUUID()), 'UNAUTHORIZED');
  assert.equal(revoked.detail, unknown.detail);
});

test('every 401 carries WWW-Authenticate, on v3 and v2 and before routing', async () => {
  for (const res of [
    await t.http.post('/api/v3/nope'),
    await t.http.post('/api/v3/parts/query').set('x-api-key', randomUUID()).send({}),
    await t.http.post('/api/v2/query/part').set('x-api-key', 'not-a-uuid').send({}),
  ]) {
    assert.equal(res.status, 401, res.text);
    assert.equal(res.headers['www-authenticate'], 'ApiKey header="x-api-key"', res.text);
  }
});

test('keys are accepted case-insensitively and with surrounding spaces', async () => {
  assert.equal((await t.post('/api/v3/utility/ping', undefined, t.apiKey.toUpperCase())).status, 200);
  assert.equal((await t.post('/api/v3/utility/ping', undefined, ` ${t.apiKey} `)).status, 200);
});

test('keys are stored hashed: no column of the apikey table holds a key', async () => {
  const { key } = await t.services.keys.create('plain text check', 'integration');
  const rows: Array<Record<string, unknown>> = await t.knex('apikey').select('*');
  assert.ok(rows.length >= 3);
  const keys = [key, t.apiKey, t.adminKey].map((k) => k.toLowerCase());
  for (const row of rows) {
    for (const [column, value] of Object.entries(row)) {
      const text = String(value ?? '').toLowerCase();
      for (const k of keys) {
        assert.ok(!text.includes(k), `apikey.${column} contains a key in plain text`);
        assert.ok(!text.includes(k.replace(/-/g, '')), `apikey.${column} contains a key without dashes`);
      }
    }
    assert.match(String(row.key_hash), /^[0-9a-f]{64}$/, 'key_hash is a SHA-256 hex digest');
  }
});

test('the request log names the key by id, never the key itself', async () => {
  await t.post('/api/v3/utility/ping');
  const text = JSON.stringify(t.logs);
  assert.ok(!text.toLowerCase().includes(t.apiKey.toLowerCase()), 'the key is not in any log line');
  const line = [...t.logs].reverse().find((l) => l.msg === 'request' && l.operationId === 'ping' && l.status === 200);
  assert.ok(line);
  const [record] = await t.knex('apikey').where({ name: 'test integration' }).select('id');
  assert.equal(line.keyId, record.id);
});

test('a key over its rate gets 429 RATE_LIMITED with Retry-After; other keys are not affected', async () => {
  const limited = await startTestApp({ config: { rateLimitPerMinute: 3 } });
  try {
    for (let i = 0; i < 3; i++) assert.equal((await limited.post('/api/v3/utility/ping')).status, 200, `request ${i + 1}`);
    const res = await limited.post('/api/v3/utility/ping');
    const body = assertProblem(res, 'RATE_LIMITED', '/api/v3/utility/ping');
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 20, `Retry-After ${res.headers['retry-after']}`);
    assert.match(body.detail, /3 requests per minute/);
    // Another key has its own bucket.
    assert.equal((await limited.post('/api/v3/utility/ping', undefined, limited.adminKey)).status, 200);
    // Unauthenticated requests are not counted against (or limited by) any key.
    assertProblem(await limited.http.post('/api/v3/utility/ping'), 'UNAUTHORIZED');
    const metrics = await limited.http.get('/metrics');
    assert.match(metrics.text, /http_requests_total\{operation="ping",status="429"\} 1/);
  } finally {
    await limited.close();
  }
});

test('rate limiting off (0) never limits', async () => {
  const open = await startTestApp({ config: { rateLimitPerMinute: 0 } });
  try {
    for (let i = 0; i < 10; i++) assert.equal((await open.post('/api/v3/utility/ping')).status, 200);
  } finally {
    await open.close();
  }
});

test('rate limiter: token bucket refills at the rate, Retry-After is the wait for one token, memory is bounded', () => {
  let now = 0;
  const limiter = new RateLimiter({ perMinute: 60, maxKeys: 100, now: () => now });
  for (let i = 0; i < 60; i++) assert.equal(limiter.take('a').allowed, true);
  const denied = limiter.take('a');
  assert.equal(denied.allowed, false);
  assert.equal(denied.retryAfterSeconds, 1);
  now += 1000;
  assert.equal(limiter.take('a').allowed, true);
  assert.equal(limiter.take('a').allowed, false);
  for (let i = 0; i < 1000; i++) limiter.take(`k${i}`);
  assert.equal(limiter.size, 100, 'at most maxKeys buckets');
  const slow = new RateLimiter({ perMinute: 2, now: () => 0 });
  slow.take('x');
  slow.take('x');
  assert.equal(slow.take('x').retryAfterSeconds, 30);
});
