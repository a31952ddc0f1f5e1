/**
 * How a WORKERS=2 cluster starts (src/cluster.ts), on an EMPTY database of TEST_ENGINE: the
 * primary forks the workers at once and migrates meanwhile; the migrations run once, in the
 * primary, and no worker listens (so none answers /readyz) before they are applied, nor before its
 * contract validator is prepared. The port opens with the first ready worker and the others join:
 * worker 2 is held back here (test/support/hold-worker.cjs keeps the primary's `prepared` message
 * from it) until /readyz has answered 200 through the port, then released, and it joins under the
 * same gates. Each worker (CONTRACT_PRECOMPILE on here; off by default)
 * compiles its own contract validator in the background: its warm-up requests go to its own
 * loopback server, never to the other worker's (a plain listen(0) in a cluster worker is shared
 * through the primary), so both log "contract validator compiled" and neither "failed".
 * Also: a worker's database readiness waits for the primary's `prepared` message (workerSetup).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { workerSetup } from '../../src/cluster';
import { workerHandoff } from '../../src/connection-handoff';
import { WRITES } from '../../src/engines/posting/writes';
import { secretsEnv } from '../support/secrets';

const ENGINE = process.env.TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let url = '';
let drop: () => Promise<void> = async () => {};
let primary: ChildProcess;
let exited: Promise<number | null>;
let out = '';
let port = 0;
/** Worker 2 waits for the primary's `prepared` message until this file exists (test/support/hold-worker.cjs). */
let releaseFile = '';
/** What the port answered while worker 2 was held: every /readyz status, and worker 2's log lines by then. */
const whileHeld = { statuses: [] as number[], worker2Lines: [] as Array<Record<string, any>> };

/** An empty database: no table at all, so the start must migrate it. */
async function emptyDatabase(): Promise<void> {
  if (ENGINE === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-cluster-start-'));
    url = `sqlite://${path.join(dir, 'empty.sqlite')}`;
    drop = async () => fs.rmSync(dir, { recursive: true, force: true });
    return;
  }
  const adminUrl = process.env.TEST_POSTGRES_URL!;
  const name = `ais_t_${process.pid}_${randomUUID().slice(0, 8)}`;
  const admin = knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  await admin.raw(`create database "${name}"`);
  await admin.destroy();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  url = u.toString();
  drop = async () => {
    const again = knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
    await again.raw(`drop database if exists "${name}" with (force)`).finally(() => again.destroy());
  };
}

function logLines(): Array<Record<string, any>> {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

/** GET /readyz on a new connection (round-robin: successive calls reach both workers). */
function readyz(): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', () => resolve(0));
  });
}

before(async () => {
  await emptyDatabase();
  releaseFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ais-cluster-hold-')), 'release');
  const preload = path.join(__dirname, '..', 'support', 'hold-worker.cjs');
  primary = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'main.ts')], {
    cwd: path.resolve(__dirname, '..', '..'),
    env: {
      ...process.env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim(),
      HOLD_WORKER_INDEX: '2',
      HOLD_WORKER_RELEASE: releaseFile,
      DATABASE_URL: url,
      PORT: '0',
      WORKERS: '2',
      INSTANCE_ID: 'cs',
      LOG_LEVEL: 'info',
      SEED_ON_START: 'false',
      DEMO_API_KEY: randomUUID(),
      CONTRACT_PRECOMPILE: 'true',
      ...secretsEnv(ENGINE),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  primary.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  primary.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  exited = new Promise((resolve) => primary.on('exit', (code) => resolve(code)));
  // The port opens with worker 1 (worker 2 is held): /readyz through it, a new connection each.
  for (let i = 0; i < 2400 && !port; i += 1) {
    const line = logLines().find((l) => l.msg === 'listening' && l.worker === 1);
    if (line) port = line.port;
    else await sleep(50);
  }
  assert.ok(port, `worker 1 listens:\n${out}`);
  for (let i = 0; i < 2400 && whileHeld.statuses.at(-1) !== 200; i += 1) {
    whileHeld.statuses.push(await readyz());
    if (whileHeld.statuses.at(-1) !== 200) await sleep(20);
  }
  for (let i = 0; i < 4; i += 1) whileHeld.statuses.push(await readyz());
  whileHeld.worker2Lines = logLines().filter((l) => l.worker === 2);
  fs.writeFileSync(releaseFile, '');
  let joined = false;
  for (let i = 0; i < 2400 && !joined; i += 1) {
    joined = logLines().some((l) => l.role === 'primary' && l.msg === 'listening');
    if (!joined) await sleep(50);
  }
  assert.ok(joined, `worker 2 joins once released:\n${out}`);
  // The primary logs 'listening' once every worker told it so; a worker's own line may reach the
  // pipe a moment after (each process writes its own).
  for (let i = 0; i < 200 && logLines().filter((l) => l.msg === 'listening' && l.worker).length < 2; i += 1) await sleep(25);
});

after(async () => {
  if (primary && primary.exitCode === null && primary.signalCode === null) {
    primary.kill('SIGKILL');
    for (const l of logLines()) if (l.msg === 'listening' && l.worker) process.kill(l.pid, 'SIGKILL');
  }
  await drop();
  if (releaseFile) fs.rmSync(path.dirname(releaseFile), { recursive: true, force: true });
});

test('the primary forks the workers first, migrates once meanwhile, and no worker listens before the migrations are applied', () => {
  const lines = logLines();
  const forked = lines.find((l) => l.role === 'primary' && l.msg === 'starting workers');
  const migrated = lines.filter((l) => l.msg === 'migrations applied');
  assert.ok(forked, 'the primary logged starting workers');
  assert.equal(migrated.length, 1, 'the migrations ran once');
  assert.equal(migrated[0]!.role, 'primary', 'in the primary');
  assert.ok(forked.time <= migrated[0]!.time, 'the workers were forked before the migrations ran (they load while the primary migrates)');
  const listening = lines.filter((l) => l.msg === 'listening' && l.worker);
  assert.equal(listening.length, 2);
  for (const l of listening) assert.ok(l.time >= migrated[0]!.time, `worker ${l.worker} listened after the migrations were applied`);
});

test('a worker listens only once its contract validator is prepared (no connection is handed to a worker still compiling)', () => {
  const lines = logLines();
  for (const worker of [1, 2]) {
    const prepared = lines.find((l) => l.worker === worker && l.msg === 'contract validator prepared');
    const listening = lines.find((l) => l.worker === worker && l.msg === 'listening');
    assert.ok(prepared && listening, `worker ${worker} prepared and listened`);
    assert.ok(lines.indexOf(prepared) < lines.indexOf(listening) && prepared.time <= listening.time, `worker ${worker} prepared before it listened`);
  }
});

test('the port opens with the first ready worker: /readyz 200 through it while worker 2 is still held short of the database; worker 2 joins once released', () => {
  const lines = logLines();
  assert.equal(whileHeld.statuses.at(-1), 200, `readyz answered 200 while worker 2 was held: ${whileHeld.statuses.join(' ')}`);
  assert.deepEqual(whileHeld.statuses.slice(-5), [200, 200, 200, 200, 200], 'every connection to the open port is answered by the ready worker (none waits for the held one)');
  assert.deepEqual(
    whileHeld.worker2Lines.filter((l) => ['installed schema read', 'contract validator prepared', 'listening'].some((m) => String(l.msg).startsWith(m))).map((l) => l.msg),
    [],
    'worker 2 had not read the database, prepared or listened by then',
  );
  // Prepared: its validator and its rehearsal (src/server.ts), whichever it logged last.
  const w1Prepared = Math.max(...lines.filter((l) => l.worker === 1 && ['contract validator prepared', 'request path warmed'].includes(l.msg)).map((l) => l.time));
  const w1Listening = lines.find((l) => l.worker === 1 && l.msg === 'listening');
  assert.ok(Number.isFinite(w1Prepared) && w1Listening);
  // Before, the first prepared worker waited for its siblings, up to 1 s for one that was not
  // ready: it listens as soon as it is prepared now (a listen call, milliseconds).
  assert.ok(w1Listening.time - w1Prepared < 1000, `worker 1 listened ${w1Listening.time - w1Prepared} ms after it was prepared: it waited for its sibling`);
  const open = lines.find((l) => l.role === 'primary' && String(l.msg).startsWith('open'));
  assert.equal(open?.worker, 1, 'the primary logs the opening with the first worker');
  const w2Listening = lines.find((l) => l.worker === 2 && l.msg === 'listening');
  assert.ok(w2Listening, 'worker 2 joined');
  assert.ok(lines.indexOf(open!) < lines.indexOf(w2Listening), 'after the port was open');
});

test('worker 2, prepared after the port opened, held no write transaction before it listened: it rehearsed its postings once it listened, every one of them', async () => {
  let rest: Record<string, any> | undefined;
  for (let i = 0; i < 1200 && !rest; i += 1) {
    rest = logLines().find((l) => l.worker === 2 && l.msg === 'request path warmed (the rest)');
    if (!rest) await sleep(50);
  }
  const lines = logLines();
  const w2Listening = lines.find((l) => l.worker === 2 && l.msg === 'listening');
  assert.ok(rest && w2Listening, 'worker 2 listened and rehearsed');
  assert.deepEqual(
    lines.slice(0, lines.indexOf(w2Listening)).filter((l) => l.worker === 2 && String(l.msg).startsWith('request path warmed')),
    [],
    'no rehearsal before it listened',
  );
  assert.equal(rest.rehearsed + rest.refused + rest.failed, WRITES.filter((w) => w.definition).length, 'the BEFORE_READY postings too, after listening');
  const w1Early = lines.find((l) => l.worker === 1 && l.msg === 'request path warmed');
  assert.ok(w1Early && lines.indexOf(w1Early) < lines.indexOf(lines.find((l) => l.worker === 1 && l.msg === 'listening')!), 'worker 1, the first, rehearsed before it listened');
});

test('every worker compiles its own contract validator (warm-up not answered by the other worker); /readyz 200 from both', async () => {
  let compiled: Array<Record<string, any>> = [];
  for (let i = 0; i < 1200 && compiled.length < 2; i += 1) {
    compiled = logLines().filter((l) => l.msg === 'contract validator compiled' && l.worker);
    if (compiled.length < 2) await sleep(50);
  }
  const failed = logLines().filter((l) => /contract validator failed/.test(String(l.msg)));
  assert.deepEqual(failed.map((l) => l.err?.message), [], 'no worker failed its warm-up');
  assert.deepEqual(compiled.map((l) => l.worker).sort(), [1, 2], 'both workers compiled every operation');
  const statuses = [];
  for (let i = 0; i < 4; i += 1) statuses.push(await readyz());
  assert.deepEqual(statuses, [200, 200, 200, 200]);
  primary.kill('SIGTERM');
  assert.equal(await exited, 0);
});

test('a worker learns that the database is prepared from the primary\'s message, not before', async () => {
  const channel = Object.assign(new EventEmitter(), { sent: [] as unknown[], send(m: unknown) { this.sent.push(m); return true; } });
  const setup = workerSetup({ WORKER_INDEX: '2', WORKER_COUNT: '2' }, channel as unknown as NodeJS.Process);
  assert.equal(setup.index, 2);
  // It asks only once it listens: an answer sent before a process listens for it would be lost.
  assert.deepEqual(channel.sent, [{ type: 'prepared?' }]);
  assert.equal(channel.listenerCount('message'), 2, 'the prepared answer and the open port');
  let report: unknown;
  void setup.boot.then((r) => (report = r));
  channel.emit('message', { type: 'something else' });
  await sleep(10);
  assert.equal(report, undefined, 'not prepared before the message');
  channel.emit('message', { type: 'prepared', seeded: true });
  await sleep(10);
  assert.deepEqual(report, { seeded: true });
  assert.equal(channel.listenerCount('message'), 1, 'the prepared listener is removed');
  assert.equal(setup.serviceOpen(), false);
  channel.emit('message', { type: 'open' });
  assert.equal(setup.serviceOpen(), true, 'the primary told it that a sibling serves the port');
  assert.equal(channel.listenerCount('message'), 0, 'and that listener is removed');
});

test('what a primary loads before it forks (configuration, cluster) does not load knex: the workers start loading first', () => {
  const { execFileSync } = require('node:child_process') as typeof import('node:child_process');
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', '-e', "require('./src/config'); require('./src/cluster'); console.log(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('/node_modules/knex/')).length))"],
    { cwd: path.resolve(__dirname, '..', '..'), encoding: 'utf8' },
  );
  assert.equal(out.trim().split('\n').at(-1), '0');
});

test('handoff: a worker serves every connection handed to it, asks to leave when it stops on its own, and is done on `left`, on `stop` (also its stop), or when the primary is gone', async () => {
  const channel = () => Object.assign(new EventEmitter(), { sent: [] as unknown[], send(m: unknown) { this.sent.push(m); return true; } });
  const server = new EventEmitter() as unknown as http.Server;
  const handed: unknown[] = [];
  server.on('connection', (s: unknown) => handed.push(s));

  const a = channel();
  const handoff = workerHandoff(a as unknown as NodeJS.Process);
  let port = 0;
  void handoff.serve(server).then((p) => (port = p));
  assert.deepEqual(a.sent, [{ type: 'ready' }]);
  a.emit('message', { type: 'serving', port: 8123 });
  await sleep(5);
  assert.equal(port, 8123);
  const socket = { destroyed: false };
  a.emit('message', { type: 'connection' }, socket);
  assert.deepEqual(handed, [socket], 'the connection is served by the server');
  assert.deepEqual(a.sent.at(-1), { type: 'taken' }, 'and taken at once');

  let over = false;
  void handoff.over().then(() => (over = true));
  assert.deepEqual(a.sent.at(-1), { type: 'leaving' });
  await sleep(5);
  assert.equal(over, false, 'not before the answer: connections handed before it are still coming');
  a.emit('message', { type: 'connection' }, { destroyed: false });
  assert.equal(handed.length, 2, 'one still coming is served too');
  a.emit('message', { type: 'left' });
  await sleep(5);
  assert.equal(over, true);

  // The primary's stop: the same stop as the worker's own (onStop runs once), and nothing more comes.
  const b = channel();
  const stopped = workerHandoff(b as unknown as NodeJS.Process);
  let stops = 0;
  stopped.onStop(() => (stops += 1));
  b.emit('message', { type: 'stop' });
  b.emit('message', { type: 'stop' });
  assert.equal(stops, 1);
  await stopped.over();
  assert.ok(!b.sent.some((m: any) => m.type === 'leaving'), 'stopped by the primary: no need to ask');
  stopped.onStop(() => (stops += 1));
  assert.equal(stops, 2, 'a stop handler added later runs at once');

  const c = channel();
  const orphan = workerHandoff(c as unknown as NodeJS.Process);
  const waiting = orphan.over();
  c.emit('disconnect');
  await waiting;
});
