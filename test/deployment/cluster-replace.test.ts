/**
 * A worker that dies before it is ready while the instance already serves (WORKERS=2, worker 2
 * held short of the database by test/support/hold-worker.cjs while worker 1 serves the port) is
 * replaced, as one that dies later is: the primary used to stop everything with exit 1, resetting
 * the requests in flight through the ready worker although /readyz had answered 200. A crash loop
 * stays bounded: MAX_START_FAILURES_IN_A_ROW workers dying before ready, none ready in between,
 * stop the instance with exit 1 (docs/decisions/0471). Real processes, real sockets, TEST_ENGINE.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../support/app';
import { parseDatabaseUrl } from '../../src/storage/database';
import { ApiKeyRepository } from '../../src/storage/api-keys';
import { MAX_START_FAILURES_IN_A_ROW } from '../../src/cluster';
import { MAX_HELD_CONNECTIONS } from '../../src/connection-handoff';
import { readyz, running } from '../support/cluster-process';
import { countRows, installPostingFixture } from '../support/posting-fixture';
import { postKeyedJournal, testConnectionUrl } from '../support/lock-window';
import type { HttpResult } from '../support/server-process';
import { freePort } from '../support/net';

const apiKey = randomUUID();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let db: { url: string; drop: () => Promise<void> };
let knex: Knex;
let dir: string;
const started: ChildProcess[] = [];

before(async () => {
  db = await createTestDatabase();
  knex = knexFactory(parseDatabaseUrl(testConnectionUrl(db.url), { min: 0, max: 2 }).config);
  await installPostingFixture(knex);
  await new ApiKeyRepository(knex).ensure(apiKey, 'replace test', 'integration');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-cluster-replace-'));
});
after(async () => {
  for (const child of started) {
    for (const pid of workerPids(child.pid!).values()) if (running(pid)) process.kill(pid, 'SIGKILL');
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await knex?.destroy();
  await db?.drop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The primary's live children by WORKER_INDEX (read from /proc: a held worker has logged nothing with its pid). */
function workerPids(primary: number): Map<number, number> {
  const pids = new Map<number, number>();
  let children: string[] = [];
  try {
    children = fs.readFileSync(`/proc/${primary}/task/${primary}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return pids;
  }
  for (const child of children) {
    try {
      const env = fs.readFileSync(`/proc/${child}/environ`, 'utf8').split('\0');
      const index = env.find((e) => e.startsWith('WORKER_INDEX='));
      if (index && running(Number(child))) pids.set(Number(index.slice('WORKER_INDEX='.length)), Number(child));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

interface Held {
  child: ChildProcess;
  port: number;
  release: string;
  lines: () => Array<Record<string, any>>;
  output: () => string;
  exited: Promise<number | null>;
}

/** WORKERS=2 with worker 2 held short of the database until `release` exists; resolves once /readyz answers 200 through worker 1. */
async function startHeld(name: string, extraEnv: Record<string, string> = {}): Promise<Held> {
  const port = await freePort();
  const release = path.join(dir, `${name}.release`);
  const preload = path.join(__dirname, '..', 'support', 'hold-worker.cjs');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'main.ts')], {
    cwd: path.resolve(__dirname, '..', '..'),
    env: {
      ...process.env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim(),
      HOLD_WORKER_INDEX: '2',
      HOLD_WORKER_RELEASE: release,
      DATABASE_URL: db.url,
      PORT: String(port),
      WORKERS: '2',
      INSTANCE_ID: `rp-${name}`,
      LOG_LEVEL: 'info',
      SEED_ON_START: 'false',
      RATE_LIMIT_PER_MINUTE: '0',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const lines = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, any>];
        } catch {
          return [];
        }
      });
  for (let i = 0; i < 1200 && (await readyz(port)) !== 200; i += 1) {
    if (child.exitCode !== null) throw new Error(`exited before ready:\n${out}`);
    await sleep(50);
  }
  assert.equal(await readyz(port), 200, `the port opens with worker 1:\n${out}`);
  return { child, port, release, lines, output: () => out, exited };
}

/** Waits for the held worker 2 (a new one: not `not`) to run, then SIGKILLs it; returns its pid. */
async function killHeldWorker2(h: Held, not = new Set<number>()): Promise<number> {
  let pid: number | undefined;
  for (let i = 0; i < 600 && pid === undefined; i += 1) {
    const p = workerPids(h.child.pid!).get(2);
    if (p !== undefined && !not.has(p)) pid = p;
    else await sleep(25);
  }
  assert.ok(pid, `a worker 2 runs:\n${h.output().slice(-2000)}`);
  process.kill(pid, 'SIGKILL');
  return pid;
}

test('once the instance serves, a worker that dies before it is ready is replaced: nothing in flight is reset, the service goes on, its replacement joins', { timeout: 180_000 }, async () => {
  const h = await startHeld('once');
  const tag = `RP${Date.now() % 100000}`;
  // Postings through the ready worker while its sibling dies.
  const flight: Array<Promise<HttpResult | Error>> = [];
  for (let i = 0; i < 24; i += 1) {
    flight.push(postKeyedJournal(h.port, apiKey, `${tag}-${i}`, `${tag}-${i}`).catch((e: Error) => e));
    if (i === 8) await killHeldWorker2(h);
    await sleep(20);
  }
  const answers = await Promise.all(flight);
  assert.deepEqual(answers.map((a) => (a instanceof Error ? a.message : a.status)).filter((s) => s !== 200), [], 'every posting in flight is answered 200');
  await sleep(1500);
  assert.equal(h.child.exitCode, null, `the primary goes on:\n${h.output().slice(-2000)}`);
  const replaced = h.lines().find((l) => l.role === 'primary' && l.worker === 2 && /failed to start while the instance serves; starting a new one/.test(String(l.msg)));
  assert.ok(replaced, 'the primary logs the replacement');
  assert.ok(!h.lines().some((l) => l.role === 'primary' && /stopping/.test(String(l.msg))), 'and does not stop');
  for (let i = 0; i < 5; i += 1) assert.equal(await readyz(h.port), 200);

  // The replacement is held too: released, it joins, and the instance is whole.
  fs.writeFileSync(h.release, '');
  let joined = false;
  for (let i = 0; i < 1200 && !joined; i += 1) {
    joined = h.lines().some((l) => l.role === 'primary' && l.msg === 'listening');
    if (!joined) await sleep(50);
  }
  assert.ok(joined, `the replacement joins and the instance announces every worker:\n${h.output().slice(-2000)}`);
  for (let i = 0; i < 24; i += 1) assert.equal(await countRows(knex, 'lgrtrn', { trnnum: `${tag}-${i}` }), 1);
  h.child.kill('SIGTERM');
  assert.equal(await h.exited, 0);
});

test(`a crash loop is bounded: ${MAX_START_FAILURES_IN_A_ROW} workers dying before ready in a row stop the instance with exit 1`, { timeout: 180_000 }, async () => {
  const h = await startHeld('loop');
  const killed = new Set<number>();
  // Collected while the primary lives: once it has exited, /proc no longer lists its children.
  const seen = new Set<number>();
  for (let i = 0; i < MAX_START_FAILURES_IN_A_ROW; i += 1) {
    for (const pid of workerPids(h.child.pid!).values()) seen.add(pid);
    killed.add(await killHeldWorker2(h, killed));
    if (i < MAX_START_FAILURES_IN_A_ROW - 1) {
      await sleep(200);
      assert.equal(h.child.exitCode, null, `still serving after ${i + 1} failed start(s)`);
    }
  }
  assert.equal(await h.exited, 1, 'exit 1');
  assert.ok(h.lines().some((l) => l.role === 'primary' && /workers keep failing to start; stopping/.test(String(l.msg)) && l.failures === MAX_START_FAILURES_IN_A_ROW));
  const serving = [...seen].filter((pid) => !killed.has(pid));
  assert.ok(serving.length >= 1, 'the serving worker 1 was seen while the primary ran');
  for (const pid of seen) assert.equal(running(pid), false, `worker ${pid} stopped with the primary`);
});

/** A raw connection to `port`: when it was up, when it closed, and what it received. */
interface Raw {
  socket: net.Socket;
  up: Promise<number>;
  closedAt?: number;
  text: string;
}
function rawConnection(port: number): Raw {
  const socket = net.connect(port, '127.0.0.1');
  const raw: Raw = { socket, up: new Promise((resolve) => socket.once('connect', () => resolve(performance.now()))), text: '' };
  socket.setEncoding('utf8').on('data', (d: string) => (raw.text += d));
  socket.on('error', () => undefined);
  socket.once('close', () => (raw.closedAt = performance.now()));
  return raw;
}
const fdCount = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;

test(`while no worker takes connections the primary holds at most ${MAX_HELD_CONNECTIONS}, each at most HEADERS_TIMEOUT_MS; one held within it is served once a worker takes again`, { timeout: 180_000 }, async () => {
  const HOLD_MS = 2000;
  const h = await startHeld('shed', { HEADERS_TIMEOUT_MS: String(HOLD_MS) });
  let w1: number | undefined;
  for (let i = 0; i < 200 && w1 === undefined; i += 1) {
    w1 = workerPids(h.child.pid!).get(1);
    if (w1 === undefined) await sleep(25);
  }
  assert.ok(w1, 'worker 1 runs');
  const fdsBefore = fdCount(h.child.pid!);
  // Worker 1 (the only one serving: worker 2 is held short of ready) takes nothing while stopped.
  process.kill(w1, 'SIGSTOP');
  try {
    // One goes to worker 1 (in flight, answered once it runs again), MAX_HELD_CONNECTIONS wait in the primary, the rest are closed at once.
    const EXTRA = 20;
    const first = rawConnection(h.port);
    await first.up;
    first.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(100);
    const openedAt = performance.now();
    const held: Raw[] = [];
    for (let i = 0; i < MAX_HELD_CONNECTIONS + EXTRA; i += 1) held.push(rawConnection(h.port));
    await Promise.all(held.map((r) => r.up));
    await sleep(Math.min(1000, HOLD_MS / 2));
    const shedAtOnce = held.filter((r) => r.closedAt !== undefined);
    assert.equal(shedAtOnce.length, EXTRA, `the connections beyond ${MAX_HELD_CONNECTIONS} are closed at once`);
    const peakFds = fdCount(h.child.pid!);
    assert.ok(peakFds - fdsBefore <= MAX_HELD_CONNECTIONS + 5, `the primary holds at most ${MAX_HELD_CONNECTIONS} descriptors more (${fdsBefore} -> ${peakFds})`);
    // The rest are closed once HEADERS_TIMEOUT_MS old.
    for (let i = 0; i < 400 && held.some((r) => r.closedAt === undefined); i += 1) await sleep(25);
    const kept = held.filter((r) => !shedAtOnce.includes(r));
    assert.ok(kept.every((r) => r.closedAt !== undefined), 'every held connection is closed after HEADERS_TIMEOUT_MS');
    const ages = kept.map((r) => r.closedAt! - openedAt);
    assert.ok(Math.min(...ages) >= HOLD_MS - 100, `not before HEADERS_TIMEOUT_MS (${Math.round(Math.min(...ages))} ms)`);
    assert.ok(Math.max(...ages) <= HOLD_MS + 3000, `within it and its check (${Math.round(Math.max(...ages))} ms)`);
    for (let i = 0; i < 100 && fdCount(h.child.pid!) > fdsBefore + 2; i += 1) await sleep(25);
    assert.ok(fdCount(h.child.pid!) <= fdsBefore + 2, `the primary's descriptors are back (${fdsBefore} -> ${fdCount(h.child.pid!)})`);
    assert.ok(h.lines().some((l) => l.role === 'primary' && /no worker takes connections/.test(String(l.msg))), 'the primary warns');

    // Held a while (under the bound), then worker 1 takes again: answered.
    const late = rawConnection(h.port);
    await late.up;
    late.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await sleep(HOLD_MS / 4);
    process.kill(w1, 'SIGCONT');
    for (let i = 0; i < 400 && !(/\r\n\r\n/.test(late.text) && /\r\n\r\n/.test(first.text)); i += 1) await sleep(25);
    assert.match(late.text, /^HTTP\/1\.1 200 /, `the connection held ${HOLD_MS / 4} ms is served`);
    assert.match(first.text, /^HTTP\/1\.1 200 /, 'the connection in flight to the stopped worker is served');
    first.socket.destroy();
  } finally {
    if (running(w1)) process.kill(w1, 'SIGCONT');
  }
  h.child.kill('SIGTERM');
  assert.equal(await h.exited, 0);
});

/** One ping on a fresh connection: its status, or the error's code; never rejects. */
function ping(port: number): Promise<{ sentAt: number; result: number | string }> {
  const sentAt = performance.now();
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/v3/utility/ping', agent: false, headers: { 'x-api-key': apiKey } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ sentAt, result: res.statusCode! }));
      res.on('error', (e: NodeJS.ErrnoException) => resolve({ sentAt, result: e.code ?? e.message }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ sentAt, result: e.code ?? e.message }));
    req.setTimeout(30_000, () => req.destroy(new Error('client timeout')));
    req.end();
  });
}

test('the last serving worker stopped alone leaves the rotation at half its grace: the connections after that wait in the primary for its replacement, none is reset', { timeout: 180_000 }, async () => {
  const GRACE = 1000;
  const h = await startHeld('last', { SHUTDOWN_GRACE_MS: String(GRACE) });
  let w1: number | undefined;
  for (let i = 0; i < 200 && w1 === undefined; i += 1) {
    w1 = workerPids(h.child.pid!).get(1);
    if (w1 === undefined) await sleep(25);
  }
  assert.ok(w1, 'worker 1 runs');
  const results: Array<{ sentAt: number; result: number | string }> = [];
  let go = true;
  const loops = Array.from({ length: 16 }, async () => {
    while (go) {
      results.push(await ping(h.port));
      await sleep(2);
    }
  });
  await sleep(500);
  const signalledAt = performance.now();
  // Worker 1 alone: worker 2 is held short of ready, so no sibling serves.
  process.kill(w1, 'SIGTERM');
  // Past its grace, until its replacement serves, and a little more.
  let replaced = false;
  for (let i = 0; i < 1200 && !replaced; i += 1) {
    const p = workerPids(h.child.pid!).get(1);
    replaced = p !== undefined && p !== w1 && performance.now() - signalledAt > GRACE + 500;
    if (!replaced) await sleep(25);
  }
  assert.ok(replaced, 'worker 1 is replaced');
  // Worker 2 is still held: a 200 here comes from the replacement.
  for (let i = 0; i < 400 && (await readyz(h.port)) !== 200; i += 1) await sleep(25);
  await sleep(500);
  go = false;
  await Promise.all(loops);
  const after = results.filter((r) => r.sentAt > signalledAt);
  const failed = after.filter((r) => r.result !== 200).map((r) => `${r.result} sent ${Math.round(r.sentAt - signalledAt)} ms after the SIGTERM`);
  assert.ok(after.length > 20, `traffic across the stop (${after.length})`);
  assert.deepEqual(failed, [], `every ping sent after the SIGTERM is answered 200:\n${h.output().slice(-3000)}`);
  const stopped = h.lines().filter((l) => l.msg === 'stopped');
  assert.equal(stopped[0]?.outcome, 'drained', 'worker 1 drained before its grace ended (not cut at it)');
  assert.ok(h.lines().some((l) => l.role === 'primary' && /the last serving worker leaves/.test(String(l.msg))), 'the primary took it out of the rotation');
  h.child.kill('SIGTERM');
  assert.equal(await h.exited, 0);
});
