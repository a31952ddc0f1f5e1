/**
 * Routes outside /api/v3: /healthz, /readyz, /metrics, /openapi.yaml, /openapi.json, /docs
 * (offline: every asset served locally, no CDN), and POST /utility/ping.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import type { TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';
import { assertProblem } from '../support/http';
import { DatabaseState } from '../../src/storage/database-state';
import { MIGRATION_NAMES } from '../../db/migration-names';

let t: TestApp;
useTestApp((app) => (t = app));

test('POST /api/v3/utility/ping answers 200 with the measured database round trip', async () => {
  const res = await t.post('/api/v3/utility/ping');
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.equal(res.body.status, 'ok');
  assert.equal(typeof res.body.databaseRoundTripMs, 'number');
  assert.ok(res.body.databaseRoundTripMs > 0 && res.body.databaseRoundTripMs < 5000);
  assert.equal(res.body.engine, t.engine);
  assert.ok(Math.abs(Date.parse(res.body.serverTime) - Date.now()) < 60_000);
  // An empty JSON object is accepted too.
  assert.equal((await t.post('/api/v3/utility/ping', {})).status, 200);
});

test('GET /healthz answers while the process is alive, without a key', async () => {
  const res = await t.http.get('/healthz');
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'ok');
});

test('GET /readyz is 200 when the database answers and every migration is applied, 503 otherwise', async () => {
  const ok = await t.http.get('/readyz');
  assert.equal(ok.status, 200);
  assert.equal(ok.body.status, 'ready');

  const [last] = await t.knex('knex_migrations').orderBy('id', 'desc').limit(1).select('*');
  await t.knex('knex_migrations').where({ id: last.id }).delete();
  try {
    const pending = await t.http.get('/readyz');
    const body = assertProblem(pending, 'SERVICE_UNAVAILABLE', '/readyz');
    assert.match(body.detail, /migration/);
    assert.ok(body.detail.includes(last.name));
  } finally {
    await t.knex('knex_migrations').insert(last);
  }
  assert.equal((await t.http.get('/readyz')).status, 200);

  const state = t.app.locals.opsState as { warming: boolean; draining: boolean };
  state.warming = true;
  assert.match(assertProblem(await t.http.get('/readyz'), 'SERVICE_UNAVAILABLE').detail, /starting/);
  state.warming = false;
  state.draining = true;
  assert.match(assertProblem(await t.http.get('/readyz'), 'SERVICE_UNAVAILABLE').detail, /shutting down/);
  state.draining = false;

  // Readiness asks the service's database state (src/storage/database-state.ts): one over a pool that cannot connect.
  const database = t.services.database;
  t.services.database = new DatabaseState(
    new Proxy(t.services.knex, {
      get(target, prop, receiver) {
        if (prop === 'raw') return () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5432'), { code: 'ECONNREFUSED' }));
        return Reflect.get(target, prop, receiver);
      },
    }),
    MIGRATION_NAMES,
  );
  try {
    const down = await t.http.get('/readyz');
    const body = assertProblem(down, 'SERVICE_UNAVAILABLE');
    assert.match(body.detail, /database is not reachable/);
    assert.doesNotMatch(body.detail, /10\.0\.0\.1/, 'no connection details in the body');
  } finally {
    t.services.database = database;
  }
});

test('GET /readyz stays 200 while the maintenance lock is held (the pool is dropped on purpose)', async () => {
  const locked = await t.post('/api/v3/utility/lock', { userName: 'readyz-test' }, t.adminKey);
  assert.equal(locked.status, 200, locked.text);
  try {
    const res = await t.http.get('/readyz');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.database, 'locked');
    assert.equal(res.body.lockUser, 'readyz-test');
    const metrics = await t.http.get('/metrics');
    assert.equal(metrics.status, 200, 'metrics work without a pool');
  } finally {
    const unlocked = await t.post('/api/v3/utility/un-lock', { userName: 'readyz-test' }, t.adminKey);
    assert.equal(unlocked.status, 200, unlocked.text);
  }
  assert.equal((await t.http.get('/readyz')).body.database, 'ok');
});

test('GET /metrics: request counter and latency histogram by operationId and status, pool gauges, process metrics', async () => {
  await t.post('/api/v3/utility/ping');
  await t.http.post('/api/v3/utility/ping');
  await t.http.get('/no/such/route');
  const res = await t.http.get('/metrics');
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  const text = res.text;
  assert.match(text, /^# TYPE http_requests_total counter$/m);
  assert.match(text, /^http_requests_total\{operation="ping",status="200"\} [1-9]\d*$/m);
  assert.match(text, /^http_requests_total\{operation="ping",status="401"\} [1-9]\d*$/m);
  assert.match(text, /^http_requests_total\{operation="unmatched",status="404"\} [1-9]\d*$/m);
  assert.match(text, /^# TYPE http_request_duration_seconds histogram$/m);
  assert.match(text, /^http_request_duration_seconds_bucket\{le="0\.005",operation="ping",status="200"\} \d+$/m);
  assert.match(text, /^http_request_duration_seconds_count\{operation="ping",status="200"\} [1-9]\d*$/m);
  for (const gauge of ['db_pool_connections_used', 'db_pool_connections_free', 'db_pool_pending_acquires', 'db_pool_pending_creates', 'db_pool_max']) {
    assert.match(text, new RegExp(`^# TYPE ${gauge} gauge$`, 'm'));
    assert.match(text, new RegExp(`^${gauge} \\d+$`, 'm'));
  }
  assert.match(text, /^db_pool_max [1-9]\d*$/m);
  assert.match(text, /^process_cpu_seconds_total /m);
  assert.match(text, /^nodejs_heap_size_used_bytes /m);
  // Label values are operationIds or names of routes, never raw paths.
  for (const m of text.matchAll(/operation="([^"]*)"/g)) assert.match(m[1]!, /^[A-Za-z][A-Za-z0-9]*$/, m[1]);
});

test('GET /openapi.yaml and /openapi.json serve the public document without storage extensions', async () => {
  const yamlRes = await t.http.get('/openapi.yaml');
  assert.equal(yamlRes.status, 200);
  assert.match(String(yamlRes.headers['content-type']), /^application\/yaml/);
  const fromYaml = YAML.parse(yamlRes.text);
  const jsonRes = await t.http.get('/openapi.json');
  assert.equal(jsonRes.status, 200);
  assert.match(String(jsonRes.headers['content-type']), /^application\/json/);
  assert.deepEqual(jsonRes.body, fromYaml, 'the JSON is the YAML document converted');
  assert.equal(jsonRes.body.openapi, '3.1.0');
  assert.equal(jsonRes.body.info.version, '3.0.0');
  assert.ok(jsonRes.body.paths['/utility/ping'].post);
  const extensions: string[] = [];
  const walk = (node: unknown, path: string) => {
    if (Array.isArray(node)) node.forEach((v, i) => walk(v, `${path}[${i}]`));
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (/^x-(entity|table|column|scale|change-stamps|match-fields|parent-column|order-column|filter|storage)/.test(k)) extensions.push(`${path}.${k}`);
        walk(v, `${path}.${k}`);
      }
    }
  };
  walk(jsonRes.body, '$');
  assert.deepEqual(extensions, [], 'no storage extensions in the public document');
  assert.doesNotMatch(jsonRes.text, /"x-(table|column)"/);
});

test('GET /docs renders the reference offline: local assets only, no http(s):// reference', async () => {
  const page = await t.http.get('/docs');
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.doesNotMatch(page.text, /https?:\/\//, 'no absolute URL (CDN) in the page');
  const refs = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(refs.some((r) => r.endsWith('swagger-ui-bundle.js')));
  assert.ok(refs.some((r) => r.endsWith('swagger-ui.css')));
  for (const ref of refs) {
    assert.match(ref, /^\/docs\//, `${ref} is served by this server`);
    const asset = await t.http.get(ref).buffer(true);
    assert.equal(asset.status, 200, ref);
    assert.ok(Number(asset.headers['content-length'] ?? (asset.body as Buffer).length) > 0, `${ref} is not empty`);
    if (ref.endsWith('.js') && !ref.includes('swagger-ui')) {
      assert.doesNotMatch(asset.text, /https?:\/\//, `${ref} references nothing remote`);
      assert.match(asset.text, /url: '\/openapi\.json'/);
      assert.match(asset.text, /validatorUrl: null/, 'no call to the public validator badge service');
    }
  }
  const css = await t.http.get('/docs/assets/swagger-ui.css');
  assert.match(String(css.headers['content-type']), /^text\/css/);
  assert.doesNotMatch(css.text, /@import\s+url\(\s*["']?https?:/, 'the stylesheet imports nothing remote');
  assert.equal((await t.http.get('/docs/')).status, 200);
  assertProblem(await t.http.get('/docs/assets/index.html'), 'ROUTE_NOT_FOUND');
  assertProblem(await t.http.get('/docs/assets/..%2Fpackage.json'), 'ROUTE_NOT_FOUND');
});
