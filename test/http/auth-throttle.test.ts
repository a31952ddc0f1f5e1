/**
 * Failed authentication is throttled per client address (AUTH_FAILURES_PER_MINUTE; OWASP API2):
 * after the bound of unknown, revoked, malformed or disabled keys from one address, that address
 * is answered 429 AUTH_THROTTLED with Retry-After until its window passes, and those answers cost
 * no key lookup; valid keys from the same address, and other addresses, are not affected. Real
 * sockets from two loopback addresses (127.0.0.1 and 127.0.0.2: the client socket is bound with
 * localAddress); X-Forwarded-For is believed only when TRUST_PROXY says so; with WORKERS=2 each
 * worker counts its share, so the instance as a whole allows the bound. On SQLite and PostgreSQL
 * (TEST_ENGINE): the active-key set is read from `apikey`.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { startTestApp, createTestDatabase, type TestApp } from '../support/app';
import { spawnCluster } from '../support/cluster-process';
import { serveOnLoopback } from '../support/net';
import { AuthFailureThrottle, throttleAddress } from '../../src/http/middleware/auth-throttle';
import { problemTypeUri } from '../../src/errors/registry';
import { parseDatabaseUrl } from '../../src/storage/database';
import { ACTIVE_KEYS_REREAD_MS, ApiKeyRepository } from '../../src/storage/api-keys';
import { perWorkerRate } from '../../src/http/middleware/rate-limit';

const LIMIT = 5;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** POST /api/v3/utility/ping on a fresh connection from `localAddress`. */
function ping(port: number, options: { localAddress?: string; key?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', ...options.headers };
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/v3/utility/ping', agent: false, localAddress: options.localAddress, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

// All interfaces of the loopback range: 127.0.0.2 reaches a server bound to 127.0.0.1 too, but this is what production does.
const listen = (t: TestApp) => serveOnLoopback(t.app);

function assertThrottled(res: Answer, what: string): void {
  assert.equal(res.status, 429, `${what}: ${JSON.stringify(res.body)}`);
  assert.equal(res.headers['x-error-code'], 'AUTH_THROTTLED', what);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.equal(res.body.type, problemTypeUri('AUTH_THROTTLED'));
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${what}: Retry-After ${res.headers['retry-after']} within the minute`);
  assert.equal(res.headers['cache-control'], 'no-store');
}

let t: TestApp;
let server: { port: number; close: () => Promise<void> };

before(async () => {
  t = await startTestApp({ config: { authFailuresPerMinute: LIMIT } });
  server = await listen(t);
});
after(async () => {
  await server?.close();
  await t?.close();
});

test(`after ${LIMIT} unknown keys from 127.0.0.2 that address gets 429 AUTH_THROTTLED without a key lookup; its valid key and 127.0.0.1 are not affected`, async () => {
  const from2 = { localAddress: '127.0.0.2' };
  for (let i = 0; i < LIMIT; i += 1) {
    const res = await ping(server.port, { ...from2, key: randomUUID() });
    assert.equal(res.status, 401, `guess ${i + 1} is answered 401`);
  }
  // Only SQL touching apikey counts; a throttled request must not look its key up.
  const lookups: string[] = [];
  const onQuery = (q: { sql: string }) => {
    if (/apikey/i.test(q.sql)) lookups.push(q.sql);
  };
  t.knex.on('query', onQuery);
  const started = Date.now();
  try {
    for (let i = 0; i < 30; i += 1) assertThrottled(await ping(server.port, { ...from2, key: randomUUID() }), `guess ${LIMIT + i + 1}`);
    assertThrottled(await ping(server.port, from2), 'no key at all from the throttled address');
    assertThrottled(await ping(server.port, { ...from2, key: 'not-a-uuid' }), 'a malformed key');
  } finally {
    t.knex.off('query', onQuery);
  }
  assert.equal(lookups.filter((sql) => /where\s.*key_hash/i.test(sql)).length, 0, `no key lookup while throttled: ${lookups.join(' | ')}`);
  // The active keys are read at most once per ACTIVE_KEYS_REREAD_MS, whatever the number of requests.
  const reads = 1 + Math.floor((Date.now() - started) / ACTIVE_KEYS_REREAD_MS);
  assert.ok(lookups.length <= reads, `at most ${reads} read(s) of the active keys for 32 throttled requests (${lookups.length})`);

  // A valid key from the throttled address goes on working; so does every key from 127.0.0.1.
  const valid = await ping(server.port, { ...from2, key: t.apiKey });
  assert.equal(valid.status, 200, JSON.stringify(valid.body));
  const other = await ping(server.port, { localAddress: '127.0.0.1', key: randomUUID() });
  assert.equal(other.status, 401, 'another address still gets its 401');
  assert.equal((await ping(server.port, { localAddress: '127.0.0.1', key: t.apiKey })).status, 200);
  // Still throttled after the valid request (a success does not reset the count).
  assertThrottled(await ping(server.port, { ...from2, key: randomUUID() }), 'after a valid request');
});

test('disabled, revoked and malformed keys count; a request without a key does not; a key created after the throttle began works at once', async () => {
  const disabled = (await t.services.keys.create('throttle disabled', 'integration')).key;
  await t.services.keys.setState(disabled, 'disabled', 'throttle test');
  const revoked = (await t.services.keys.create('throttle revoked', 'integration')).key;
  await t.services.keys.setState(revoked, 'revoked', null);
  const from3 = { localAddress: '127.0.0.3' };
  const answers = [];
  for (const key of [disabled, disabled, revoked, 'nope', disabled]) answers.push((await ping(server.port, { ...from3, key })).status);
  assert.deepEqual(answers, [503, 503, 401, 401, 503]);
  assertThrottled(await ping(server.port, { ...from3, key: disabled }), 'the disabled key once over the bound');

  const from4 = { localAddress: '127.0.0.4' };
  for (let i = 0; i < LIMIT * 3; i += 1) assert.equal((await ping(server.port, from4)).status, 401, 'no key: never throttled by itself');

  // The active-key set was read by the throttled requests above; a key created through this process is known at once.
  const fresh = (await t.services.keys.create('throttle fresh', 'integration')).key;
  assert.equal((await ping(server.port, { ...from3, key: fresh })).status, 200);
});

test('while the maintenance lock is held (no pool), a throttled address still gets through with an active key: the lock snapshot is the set', async () => {
  const from7 = { localAddress: '127.0.0.7' };
  for (let i = 0; i < LIMIT; i += 1) assert.equal((await ping(server.port, { ...from7, key: randomUUID() })).status, 401);
  // Created before the lock (the set of active keys is emptied by it), used only once locked.
  const lockedKey = (await t.services.keys.create('throttle while locked', 'integration')).key;
  assert.equal((await t.post('/api/v3/utility/lock', { userName: 'throttle' }, t.adminKey)).status, 200);
  try {
    assert.equal(t.services.lock.poolStats().exists, false, 'the pool is dropped');
    const ok = await ping(server.port, { ...from7, key: lockedKey });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.status, 'locked');
    assertThrottled(await ping(server.port, { ...from7, key: randomUUID() }), 'an unknown key while locked');
  } finally {
    assert.equal((await t.post('/api/v3/utility/un-lock', { userName: 'throttle' }, t.adminKey)).status, 200);
  }
});

test('TRUST_PROXY off (default): X-Forwarded-For is not believed, so rotating it does not escape the throttle', async () => {
  const from5 = { localAddress: '127.0.0.5' };
  for (let i = 0; i < LIMIT; i += 1) {
    assert.equal((await ping(server.port, { ...from5, key: randomUUID(), headers: { 'X-Forwarded-For': `203.0.113.${i + 1}` } })).status, 401);
  }
  assertThrottled(await ping(server.port, { ...from5, key: randomUUID(), headers: { 'X-Forwarded-For': '203.0.113.99' } }), 'a new X-Forwarded-For');
});

test('TRUST_PROXY=loopback: the address X-Forwarded-For names is the client; the proxy itself is not throttled for it', async () => {
  const proxied = await startTestApp({ config: { authFailuresPerMinute: LIMIT, trustProxy: ['loopback'] } });
  const s = await listen(proxied);
  try {
    const as = (client: string, key: string = randomUUID()) => ping(s.port, { localAddress: '127.0.0.6', key, headers: { 'X-Forwarded-For': client } });
    for (let i = 0; i < LIMIT; i += 1) assert.equal((await as('203.0.113.7')).status, 401);
    assertThrottled(await as('203.0.113.7'), 'the client behind the proxy');
    assert.equal((await as('203.0.113.7', proxied.apiKey)).status, 200, 'its valid key works');
    assert.equal((await as('203.0.113.8')).status, 401, 'another client behind the same proxy is not throttled');
    assert.equal((await ping(s.port, { localAddress: '127.0.0.6', key: randomUUID() })).status, 401, 'nor the proxy address itself');
    // The left-most untrusted hop counts: a client cannot pick its address by prepending to the header.
    assertThrottled(await as('198.51.100.1, 203.0.113.7'), 'a spoofed hop before the real client');
  } finally {
    await s.close();
    await proxied.close();
  }
});

test('the window: throttled until a minute after the first failure, Retry-After counts down, then a new count', () => {
  let now = 1_000_000;
  const throttle = new AuthFailureThrottle({ failuresPerMinute: 3, now: () => now });
  assert.equal(throttle.retryAfterSeconds('a'), 0);
  throttle.fail('a');
  now += 10_000;
  throttle.fail('a');
  assert.equal(throttle.retryAfterSeconds('a'), 0, 'under the bound');
  throttle.fail('a');
  assert.equal(throttle.retryAfterSeconds('a'), 50, 'the window opened 10 s ago');
  assert.equal(throttle.retryAfterSeconds('b'), 0, 'per address');
  now += 49_500;
  assert.equal(throttle.retryAfterSeconds('a'), 1);
  now += 500;
  assert.equal(throttle.retryAfterSeconds('a'), 0, 'the window passed');
  throttle.fail('a');
  assert.equal(throttle.retryAfterSeconds('a'), 0, 'a new window, one failure');
  assert.equal(new AuthFailureThrottle({ failuresPerMinute: 0 }).enabled, false, '0 switches it off');
  const bounded = new AuthFailureThrottle({ failuresPerMinute: 1, maxAddresses: 2, now: () => now });
  for (const a of ['x', 'y', 'z']) bounded.fail(a);
  assert.equal(bounded.size, 2, 'memory is bounded');
  assert.equal(bounded.retryAfterSeconds('x'), 0, 'the least recently failing address was dropped');
});

test('client addresses: IPv4-mapped IPv6 as IPv4, IPv6 by its /64', () => {
  assert.equal(throttleAddress('::ffff:127.0.0.2'), '127.0.0.2');
  assert.equal(throttleAddress('203.0.113.7'), '203.0.113.7');
  assert.equal(throttleAddress('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.equal(throttleAddress('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
  assert.equal(throttleAddress('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(throttleAddress('::1'), '0:0:0:0::/64');
  assert.equal(throttleAddress('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(throttleAddress(undefined), 'unknown');
});

test('AUTH_FAILURES_PER_MINUTE: 60 by default, 0 switches it off, a bad value names the variable; a worker gets its share', async () => {
  const { loadConfig } = await import('../../src/config');
  assert.equal(loadConfig({}).authFailuresPerMinute, 60);
  assert.equal(loadConfig({ AUTH_FAILURES_PER_MINUTE: '0' }).authFailuresPerMinute, 0);
  assert.throws(() => loadConfig({ AUTH_FAILURES_PER_MINUTE: 'many' }), /AUTH_FAILURES_PER_MINUTE/);
  assert.equal(perWorkerRate(60, 2), 30);
});

test('WORKERS=2: each worker counts its share, so one address gets at most the bound of 401s from the instance, then only 429; its valid key still works', async (tc) => {
  const db = await createTestDatabase();
  const knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 1 }).config);
  const apiKey = randomUUID();
  const bound = 10;
  let cluster: Awaited<ReturnType<typeof spawnCluster>> | undefined;
  try {
    await new ApiKeyRepository(knex).ensure(apiKey, 'throttle cluster', 'integration');
    cluster = await spawnCluster({ databaseUrl: db.url, workers: 2, env: { AUTH_FAILURES_PER_MINUTE: String(bound), LOG_LEVEL: 'warn' } });
    const statuses: number[] = [];
    // One fresh connection each: the primary spreads them over both workers, though not always
    // evenly (a worker that took longer to start gets its share later), so guess until the
    // instance has answered its whole bound of 401s, or many times over it.
    const guess = async () => statuses.push((await ping(cluster!.port, { localAddress: '127.0.0.2', key: randomUUID() })).status);
    while (statuses.filter((s) => s === 401).length < bound && statuses.length < 10 * bound) await guess();
    const unauthorized = statuses.filter((s) => s === 401).length;
    tc.diagnostic(`answers: ${statuses.join(' ')}`);
    assert.equal(unauthorized, bound, `the instance answered its bound of ${bound} guesses with 401 (got ${unauthorized}: ${statuses.join(' ')})`);
    const before = statuses.length;
    for (let i = 0; i < 2 * bound; i += 1) await guess();
    assert.deepEqual(statuses.slice(before), Array(2 * bound).fill(429), `then every worker refuses the address: ${statuses.join(' ')}`);
    assert.equal(statuses.filter((s) => s === 401).length, bound, 'never more than the bound');
    for (let i = 0; i < 4; i += 1) assert.equal((await ping(cluster.port, { localAddress: '127.0.0.2', key: apiKey })).status, 200, 'the valid key, on either worker');
    assert.equal((await ping(cluster.port, { localAddress: '127.0.0.1', key: randomUUID() })).status, 401, 'another address');
  } finally {
    await cluster?.kill();
    await knex.destroy();
    await db.drop();
  }
});
