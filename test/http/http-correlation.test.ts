/**
 * Every response carries X-Correlation-Id (also those rejected before any handler), problem
 * bodies repeat it, a valid traceparent is adopted and logged, an invalid or missing one gets a
 * new trace id, and each request is one log line with the fields operators need.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';
import { UUID_RE, rawRequest } from '../support/http';
import { countRows, installPostingFixture, journal } from '../support/posting-fixture';

let t: TestApp;
useTestApp((app) => (t = app), { config: { bodyLimitBytes: 2048 } });

function requestLine(correlationId: string): Record<string, any> {
  const lines = t.logs.filter((l) => l.msg === 'request' && l.correlationId === correlationId);
  assert.equal(lines.length, 1, `exactly one request log line for ${correlationId}`);
  return lines[0]!;
}

test('every response carries a fresh X-Correlation-Id, and problem bodies repeat it', async () => {
  const cases: Array<[string, () => PromiseLike<{ status: number; headers: Record<string, any>; body: any }>]> = [
    ['200 ping', () => t.post('/api/v3/utility/ping')],
    ['401 missing key', () => t.http.post('/api/v3/utility/ping')],
    ['401 unknown key', () => t.http.post('/api/v3/utility/ping').set('x-api-key', randomUUID())],
    ['404 unknown route', () => t.post('/api/v3/nope', {})],
    ['404 outside the API', () => t.http.get('/nope')],
    ['405 wrong method', () => t.http.get('/api/v3/utility/ping').set('x-api-key', t.apiKey)],
    ['400 malformed JSON', () => t.http.post('/api/v3/utility/lock').set('x-api-key', t.adminKey).set('Content-Type', 'application/json').send('{')],
    ['400 validation', () => t.post('/api/v3/utility/lock', { userName: 'a', bogus: 1 }, t.adminKey)],
    ['413 too large', () => t.post('/api/v3/utility/lock', { userName: 'x'.repeat(3000) }, t.adminKey)],
    ['415 text/plain', () => t.http.post('/api/v3/utility/lock').set('x-api-key', t.adminKey).set('Content-Type', 'text/plain').send('x')],
    ['200 healthz', () => t.http.get('/healthz')],
    ['200 readyz', () => t.http.get('/readyz')],
    ['200 metrics', () => t.http.get('/metrics')],
    ['200 openapi.json', () => t.http.get('/openapi.json')],
    ['200 docs', () => t.http.get('/docs')],
    ['405 healthz', () => t.http.post('/healthz')],
  ];
  const seen = new Set<string>();
  for (const [label, send] of cases) {
    const res = await send();
    const id = res.headers['x-correlation-id'];
    assert.match(String(id), UUID_RE, `${label}: X-Correlation-Id`);
    assert.ok(!seen.has(id), `${label}: a new id per request`);
    seen.add(id);
    if (res.status >= 400) {
      assert.equal(res.body.correlationId, id, `${label}: body.correlationId`);
      assert.ok(res.headers['x-error-code'], `${label}: X-Error-Code`);
    }
  }
});

test('a body without Content-Type (415) and a raw malformed request still get a correlation id', async () => {
  const res = await rawRequest(t.app, { method: 'POST', path: '/api/v3/utility/lock', headers: { 'x-api-key': t.adminKey }, body: '{"userName":"x"}' });
  assert.equal(res.status, 415);
  assert.match(String(res.headers['x-correlation-id']), UUID_RE);
  assert.equal(res.body.correlationId, res.headers['x-correlation-id']);
});

test('a valid traceparent is adopted and logged with the request', async () => {
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const res = await t.post('/api/v3/utility/ping').set('traceparent', traceparent);
  assert.equal(res.status, 200);
  const line = requestLine(String(res.headers['x-correlation-id']));
  assert.equal(line.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.equal(line.traceparent, traceparent);
});

test('an invalid or missing traceparent gets a new trace id', async () => {
  const invalid = [
    'garbage',
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01', // all-zero trace id
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', // all-zero parent id
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // forbidden version
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', // upper case
  ];
  const traceIds = new Set<string>();
  for (const header of [...invalid, undefined]) {
    const req = t.post('/api/v3/utility/ping');
    if (header) req.set('traceparent', header);
    const res = await req;
    assert.equal(res.status, 200, `traceparent ${header} does not fail the request`);
    const line = requestLine(String(res.headers['x-correlation-id']));
    assert.match(line.traceId, /^[0-9a-f]{32}$/);
    assert.notEqual(line.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.notEqual(line.traceId, '0'.repeat(32));
    assert.equal(line.traceparent, undefined);
    traceIds.add(line.traceId);
  }
  assert.equal(traceIds.size, invalid.length + 1, 'a new trace id each time');
});

test('an invalid traceparent on a write and on a read starts a new trace, never a 400', async () => {
  await installPostingFixture(t.knex);
  const bad = '00-not-a-trace-context';
  const write = await t.post('/api/v3/ledger-transactions', journal('TP-1')).set('traceparent', bad);
  assert.equal(write.status, 200, write.text);
  assert.equal(write.headers['idempotency-status'], 'applied');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'TP-1' }), 1, 'posted once');
  const read = await t.post('/api/v3/ledger-accounts/query', {}).set('traceparent', 'garbage-' + 'f'.repeat(60));
  assert.equal(read.status, 200, read.text);
  assert.equal(read.headers['idempotency-status'], undefined, 'reads carry no Idempotency-Status');
  for (const res of [write, read]) {
    const line = requestLine(String(res.headers['x-correlation-id']));
    assert.match(line.traceId, /^[0-9a-f]{32}$/);
    assert.equal(line.traceparent, undefined);
  }
});

test('one request log line: correlation id, trace id, method, route, operationId, status, duration, key id', async () => {
  const ok = await t.post('/api/v3/utility/ping');
  const line = requestLine(String(ok.headers['x-correlation-id']));
  assert.equal(line.level, 30);
  assert.equal(line.method, 'POST');
  assert.equal(line.route, '/api/v3/utility/ping');
  assert.equal(line.operationId, 'ping');
  assert.equal(line.status, 200);
  assert.equal(typeof line.durationMs, 'number');
  assert.ok(line.durationMs >= 0);
  assert.match(line.keyId, UUID_RE);
  assert.equal(line.errorCode, undefined);

  const denied = await t.http.post('/api/v3/utility/ping?x=1');
  const deniedLine = requestLine(String(denied.headers['x-correlation-id']));
  assert.equal(deniedLine.status, 401);
  assert.equal(deniedLine.errorCode, 'UNAUTHORIZED');
  assert.equal(deniedLine.operationId, 'ping');
  assert.equal(deniedLine.route, '/api/v3/utility/ping', 'no query string in the route');
  assert.equal(deniedLine.keyId, undefined);

  const unknown = await t.http.get('/what/ever');
  assert.equal(requestLine(String(unknown.headers['x-correlation-id'])).operationId, 'unmatched');
  const health = await t.http.get('/healthz');
  assert.equal(requestLine(String(health.headers['x-correlation-id'])).operationId, 'healthz');
});
