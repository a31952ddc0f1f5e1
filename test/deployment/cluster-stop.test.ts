/**
 * Stopping the real entry point (src/main.ts) under load, through real sockets, on TEST_ENGINE
 * (docs/deployment.md, "Graceful shutdown"; docs/decisions/0470): every request whose connection
 * was accepted before the stop gets its answer, within SHUTDOWN_GRACE_MS; new connections are
 * refused; keep-alive connections idle after serving are closed at once; a connection accepted
 * whose request comes after the stop is answered with `Connection: close`; every answered posting
 * is posted once and nothing unanswered is posted; the service exits 0.
 * - SIGTERM to the primary (WORKERS=2) and to the one process (WORKERS=1), mid-burst of keyed
 *   postings: node:cluster's scheduling closed the connections still queued in the primary when
 *   every worker had closed its server, and each worker destroyed the connections it had accepted
 *   whose request it had not read yet: postings sent 100 to 300 ms before the signal were reset.
 * - SIGTERM to every process of the group at once (systemd's KillMode=control-group): each worker
 *   took the primary's relayed SIGTERM for a second signal and exited without draining; a long poll
 *   was reset.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../support/app';
import { parseDatabaseUrl } from '../../src/storage/database';
import { ApiKeyRepository } from '../../src/storage/api-keys';
import { running, spawnCluster, type SpawnedCluster } from '../support/cluster-process';
import { countRows, FX, installPostingFixture, journal } from '../support/posting-fixture';
import { testConnectionUrl } from '../support/lock-window';

const apiKey = randomUUID();
const GRACE_MS = 30_000;
const BURST = 40;
/** Lines of each journal of the burst: heavy enough that the burst is still queued when the signal comes. */
const LINES = 120;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let db: { url: string; drop: () => Promise<void> };
let knex: Knex;
const clusters: SpawnedCluster[] = [];

before(async () => {
  db = await createTestDatabase();
  knex = knexFactory(parseDatabaseUrl(testConnectionUrl(db.url), { min: 0, max: 2 }).config);
  await installPostingFixture(knex);
  await new ApiKeyRepository(knex).ensure(apiKey, 'stop test', 'integration');
});
after(async () => {
  for (const c of clusters) await c.kill('SIGKILL');
  await knex?.destroy();
  await db?.drop();
});

async function start(workers: number, detached = false, env: Record<string, string> = {}): Promise<SpawnedCluster> {
  const cluster = await spawnCluster({
    databaseUrl: db.url,
    workers,
    detached,
    readyPolls: 4 * workers,
    // HEADERS_TIMEOUT_MS: a connection held silent across the stop must not be answered 408 first on a slow machine.
    env: { INSTANCE_ID: `stop${workers}${detached ? 'g' : ''}`, LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: String(GRACE_MS), RATE_LIMIT_PER_MINUTE: '0', HEADERS_TIMEOUT_MS: '60000', ...env },
  });
  clusters.push(cluster);
  return cluster;
}

/** A balanced journal of LINES lines. */
function heavyJournal(number: string): Record<string, unknown> {
  const lines: Array<Record<string, unknown>> = Array.from({ length: LINES }, (_, i) => ({ lineNumber: i + 1, ledgerAccount: FX.accounts.overhead, description: `line ${i + 1}`, debitAmount: 1.25 }));
  lines.push({ lineNumber: LINES + 1, ledgerAccount: FX.accounts.cash, description: 'paid', creditAmount: 1.25 * LINES });
  return journal(number, { lines });
}

interface Outcome {
  /** performance.now() when the TCP connection was up (the server's kernel had accepted it), if it was. */
  connectedAt?: number;
  answeredAt?: number;
  status?: number;
  headers?: http.IncomingHttpHeaders;
  body?: string;
  error?: string;
}

/** One request on a fresh connection; never rejects. */
function send(port: number, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<Outcome> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  const outcome: Outcome = {};
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path, agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve(Object.assign(outcome, { answeredAt: performance.now(), status: res.statusCode, headers: res.headers, body: text })));
        res.on('error', (e: NodeJS.ErrnoException) => resolve(Object.assign(outcome, { error: e.code ?? e.message })));
      },
    );
    req.on('socket', (socket) => socket.once('connect', () => (outcome.connectedAt = performance.now())));
    req.on('error', (e: NodeJS.ErrnoException) => resolve(Object.assign(outcome, { error: e.code ?? e.message })));
    req.setTimeout(GRACE_MS + 20_000, () => req.destroy(new Error('client timeout')));
    req.end(payload);
  });
}

/** Whether a new connection to `port` is refused (ECONNREFUSED) rather than accepted. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

/** A connection accepted by the service and silent (no request yet): `ask` sends one request on it and resolves with what came back once it closes. */
async function silentConnection(port: number): Promise<{ ask: (request: string) => Promise<string> }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', () => resolve()).once('error', reject));
  let text = '';
  socket.setEncoding('utf8').on('data', (d: string) => (text += d));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined);
  return {
    ask: async (request) => {
      socket.write(request);
      await closed;
      return text;
    },
  };
}

/**
 * Sends BURST keyed heavy journals at once, signals once the first is answered (the rest queued in
 * the primary, the kernel's accept queue and the workers), and checks the stop. A connection
 * accepted before the burst stays silent across the signal, so the service cannot finish its drain
 * (whatever the machine's pace) before a new connection has been seen refused; then it sends its
 * request and must be answered.
 */
async function burstThenStop(cluster: SpawnedCluster, tag: string, signal: () => void, extra: Promise<Outcome>[] = []): Promise<{ outcomes: Outcome[]; stoppedAt: number; extras: Outcome[] }> {
  const silent = await silentConnection(cluster.port);
  const numbers = Array.from({ length: BURST }, (_, i) => `${tag}-${i}`);
  const pending = numbers.map((n) => send(cluster.port, 'POST', '/api/v3/ledger-transactions', heavyJournal(n), { 'x-api-key': apiKey, 'Idempotency-Key': n }));
  let answered = 0;
  for (const p of pending) void p.then((o) => (answered += o.status ? 1 : 0));
  for (let i = 0; i < 2000 && answered < 1; i += 1) await sleep(5);
  const stoppedAt = performance.now();
  signal();
  // New connections are refused while the service is still draining.
  let refusedWhileRunning = false;
  for (let i = 0; i < 400 && !refusedWhileRunning && running(cluster.child.pid!); i += 1) {
    if (await refused(cluster.port)) refusedWhileRunning = running(cluster.child.pid!);
    else await sleep(10);
  }
  // Only now (the service still runs, waiting for it): the silent connection's request.
  const silentAnswer = await silent.ask('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  const outcomes = await Promise.all(pending);
  const extras = await Promise.all(extra);
  assert.equal(await cluster.exited, 0, `exit 0:\n${cluster.output().slice(-3000)}`);
  // The port closes at the stop and the service lives until the silent connection is answered.
  assert.ok(refusedWhileRunning, 'a new connection was refused while the service was still draining');
  assert.match(silentAnswer, /^HTTP\/1\.1 200 /, `the connection accepted before the stop, silent across it, got its answer: ${silentAnswer.slice(0, 200)}`);

  const early = outcomes.filter((o) => o.connectedAt !== undefined && o.connectedAt < stoppedAt);
  assert.equal(early.length, BURST, 'every connection of the burst was up before the signal');
  const waiting = outcomes.filter((o) => o.answeredAt === undefined || o.answeredAt > stoppedAt).length;
  assert.ok(waiting >= 10, `the signal came mid-burst (${waiting} of ${BURST} not answered yet)`);
  const failed = outcomes.map((o, i) => [numbers[i], o.status ?? o.error] as const).filter(([, s]) => s !== 200);
  assert.deepEqual(failed, [], 'every request accepted before the stop is answered 200');
  // Every answered posting is in the books once.
  for (const n of numbers) assert.equal(await countRows(knex, 'lgrtrn', { trnnum: n }), 1, `${n} posted once`);
  return { outcomes, stoppedAt, extras };
}

const stoppedLines = (cluster: SpawnedCluster) => cluster.logLines().filter((l) => l.msg === 'stopped');

test('WORKERS=2, SIGTERM to the primary mid-burst: every request accepted before it is answered, new connections are refused, each posting posted once, exit 0', { timeout: 180_000 }, async (t) => {
  const cluster = await start(2);
  const { outcomes, stoppedAt } = await burstThenStop(cluster, `SP2${Date.now() % 100000}`, () => cluster.child.kill('SIGTERM'));
  const stopped = stoppedLines(cluster);
  assert.equal(stopped.length, 2, 'both workers drained');
  for (const l of stopped) assert.equal(l.outcome, 'drained');
  const last = Math.max(...outcomes.map((o) => o.answeredAt!));
  t.diagnostic(`${outcomes.filter((o) => o.answeredAt! > stoppedAt).length} of ${BURST} answered after the signal, the last ${Math.round(last - stoppedAt)} ms after it`);
});

test('WORKERS=1, SIGTERM mid-burst: the one process answers every request accepted before it, exit 0', { timeout: 180_000 }, async (t) => {
  const cluster = await start(1);
  const { outcomes, stoppedAt } = await burstThenStop(cluster, `SP1${Date.now() % 100000}`, () => cluster.child.kill('SIGTERM'));
  assert.equal(stoppedLines(cluster)[0]?.outcome, 'drained');
  t.diagnostic(`${outcomes.filter((o) => o.answeredAt! > stoppedAt).length} of ${BURST} answered after the signal`);
});

test('WORKERS=2, SIGTERM to every process of the group at once (KillMode=control-group): one stop per worker, the burst and a long poll in flight are answered, exit 0', { timeout: 180_000 }, async () => {
  const cluster = await start(2, true);
  const longPoll = send(cluster.port, 'POST', '/api/v3/events/query', { waitSeconds: 25 }, { 'x-api-key': apiKey });
  await sleep(500);
  const { extras, stoppedAt } = await burstThenStop(cluster, `SPG${Date.now() % 100000}`, () => process.kill(-cluster.child.pid!, 'SIGTERM'), [longPoll]);
  const poll = extras[0]!;
  assert.equal(poll.status, 200, `the long poll is answered, not reset: ${poll.error ?? poll.body}`);
  assert.ok(poll.answeredAt! - stoppedAt < 10_000, 'at once (what there is), not at the end of its 25 s');
  assert.equal(poll.headers?.connection, 'close');
  const lines = cluster.logLines();
  assert.deepEqual(lines.filter((l) => /second signal/.test(String(l.msg))).map((l) => l.worker ?? 'primary'), [], 'no process took the group signal for a second one');
  const stopped = stoppedLines(cluster);
  assert.equal(stopped.length, 2);
  for (const l of stopped) assert.equal(l.outcome, 'drained');
});

test('WORKERS=2: a keep-alive connection idle after a request is closed at the stop; a connection accepted before it whose request comes after is answered with Connection: close', { timeout: 120_000 }, async () => {
  const cluster = await start(2);
  // B: served one request, kept alive, idle.
  const idle = net.connect(cluster.port, '127.0.0.1');
  let idleText = '';
  idle.setEncoding('utf8').on('data', (d: string) => (idleText += d));
  const idleClosed = new Promise<number>((resolve) => idle.once('close', () => resolve(performance.now())));
  idle.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
  for (let i = 0; i < 400 && !/\r\n\r\n/.test(idleText); i += 1) await sleep(10);
  assert.match(idleText, /^HTTP\/1\.1 200 /);
  // A: accepted (handed to a worker), no request yet.
  const fresh = net.connect(cluster.port, '127.0.0.1');
  await new Promise<void>((resolve) => fresh.once('connect', () => resolve()));
  let freshText = '';
  fresh.setEncoding('utf8').on('data', (d: string) => (freshText += d));
  const freshClosed = new Promise<void>((resolve) => fresh.once('close', () => resolve()));
  await sleep(300);

  const stoppedAt = performance.now();
  cluster.child.kill('SIGTERM');
  for (let i = 0; i < 1000 && stoppedLines(cluster).length + cluster.logLines().filter((l) => l.msg === 'shutting down: draining in-flight requests').length < 2; i += 1) await sleep(10);
  const idleClosedAt = await idleClosed;
  assert.ok(idleClosedAt - stoppedAt < 5_000, `the idle keep-alive connection is closed at once (${Math.round(idleClosedAt - stoppedAt)} ms)`);
  assert.ok(await refused(cluster.port), 'new connections are refused');
  assert.equal(cluster.child.exitCode, null, 'the service still waits for the request of the accepted connection');

  fresh.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
  await freshClosed;
  assert.match(freshText, /^HTTP\/1\.1 200 /, `the accepted connection got its answer: ${freshText.slice(0, 200)}`);
  assert.match(freshText, /\r\nconnection: close\r\n/i);
  assert.equal(await cluster.exited, 0);
  for (const l of stoppedLines(cluster)) assert.equal(l.outcome, 'drained');
});
