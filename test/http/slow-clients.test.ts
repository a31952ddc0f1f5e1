/**
 * Slow clients are cut (issue 29): the server startServer builds (also each cluster worker's) sets
 * HEADERS_TIMEOUT_MS and REQUEST_TIMEOUT_MS, and checks them often enough that a client trickling
 * its headers one line a second, or its body, is answered 408 REQUEST_TIMEOUT and disconnected
 * within the bound (plus the check interval), through a raw socket. An idle keep-alive connection
 * between two requests is not cut by them. REQUEST_TIMEOUT_MS must be above DB_DEADLINE_MS.
 */
import test, { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ConfigError, loadConfig } from '../../src/config';
import { startServer, slowClientLimits, type RunningServer } from '../../src/server';
import { createTestDatabase } from '../support/app';
import { spawnCluster } from '../support/cluster-process';
import { secretsEnv } from '../support/secrets';

const HEADERS_TIMEOUT_MS = 2_000;
const REQUEST_TIMEOUT_MS = 3_000;
/** The check interval slowClientLimits picks for HEADERS_TIMEOUT_MS, and room for a busy machine. */
const CHECK_MS = Number(slowClientLimits({ headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS }).connectionsCheckingInterval);
const MARGIN_MS = 3_000;

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let running: RunningServer;

before(async () => {
  db = await createTestDatabase();
  const config = {
    // PostgreSQL refuses to start without SECRETS_KEY (the test key; SQLite makes its key file).
    ...loadConfig({ ...secretsEnv(db.engine), DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'warn', SEED_ON_START: 'false', DB_DEADLINE_MS: '1000', HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) }),
    demoApiKey: '5b0e7d8c-3f7c-4c8e-9a49-1d2f3e4a5b6c',
  };
  const logger = pino({ level: 'warn' }, new Writable({ write: (_c, _e, cb) => cb() }));
  running = await startServer(config, { logger, banner: false, host: '127.0.0.1' });
  // The start-up rehearsals over first: they would hold the event loop the timeouts are checked on.
  await running.ready;
});
after(async () => {
  await running?.close();
  await db?.drop();
});

interface Trickled {
  /** From the first byte written to the server closing the connection. */
  closedAfterMs: number;
  response: string;
  writes: number;
}

/** Writes `first` at once, then one of `then` every `everyMs` (cycling) until the server closes the socket; fails after `giveUpMs`. */
function trickle(port: number, first: string, then: string[], everyMs: number, giveUpMs: number): Promise<Trickled> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let response = '';
    let writes = 0;
    let started = 0;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error(`the server still held the connection after ${giveUpMs} ms (${writes} writes)`));
    }, giveUpMs);
    socket.setEncoding('utf8').on('data', (d: string) => (response += d));
    socket.on('error', () => undefined); // a write racing the server's close
    socket.once('connect', () => {
      started = Date.now();
      socket.write(first);
      writes += 1;
      timer = setInterval(() => {
        if (!socket.destroyed && socket.writable) socket.write(then[writes++ % then.length]!);
      }, everyMs);
    });
    socket.once('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ closedAfterMs: Date.now() - started, response, writes });
    });
  });
}

function assertCut(res: Trickled, boundMs: number, what: string): void {
  assert.ok(res.closedAfterMs >= boundMs - 100, `${what}: not cut before the bound (${res.closedAfterMs} ms)`);
  assert.ok(res.closedAfterMs <= boundMs + CHECK_MS + MARGIN_MS, `${what}: cut within ${boundMs} ms + the ${CHECK_MS} ms check (${res.closedAfterMs} ms)`);
  assert.match(res.response, /^HTTP\/1\.1 408 /, `${what}: answered 408 (${res.response.slice(0, 60)})`);
  assert.match(res.response, /X-Error-Code: REQUEST_TIMEOUT/);
  assert.match(res.response, /Cache-Control: no-store/);
  assert.match(res.response, /"type":"https:\/\/accounting-integration\.example\/problems\/request-timeout"/);
}

// Each of these waits out a bound on its own connection to the one server: they run side by side
// (the sum of their waits was 10 s, the longest is 3 s); the cluster's check below runs alone.
describe('slow clients of one server, side by side', { concurrency: true }, () => {
  test(`a client that trickles its headers a line a second is answered 408 and cut after HEADERS_TIMEOUT_MS (${HEADERS_TIMEOUT_MS} ms)`, async () => {
    const res = await trickle(running.port, 'POST /api/v3/utility/ping HTTP/1.1\r\nHost: x\r\n', ['X-Slow: 1\r\n'], 1000, 15_000);
    assertCut(res, HEADERS_TIMEOUT_MS, 'trickled headers');
    assert.ok(res.writes >= 2, 'it was still sending headers');
  });

  test('a connection that sends nothing is cut after HEADERS_TIMEOUT_MS too', async () => {
    const res = await trickle(running.port, '', [''], 1000, 15_000);
    assert.ok(res.closedAfterMs <= HEADERS_TIMEOUT_MS + CHECK_MS + MARGIN_MS, `closed after ${res.closedAfterMs} ms`);
  });

  test(`a client that trickles its body is answered 408 and cut after REQUEST_TIMEOUT_MS (${REQUEST_TIMEOUT_MS} ms)`, async () => {
    const head = `POST /api/v3/utility/ping HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nx-api-key: 5b0e7d8c-3f7c-4c8e-9a49-1d2f3e4a5b6c\r\n\r\n`;
    const res = await trickle(running.port, head, [' '], 250, 15_000);
    assertCut(res, REQUEST_TIMEOUT_MS, 'trickled body');
  });

  test('an idle keep-alive connection between two requests is not cut by the headers timeout', async () => {
    const socket = net.connect(running.port, '127.0.0.1');
    let data = '';
    socket.setEncoding('utf8').on('data', (d: string) => (data += d));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    const answered = async (n: number) => {
      for (let i = 0; i < 200 && (data.match(/HTTP\/1\.1 200/g) ?? []).length < n; i += 1) await new Promise((r) => setTimeout(r, 25));
      return (data.match(/HTTP\/1\.1 200/g) ?? []).length;
    };
    try {
      socket.write(request);
      assert.equal(await answered(1), 1);
      await new Promise((r) => setTimeout(r, HEADERS_TIMEOUT_MS + CHECK_MS + 500));
      assert.equal(socket.destroyed, false, 'still open after the headers timeout');
      socket.write(request);
      assert.equal(await answered(2), 2, 'the second request is answered on the same connection');
    } finally {
      socket.destroy();
    }
  });
});

test('HEADERS_TIMEOUT_MS and REQUEST_TIMEOUT_MS: defaults 10 s and 60 s; the request timeout above DB_DEADLINE_MS, the headers timeout not above it', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.headersTimeoutMs, 10_000);
  assert.equal(defaults.requestTimeoutMs, 60_000);
  assert.equal(slowClientLimits(defaults).connectionsCheckingInterval, 1000, 'a client is cut within 11 s by default');
  assert.throws(() => loadConfig({ REQUEST_TIMEOUT_MS: '15000' }), (err: unknown) => err instanceof ConfigError && /REQUEST_TIMEOUT_MS must be above DB_DEADLINE_MS/.test(err.message));
  assert.throws(() => loadConfig({ DB_DEADLINE_MS: '70000' }), /REQUEST_TIMEOUT_MS must be above DB_DEADLINE_MS/);
  assert.equal(loadConfig({ DB_DEADLINE_MS: '70000', REQUEST_TIMEOUT_MS: '90000' }).requestTimeoutMs, 90_000);
  assert.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: '50000', REQUEST_TIMEOUT_MS: '40000', DB_DEADLINE_MS: '1000' }), /HEADERS_TIMEOUT_MS must not be above REQUEST_TIMEOUT_MS/);
  assert.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: 'soon' }), /HEADERS_TIMEOUT_MS/);
});

test('WORKERS=2: every worker cuts a trickling client within the bound', async () => {
  const cluster = await spawnCluster({
    databaseUrl: db.url,
    workers: 2,
    env: { LOG_LEVEL: 'warn', HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), DB_DEADLINE_MS: '1000' },
  });
  try {
    // Four connections at once: the primary hands them to both workers.
    const all = await Promise.all([0, 1, 2, 3].map(() => trickle(cluster.port, 'POST /api/v3/utility/ping HTTP/1.1\r\nHost: x\r\n', ['X-Slow: 1\r\n'], 1000, 15_000)));
    for (const [i, res] of all.entries()) assertCut(res, HEADERS_TIMEOUT_MS, `connection ${i + 1}`);
  } finally {
    await cluster.kill();
  }
});
