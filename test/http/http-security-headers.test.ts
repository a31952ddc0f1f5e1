/**
 * Security headers (docs/security.md): every answer under /api/v3 and /api/v2, success and
 * problem alike, refusals decided before any handler included, carries Cache-Control: no-store,
 * X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer, and no X-Powered-By or Server
 * banner; Strict-Transport-Security only with HSTS_MAX_AGE_SECONDS, on requests a trusted proxy
 * says came over TLS; /docs carries a Content-Security-Policy of its own assets only, never
 * framed, and still finds every asset it loads; openapi.yaml declares the headers on every response.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type supertest from 'supertest';
import { startTestApp, type TestApp } from '../support/app';
import { ConfigError, loadConfig } from '../../src/config';

let t: TestApp;
const RATE = 3;

before(async () => {
  t = await startTestApp({ config: { rateLimitPerMinute: RATE, bodyLimitBytes: 1024 } });
});
after(() => t.close());

/** A key of its own per test: the rate limit (RATE a minute) counts per key. */
const freshKey = async (scopes: string[] | null = null) => (await t.services.keys.create('headers', 'integration', undefined, scopes as never)).key;

function assertSecurityHeaders(res: supertest.Response, what: string): void {
  assert.equal(res.headers['cache-control'], 'no-store', `${what}: Cache-Control`);
  assert.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: X-Content-Type-Options`);
  assert.equal(res.headers['referrer-policy'], 'no-referrer', `${what}: Referrer-Policy`);
  assert.equal(res.headers['x-powered-by'], undefined, `${what}: no X-Powered-By`);
  assert.equal(res.headers['server'], undefined, `${what}: no Server banner`);
  assert.equal(res.headers['strict-transport-security'], undefined, `${what}: no HSTS unless configured`);
}

test('a v3 read and a v3 write answer with the security headers and no banner', async () => {
  const key = await freshKey();
  const read = await t.post('/api/v3/parts/query', { select: ['partCode'], page: { pageSize: 1 } }, key);
  assert.equal(read.status, 200);
  assertSecurityHeaders(read, 'read');
  const ping = await t.post('/api/v3/utility/ping', {}, key);
  assert.equal(ping.status, 200);
  assertSecurityHeaders(ping, 'ping');
  const dryRun = await t.http
    .post('/api/v3/ledger-transactions?dryRun=true')
    .set('x-api-key', key)
    .send({
      transactionNumber: 'HDR-1',
      transactionDate: '2026-11-30',
      description: 'headers',
      sourceNumber: 102,
      lines: [
        { lineNumber: 1, ledgerAccount: 7050, debitAmount: 1 },
        { lineNumber: 2, ledgerAccount: 1310, creditAmount: 1 },
      ],
    });
  assert.equal(dryRun.status, 200, JSON.stringify(dryRun.body));
  assertSecurityHeaders(dryRun, 'write (dry run)');
});

test('every refusal decided before a handler carries them too: 401, 403, 404, 405, 413, 415, 429, 400', async () => {
  const refusals: Array<[number, () => Promise<supertest.Response>]> = [
    [401, () => t.http.post('/api/v3/parts/query').send({})],
    [401, async () => t.http.post('/api/v3/parts/query').set('x-api-key', '00000000-0000-4000-8000-000000000000').send({})],
    [403, async () => t.post('/api/v3/parts/query', {}, await freshKey([]))],
    [404, async () => t.post('/api/v3/no-such-entity/query', {}, await freshKey())],
    [404, async () => t.post('/api/v3/nowhere', {}, await freshKey())],
    [405, async () => t.http.get('/api/v3/parts/query').set('x-api-key', await freshKey())],
    [413, async () => t.post('/api/v3/parts/query', { pad: 'x'.repeat(4096) }, await freshKey())],
    [415, async () => t.http.post('/api/v3/parts/query').set('x-api-key', await freshKey()).set('Content-Type', 'text/plain').send('x=1')],
    [400, async () => t.post('/api/v3/parts/query', { bogus: 1 }, await freshKey())],
    [
      429,
      async () => {
        const key = await freshKey();
        for (let i = 0; i < RATE; i += 1) assert.equal((await t.post('/api/v3/utility/ping', {}, key)).status, 200);
        return t.post('/api/v3/utility/ping', {}, key);
      },
    ],
  ];
  for (const [status, send] of refusals) {
    const res = await send();
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
    assertSecurityHeaders(res, `${status} ${res.headers['x-error-code']}`);
  }
});

test('the v2 surface: a read and its refusals carry the same headers', async () => {
  const read = await t.post('/api/v2/query/part', { selectFields: ['partCode'], pageSize: 1 }, await freshKey());
  assert.equal(read.status, 200);
  assertSecurityHeaders(read, 'v2 read');
  const unauthorized = await t.http.post('/api/v2/query/part').send({});
  assert.equal(unauthorized.status, 401);
  assertSecurityHeaders(unauthorized, 'v2 401');
  // v2's legacy rendering of an unknown route (200 with errorCode) and a refused media type.
  const missing = await t.post('/api/v2/nowhere', {}, await freshKey());
  assert.equal(missing.body.errorCode, 'ROUTE_NOT_FOUND');
  assertSecurityHeaders(missing, 'v2 unknown route');
  const media = await t.http.post('/api/v2/query/part').set('x-api-key', await freshKey()).set('Content-Type', 'text/plain').send('x=1');
  assert.equal(media.status, 415);
  assertSecurityHeaders(media, 'v2 415');
});

test('/docs: a Content-Security-Policy of its own assets only, never framed; the page needs nothing it forbids', async () => {
  const page = await t.http.get('/docs');
  assert.equal(page.status, 200);
  const csp = String(page.headers['content-security-policy']);
  const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));
  assert.deepEqual(directives.get('default-src'), ["'none'"]);
  assert.deepEqual(directives.get('script-src'), ["'self'"]);
  assert.deepEqual(directives.get('style-src'), ["'self'"]);
  assert.deepEqual(directives.get('connect-src'), ["'self'"], 'the document is fetched from this service');
  assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
  for (const [name, values] of directives) {
    for (const v of values) assert.ok(["'self'", "'none'", 'data:'].includes(v), `${name} allows only the service itself (got ${v})`);
  }
  assert.equal(page.headers['x-frame-options'], 'DENY');
  assertSecurityHeaders(page, '/docs');
  // What the policy forbids, the page does not use: no inline script, style or handler.
  assert.doesNotMatch(page.text, /<style/i, 'no inline <style>');
  assert.doesNotMatch(page.text, /\sstyle=/i, 'no style attribute');
  assert.doesNotMatch(page.text, /\son[a-z]+=/i, 'no inline event handler');
  for (const script of page.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/gi)) {
    assert.match(script[1]!, /\ssrc="\/docs\//, 'every script is a file of this service');
    assert.equal(script[2]!.trim(), '', 'no inline script body');
  }
  for (const ref of [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)) {
    const asset = await t.http.get(ref).buffer(true);
    assert.equal(asset.status, 200, ref);
    assert.ok(asset.headers['content-security-policy'], `${ref} carries the policy`);
  }
  // Swagger UI's stylesheet draws its icons as data: SVGs (img-src allows data:, nothing remote).
  const css = await t.http.get('/docs/assets/swagger-ui.css');
  assert.match(css.text, /url\("data:image\/svg\+xml/);
  // The reference's static assets are the one cacheable answer (a versioned package's files).
  assert.match(String(css.headers['cache-control']), /max-age=86400/);
  const missing = await t.http.get('/docs/assets/nothing.js');
  assert.equal(missing.status, 404);
  assert.equal(missing.headers['cache-control'], 'no-store', 'a refused asset is not cacheable');
});

test('HSTS: only with HSTS_MAX_AGE_SECONDS, and only on requests a trusted proxy says came over TLS', async () => {
  const behindProxy = await startTestApp({ config: { trustProxy: ['loopback'], hstsMaxAgeSeconds: 31_536_000 } });
  // The same HSTS setting without a trusted proxy (loadConfig refuses it; built here to show an untrusted X-Forwarded-Proto is not believed).
  const noProxy = await startTestApp({ config: { trustProxy: false, hstsMaxAgeSeconds: 31_536_000 } });
  try {
    const overTls = await behindProxy.http.post('/api/v3/utility/ping').set('x-api-key', behindProxy.apiKey).set('X-Forwarded-Proto', 'https').send({});
    assert.equal(overTls.status, 200);
    assert.equal(overTls.headers['strict-transport-security'], 'max-age=31536000');
    const refused = await behindProxy.http.post('/api/v3/utility/ping').set('X-Forwarded-Proto', 'https').send({});
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['strict-transport-security'], 'max-age=31536000', 'on problem documents too');
    const plain = await behindProxy.http.post('/api/v3/utility/ping').set('x-api-key', behindProxy.apiKey).send({});
    assert.equal(plain.headers['strict-transport-security'], undefined, 'never over plain HTTP (RFC 6797 8.1)');
    const untrusted = await noProxy.http.post('/api/v3/utility/ping').set('x-api-key', noProxy.apiKey).set('X-Forwarded-Proto', 'https').send({});
    assert.equal(untrusted.headers['strict-transport-security'], undefined, 'X-Forwarded-Proto from an untrusted hop is ignored');
  } finally {
    await behindProxy.close();
    await noProxy.close();
  }
});

test('TRUST_PROXY and HSTS_MAX_AGE_SECONDS are validated at start', () => {
  assert.equal(loadConfig({}).trustProxy, false);
  assert.equal(loadConfig({}).hstsMaxAgeSeconds, 0);
  assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
  assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
  assert.deepEqual(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8, 192.0.2.7' }).trustProxy, ['loopback', '10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
  for (const bad of ['proxy.example', '10.0.0.0/33', '10.0.0.1/8/1', '300.1.1.1', '99']) {
    assert.throws(() => loadConfig({ TRUST_PROXY: bad }), (err: unknown) => err instanceof ConfigError && /TRUST_PROXY/.test(err.message), bad);
  }
  assert.equal(loadConfig({ TRUST_PROXY: 'loopback', HSTS_MAX_AGE_SECONDS: '31536000' }).hstsMaxAgeSeconds, 31_536_000);
  assert.throws(() => loadConfig({ HSTS_MAX_AGE_SECONDS: '31536000' }), /HSTS_MAX_AGE_SECONDS needs TRUST_PROXY/);
  assert.throws(() => loadConfig({ TRUST_PROXY: 'true', HSTS_MAX_AGE_SECONDS: '-1' }), /HSTS_MAX_AGE_SECONDS/);
});

test('openapi.yaml declares the security headers on every response of every operation', () => {
  const doc = parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));
  const resolve = (r: any) => (r.$ref ? doc.components.responses[String(r.$ref).split('/').pop()!] : r);
  const expected = {
    'Cache-Control': '#/components/headers/CacheControl',
    'X-Content-Type-Options': '#/components/headers/XContentTypeOptions',
    'Referrer-Policy': '#/components/headers/ReferrerPolicy',
    'Strict-Transport-Security': '#/components/headers/StrictTransportSecurity',
  };
  let checked = 0;
  for (const [p, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
        const headers = resolve(response).headers ?? {};
        for (const [name, ref] of Object.entries(expected)) assert.equal(headers[name]?.$ref, ref, `${method} ${p} ${status} declares ${name}`);
        checked += 1;
      }
    }
  }
  assert.ok(checked > 1000, `every response checked (${checked})`);
  assert.deepEqual(doc.components.headers.CacheControl.schema.enum, ['no-store']);
});
