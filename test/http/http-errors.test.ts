/**
 * Every failure is a problem document with X-Error-Code and X-Correlation-Id: unknown route 404,
 * wrong method 405 with Allow, malformed JSON 400, wrong or missing content type 415, body over
 * the limit 413, redacted 500; HEAD and OPTIONS behave like any other method.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';
import { assertProblem, rawRequest } from '../support/http';

let t: TestApp;
useTestApp((app) => (t = app), { config: { bodyLimitBytes: 4096 } });

test('unknown route under /api/v3 (valid key) is 404 ROUTE_NOT_FOUND', async () => {
  const res = await t.post('/api/v3/no-such-thing/at-all', {});
  assertProblem(res, 'ROUTE_NOT_FOUND', '/api/v3/no-such-thing/at-all');
});

test('unknown route outside /api/v3 is 404 ROUTE_NOT_FOUND, without a key', async () => {
  for (const method of ['get', 'post', 'delete'] as const) {
    const res = await t.http[method]('/nowhere?x=1');
    const body = assertProblem(res, 'ROUTE_NOT_FOUND', '/nowhere');
    assert.equal(body.errors, undefined);
  }
});

test('wrong method on a contract route is 405 METHOD_NOT_ALLOWED with Allow: POST', async () => {
  for (const method of ['get', 'put', 'patch', 'delete'] as const) {
    const res = await t.http[method]('/api/v3/utility/ping').set('x-api-key', t.apiKey);
    assertProblem(res, 'METHOD_NOT_ALLOWED', '/api/v3/utility/ping');
    assert.equal(res.headers.allow, 'POST');
  }
});

test('HEAD and OPTIONS on a contract route are 405 with Allow: POST (headers only for HEAD)', async () => {
  const head = await t.http.head('/api/v3/utility/ping').set('x-api-key', t.apiKey);
  assert.equal(head.status, 405);
  assert.equal(head.headers.allow, 'POST');
  assert.equal(head.headers['x-error-code'], 'METHOD_NOT_ALLOWED');
  assert.ok(head.headers['x-correlation-id']);
  assert.equal(head.text ?? '', '');
  const options = await t.http.options('/api/v3/utility/ping').set('x-api-key', t.apiKey);
  assertProblem(options, 'METHOD_NOT_ALLOWED');
  assert.equal(options.headers.allow, 'POST');
});

test('wrong method on a route outside /api/v3 is 405 with Allow: GET, HEAD; HEAD and GET work', async () => {
  for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.yaml', '/openapi.json', '/docs']) {
    const post = await t.http.post(path);
    assertProblem(post, 'METHOD_NOT_ALLOWED', path);
    assert.equal(post.headers.allow, 'GET, HEAD');
    const options = await t.http.options(path);
    assertProblem(options, 'METHOD_NOT_ALLOWED', path);
    assert.equal(options.headers.allow, 'GET, HEAD');
    const head = await t.http.head(path);
    assert.equal(head.status, 200, `HEAD ${path}`);
  }
});

test('malformed JSON is 400 MALFORMED_JSON', async () => {
  const res = await t.http.post('/api/v3/utility/lock').set('x-api-key', t.adminKey).set('Content-Type', 'application/json').send('{"userName": "x",');
  const body = assertProblem(res, 'MALFORMED_JSON', '/api/v3/utility/lock');
  assert.doesNotMatch(body.detail, /Unexpected|position|SyntaxError/, 'no parser internals in detail');
});

test('a text/plain body is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
  const res = await t.http.post('/api/v3/utility/lock').set('x-api-key', t.adminKey).set('Content-Type', 'text/plain').send('userName=x');
  const body = assertProblem(res, 'UNSUPPORTED_MEDIA_TYPE', '/api/v3/utility/lock');
  assert.match(body.detail, /application\/json/);
});

test('a body without Content-Type is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
  const res = await rawRequest(t.app, {
    method: 'POST',
    path: '/api/v3/utility/lock',
    headers: { 'x-api-key': t.adminKey, 'content-length': '17' },
    body: '{"userName":"x"}\n',
  });
  assertProblem(res, 'UNSUPPORTED_MEDIA_TYPE', '/api/v3/utility/lock');
});

test('a form-encoded body is 415 even on ping, which takes no body', async () => {
  const res = await t.http.post('/api/v3/utility/ping').set('x-api-key', t.apiKey).type('form').send('a=1');
  assertProblem(res, 'UNSUPPORTED_MEDIA_TYPE');
});

test('a required body that is absent is read as {} (decision 0446): 400 naming the field, as an empty JSON object is', async () => {
  const none = await t.http.post('/api/v3/utility/lock').set('x-api-key', t.adminKey);
  const empty = await t.post('/api/v3/utility/lock', {}, t.adminKey);
  for (const res of [none, empty]) {
    const body = assertProblem(res, 'VALIDATION_FAILED');
    assert.deepEqual(
      body.errors.map((e: any) => [e.field, e.code]),
      [['userName', 'required']],
    );
  }
});

test('a body over the limit is 413 PAYLOAD_TOO_LARGE naming the limit', async () => {
  const res = await t.post('/api/v3/utility/lock', { userName: 'x'.repeat(5000) }, t.adminKey);
  const body = assertProblem(res, 'PAYLOAD_TOO_LARGE', '/api/v3/utility/lock');
  assert.match(body.detail, /4096 bytes/);
});

test('an unexpected exception is a redacted 500; the full record is logged under the correlation id', async () => {
  const boundary = t.services.boundary;
  const read = boundary.read;
  const secret = 'select key_hash from apikey where secret_column = 42';
  const boom = new TypeError(`Cannot read properties of undefined (reading 'x') while running ${secret}`);
  // The work inside the on-premise boundary fails with a programming error (not a database refusal).
  boundary.read = ((_work: unknown, options: unknown) => read.call(boundary, async () => Promise.reject(boom), options as never)) as typeof read;
  try {
    const res = await t.post('/api/v3/utility/ping');
    const body = assertProblem(res, 'INTERNAL_ERROR', '/api/v3/utility/ping');
    assert.deepEqual(Object.keys(body).sort(), ['correlationId', 'detail', 'instance', 'status', 'title', 'type']);
    assert.doesNotMatch(res.text, /secret_column|select|TypeError|Cannot read|at .*\.ts/);
    const record = t.logs.find((l) => l.correlationId === body.correlationId && l.err);
    assert.ok(record, 'the error is logged under the correlation id');
    assert.match(JSON.stringify(record.err), /secret_column/, 'the log has the full message');
    assert.ok(record.err.stack, 'the log has the stack');
  } finally {
    boundary.read = read;
  }
});

test('problem documents are valid JSON with only the documented members for client errors', async () => {
  const res = await t.http.get('/api/v3/utility/ping').set('x-api-key', t.apiKey);
  const body = assertProblem(res, 'METHOD_NOT_ALLOWED');
  for (const key of Object.keys(body)) assert.ok(['type', 'title', 'status', 'detail', 'instance', 'correlationId', 'errors'].includes(key), key);
});

test('a compressed body that does not inflate is 400 MALFORMED_JSON, not 500; a valid gzip body is read', async () => {
  for (const encoding of ['gzip', 'deflate', 'br']) {
    const res = await t.http.post('/api/v3/utility/lock').set('x-api-key', t.adminKey).set('Content-Type', 'application/json').set('Content-Encoding', encoding).send('{"userName":"x"}');
    const body = assertProblem(res, 'MALFORMED_JSON', '/api/v3/utility/lock');
    assert.match(body.detail, /could not be read/, encoding);
  }
  // Compression itself is accepted: the same body gzipped is read (an empty object: 400 naming the field, not locked).
  const { gzipSync } = await import('node:zlib');
  const body = gzipSync('{}');
  const gz = await rawRequest(t.app, {
    method: 'POST',
    path: '/api/v3/utility/lock',
    headers: { 'x-api-key': t.adminKey, 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(body.length) },
    body,
  });
  const invalid = assertProblem(gz, 'VALIDATION_FAILED');
  assert.deepEqual(invalid.errors.map((e: any) => e.field), ['userName']);
});
