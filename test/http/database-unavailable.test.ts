/**
 * The accounting database goes away under a running server (PostgreSQL only: SQLite has no
 * connection to lose; its side is the classification unit test, test/storage/database-errors.test.ts).
 *
 * A TCP proxy (node:net, 127.0.0.1, random port) sits between the app's pool and the test
 * database. Modes: pass; refuse (new connections accepted and closed at once); stopped (the
 * listener closed: ECONNREFUSED); cut (live sockets destroyed mid-request, on a pattern of the
 * SQL the app sends); and the COMMIT of a posting delivered with its answer lost, or lost itself.
 *
 * Asserted through HTTP and through the database (a direct connection, not through the proxy):
 * reads answer 502 DATABASE_UNAVAILABLE problem documents (never 500), also when the API-key
 * lookup is what fails; writes answer 502 (nothing committed) or 504 (COMMIT in flight: outcome
 * unknown), and retried under the same Idempotency-Key once traffic passes again they post exactly
 * once; the server recovers by itself.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { startTestApp, createTestDatabase, TEST_ENGINE, type TestApp } from '../support/app';
import { assertProblem } from '../support/http';
import { countRows, installPostingFixture, journal } from '../support/posting-fixture';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

type Mode = 'pass' | 'refuse';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  /** This connection sent the statement that arms the COMMIT rule. */
  armed: boolean;
  /** The COMMIT is being delivered: keep the upstream half open until the database has read it. */
  delivering: boolean;
}

/** A TCP proxy in front of the database, with faults on demand. */
class FaultyProxy {
  mode: Mode = 'pass';
  port = 0;
  /** Client->database data containing `pattern` cuts its connection there (not forwarded); then the mode becomes `then`. */
  cutOn?: { pattern: string; then: Mode };
  /** On the connection that sent `arm`, the next COMMIT is delivered with its answer lost, or dropped; both sockets die. */
  commitRule?: { arm: string; action: 'deliver' | 'drop' };
  /** How many faults fired (a test that expects one asserts it, so it cannot pass without the fault). */
  fired = 0;
  private server?: net.Server;
  private readonly pairs = new Set<Pair>();

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** The database "stops": new connections are refused (ECONNREFUSED), live ones cut. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.cutAll();
    if (server) await new Promise<void>((r) => server.close(() => r()));
  }

  cutAll(): void {
    for (const pair of [...this.pairs]) this.kill(pair);
  }

  reset(): void {
    this.mode = 'pass';
    this.cutOn = undefined;
    this.commitRule = undefined;
    this.fired = 0;
  }

  private kill(pair: Pair): void {
    this.pairs.delete(pair);
    pair.client.destroy();
    if (!pair.delivering) pair.upstream.destroy();
  }

  private accept(client: net.Socket): void {
    client.on('error', () => undefined);
    if (this.mode === 'refuse') {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.target.port, this.target.host);
    const pair: Pair = { client, upstream, armed: false, delivering: false };
    this.pairs.add(pair);
    upstream.on('error', () => undefined);
    client.on('close', () => this.kill(pair));
    upstream.on('close', () => this.kill(pair));
    upstream.on('data', (chunk: Buffer) => {
      if (!pair.delivering) client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      const cut = this.cutOn;
      if (cut && text.includes(cut.pattern)) {
        this.cutOn = undefined;
        this.mode = cut.then;
        this.fired += 1;
        // A database that stays down takes every live connection with it (an idle pooled one, e.g.
        // the lock re-read's, would otherwise still answer the next request).
        if (cut.then === 'refuse') this.cutAll();
        else this.kill(pair);
        return;
      }
      const rule = this.commitRule;
      if (rule) {
        if (text.includes(rule.arm)) pair.armed = true;
        // knex sends COMMIT as a simple query: 'Q' <len> "COMMIT;\0".
        if (pair.armed && text.includes('COMMIT;')) {
          this.commitRule = undefined;
          this.fired += 1;
          if (rule.action === 'deliver') {
            // The database reads COMMIT (and commits), then EOF; its answer goes nowhere.
            pair.delivering = true;
            upstream.end(chunk);
            setTimeout(() => upstream.destroy(), 2000).unref();
          }
          this.kill(pair);
          return;
        }
      }
      upstream.write(chunk);
    });
  }
}

const PATH = '/api/v3/ledger-transactions';
const DEADLINE_MS = 1500; // the idempotency lease is 2x this: a lost posting's key is taken over after 3 s

let t: TestApp;
let proxy: FaultyProxy;
let direct: Knex;
let drop: () => Promise<void>;

if (TEST_ENGINE !== 'postgres') {
  // Registered on PostgreSQL only (the convention of the suite): nothing to lose on SQLite.
  test('database unavailable: PostgreSQL only (TEST_ENGINE=postgres); SQLite is covered by test/storage/database-errors.test.ts', () => {
    assert.equal(TEST_ENGINE, 'sqlite');
  });
} else {
  before(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    const url = new URL(db.url);
    proxy = new FaultyProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.start();
    const proxied = new URL(db.url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    direct = knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 2 } });
    await installPostingFixture(direct);
    t = await startTestApp({ databaseUrl: proxied.toString(), config: { dbDeadlineMs: DEADLINE_MS } });
  });

  after(async () => {
    await t?.close();
    await proxy?.stop();
    await direct?.destroy();
    await drop?.();
  });

  const read = () => t.post('/api/v3/ledger-accounts/query', { page: { pageSize: 5 } });
  const keyed = (body: unknown, key: string) =>
    t.http.post(PATH).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
  const unexpectedErrors = () => t.logs.filter((l) => l.msg === 'unexpected error').length;
  const journals = (trnnum: string) => countRows(direct, 'lgrtrn', { trnnum });

  function assertUnavailable(res: Awaited<ReturnType<typeof read>>, label: string): void {
    assertProblem(res, 'DATABASE_UNAVAILABLE');
    assert.equal(res.headers['retry-after'], undefined, `${label}: no Retry-After`);
    assert.equal(res.body.errors, undefined, label);
  }

  /** Retries under the same key (as a client would, with a short backoff) until a final answer, bounded. */
  async function retryUntilFinal(body: unknown, key: string, boundMs = 10_000) {
    const seen: number[] = [];
    const end = Date.now() + boundMs;
    for (;;) {
      const res = await keyed(body, key);
      seen.push(res.status);
      if (![409, 502, 504].includes(res.status) || Date.now() > end) return { res, seen };
      await sleep(250);
    }
  }

  test('database stopped or refusing: every route answers 502 DATABASE_UNAVAILABLE (the API-key lookup fails first), never 500; it recovers by itself', async () => {
    assert.equal((await read()).status, 200, 'warm');
    const before = unexpectedErrors();
    try {
      await proxy.stop();
      for (const [label, send] of [
        ['query', () => read()],
        ['match', () => t.post('/api/v3/parts/match', { matchString: 'bolt', matchFields: ['partName'], select: ['id', 'partName'], maxDistance: 1 })],
        ['ping', () => t.post('/api/v3/utility/ping', {})],
        ['write', () => keyed(journal('DU-1'), `k-${randomUUID()}`)],
      ] as const) {
        assertUnavailable(await send(), `stopped: ${label}`);
      }
      assert.equal((await t.http.get('/healthz')).status, 200);
      assert.equal((await t.http.get('/readyz')).status, 503);

      // Accepted and closed at once (the server going down, a full pg_hba): the same answer.
      await proxy.start();
      proxy.mode = 'refuse';
      assertUnavailable(await read(), 'refuse: query');
      assertUnavailable(await keyed(journal('DU-1'), `k-${randomUUID()}`), 'refuse: write');
    } finally {
      proxy.reset();
      if (!proxy.port) await proxy.start();
    }
    // Back without a restart.
    assert.equal((await read()).status, 200);
    assert.equal((await t.post('/api/v3/utility/ping', {})).status, 200);
    assert.equal((await t.http.get('/readyz')).status, 200);
    assert.equal(unexpectedErrors(), before, 'no 500 was logged');
    assert.equal(await journals('DU-1'), 0);
  });

  test('the connection cut mid-request after the API-key lookup: query, match and ping answer 502, the next request 200', async () => {
    const before = unexpectedErrors();
    for (const [label, pattern, send] of [
      ['query', 'lgract', () => read()],
      ['match', 'tkfprt', () => t.post('/api/v3/parts/match', { matchString: 'bolt', matchFields: ['partName'], select: ['id', 'partName'], maxDistance: 1 })],
      ['ping', 'select 1 as ok', () => t.post('/api/v3/utility/ping', {})],
    ] as const) {
      proxy.reset();
      proxy.cutOn = { pattern, then: 'pass' };
      assertUnavailable(await send(), `cut: ${label}`);
      assert.equal(proxy.fired, 1, `${label}: the cut happened`);
      const again = await send();
      assert.equal(again.status, 200, `${label} recovers: ${again.text}`);
    }
    assert.equal(unexpectedErrors(), before);
  });

  test('a write cut before COMMIT answers 502 DATABASE_UNAVAILABLE and gives its key back; the retry posts exactly once', async () => {
    const key = `k-${randomUUID()}`;
    proxy.reset();
    proxy.cutOn = { pattern: 'insert into "lgrtrn"', then: 'pass' };
    const first = await keyed(journal('DU-2'), key);
    assertUnavailable(first, 'cut before COMMIT');
    // Nothing committed and the key is given back: nothing happened to the write, no Idempotency-Status.
    assert.equal(first.headers['idempotency-status'], undefined);
    assert.equal(proxy.fired, 1);
    assert.equal(await journals('DU-2'), 0, 'nothing committed');
    // Given back in the background (the DELETE waits for the lost transaction's row lock).
    for (let i = 0; i < 40 && (await countRows(direct, 'idmkey', { idem_key: key })) > 0; i += 1) await sleep(25);
    assert.equal(await countRows(direct, 'idmkey', { idem_key: key }), 0, 'the key was given back');

    const retry = await keyed(journal('DU-2'), key);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.headers['idempotency-status'], 'applied');
    const replay = await keyed(journal('DU-2'), key);
    assert.equal(replay.status, 200);
    assert.equal(replay.headers['idempotency-status'], 'replayed');
    assert.equal(await journals('DU-2'), 1);
  });

  test('a write cut before COMMIT while the database stays down: 502; once it is back the retry posts exactly once', async () => {
    const key = `k-${randomUUID()}`;
    proxy.reset();
    proxy.cutOn = { pattern: 'insert into "lgrtrn"', then: 'refuse' };
    assertUnavailable(await keyed(journal('DU-3'), key), 'cut, then down');
    assert.equal(proxy.fired, 1);
    assertUnavailable(await keyed(journal('DU-3'), key), 'still down');
    proxy.reset();
    // The key could not be given back while down: in flight until its lease expires, then taken over.
    const { res, seen } = await retryUntilFinal(journal('DU-3'), key);
    assert.equal(res.status, 200, `${seen.join(',')}: ${res.text}`);
    assert.ok(seen.every((s) => s === 200 || s === 409), `only in-flight answers before the success: ${seen.join(',')}`);
    assert.equal(await journals('DU-3'), 1);
    assert.equal((await keyed(journal('DU-3'), key)).headers['idempotency-status'], 'replayed');
    assert.equal(await journals('DU-3'), 1);
  });

  test('COMMIT reached the database but its answer was lost: 504 UPSTREAM_TIMEOUT; the retry replays the posting, one journal', async () => {
    const key = `k-${randomUUID()}`;
    proxy.reset();
    proxy.commitRule = { arm: 'insert into "lgrtrn"', action: 'deliver' };
    const first = await keyed(journal('DU-4'), key);
    const problem = assertProblem(first, 'UPSTREAM_TIMEOUT');
    assert.match(problem.detail, /COMMIT/);
    assert.match(problem.detail, /unknown/);
    assert.equal(proxy.fired, 1);
    const { res, seen } = await retryUntilFinal(journal('DU-4'), key);
    assert.equal(res.status, 200, `${seen.join(',')}: ${res.text}`);
    assert.equal(res.headers['idempotency-status'], 'replayed', 'the committed posting, not a second one');
    assert.equal(res.body.document.transactionNumber, 'DU-4');
    assert.equal(await journals('DU-4'), 1);
    const record = await direct('idmkey').where({ idem_key: key }).first();
    assert.equal(record.state, 'completed');
    assert.equal(Number(record.status_code), 200);
  });

  test('COMMIT lost with the connection: 504, the key recorded unknown; retries answer 504 until its lease expires, then the posting is made once', async () => {
    const key = `k-${randomUUID()}`;
    proxy.reset();
    proxy.commitRule = { arm: 'insert into "lgrtrn"', action: 'drop' };
    const first = await keyed(journal('DU-5'), key);
    assertProblem(first, 'UPSTREAM_TIMEOUT');
    assert.equal(proxy.fired, 1);
    assert.equal(await journals('DU-5'), 0, 'nothing committed');
    // Recorded unknown (the write engine does that after answering).
    let record;
    for (let i = 0; i < 40; i += 1) {
      record = await direct('idmkey').where({ idem_key: key }).first();
      if (record?.state === 'unknown') break;
      await sleep(50);
    }
    assert.equal(record?.state, 'unknown');
    assert.equal(Number(record.status_code), 504);
    const during = await keyed(journal('DU-5'), key);
    assertProblem(during, 'UPSTREAM_TIMEOUT');
    assert.equal(during.headers['idempotency-status'], 'replayed');

    const { res, seen } = await retryUntilFinal(journal('DU-5'), key);
    assert.equal(res.status, 200, `${seen.join(',')}: ${res.text}`);
    assert.equal(res.headers['idempotency-status'], 'applied');
    assert.equal(await journals('DU-5'), 1);
    assert.equal((await keyed(journal('DU-5'), key)).headers['idempotency-status'], 'replayed');
    assert.equal(await journals('DU-5'), 1);
  });

  test('without an Idempotency-Key: cut before COMMIT is 502 with nothing posted; COMMIT in flight is 504 (it did commit)', async () => {
    proxy.reset();
    proxy.cutOn = { pattern: 'insert into "lgrtrn"', then: 'pass' };
    assertUnavailable(await t.post(PATH, journal('DU-6')), 'no key, cut before COMMIT');
    assert.equal(proxy.fired, 1);
    assert.equal(await journals('DU-6'), 0);

    proxy.reset();
    proxy.commitRule = { arm: 'insert into "lgrtrn"', action: 'deliver' };
    const res = await t.post(PATH, journal('DU-7'));
    const problem = assertProblem(res, 'UPSTREAM_TIMEOUT');
    assert.match(problem.detail, /outcome of the write is unknown/);
    assert.equal(proxy.fired, 1);
    await sleep(100);
    assert.equal(await journals('DU-7'), 1, 'the 504 said unknown: it had committed');
    proxy.reset();
    assert.equal((await read()).status, 200);
  });

  test('the contract refuses a NUL byte before any statement (400 naming the field); a data exception the database still raises (class 22) is 400 VALUE_OUT_OF_RANGE, never 500; nothing posted', async () => {
    proxy.reset();
    const before = unexpectedErrors();
    const nul = await keyed(journal('DU-8', { description: 'before\u0000after' }), `k-${randomUUID()}`);
    const refused = assertProblem(nul, 'VALIDATION_FAILED');
    assert.ok(refused.errors.some((e: { field: string }) => e.field === 'description'), JSON.stringify(refused.errors));
    assert.equal(await journals('DU-8'), 0);
    // What slips past the contract and the engine: PostgreSQL refuses a cast inside the posting (22P02).
    t.services.writes.hooks.beforeCommit = async ({ trx }) => {
      await trx.raw("select cast('not a number' as integer)");
    };
    try {
      const key = `k-${randomUUID()}`;
      const res = await keyed(journal('DU-9'), key);
      const body = assertProblem(res, 'VALUE_OUT_OF_RANGE');
      assert.equal(body.errors, undefined, 'PostgreSQL does not name the column of a cast: no field is guessed');
      assert.equal(await journals('DU-9'), 0);
    } finally {
      delete t.services.writes.hooks.beforeCommit;
    }
    assert.equal(unexpectedErrors(), before);
    const ping = await t.post('/api/v3/utility/ping', {});
    assert.equal(ping.status, 200);
  });

  test('while locked, the database stopped: once the key snapshot is older than API_KEY_CACHE_MS the ping answers 502 DATABASE_UNAVAILABLE (not the stale snapshot, not 423 naming the holder); back, it answers locked', async () => {
    proxy.reset();
    const locked = await t.post('/api/v3/utility/lock', { userName: 'db-gone' }, t.adminKey);
    assert.equal(locked.status, 200, locked.text);
    try {
      proxy.mode = 'refuse';
      proxy.cutAll();
      // Decision 0450: a key is never answered from a snapshot older than the bound.
      await sleep(t.services.config.apiKeyCacheMs + 50);
      const before = unexpectedErrors();
      const res = await t.post('/api/v3/utility/ping', {});
      assertUnavailable(res, 'ping while locked, database gone');
      assert.equal(res.body.lockUser, undefined, 'the holder is not named to a key that could not be checked');
      assert.equal(unexpectedErrors(), before);
      proxy.mode = 'pass';
      const end = Date.now() + 5000;
      let back = await t.post('/api/v3/utility/ping', {});
      while (back.status !== 200 && Date.now() < end) {
        await sleep(50);
        back = await t.post('/api/v3/utility/ping', {});
      }
      assert.equal(back.status, 200, back.text);
      assert.equal(back.body.status, 'locked');
    } finally {
      proxy.reset();
      assert.equal((await t.post('/api/v3/utility/un-lock', { userName: 'db-gone' }, t.adminKey)).status, 200);
    }
    assert.equal((await read()).status, 200);
  });
}
