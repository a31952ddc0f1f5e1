/**
 * How a WORKERS=2 cluster starts (src/cluster.ts), on an EMPTY database of TEST_ENGINE: the
 * primary forks the workers at once and migrates meanwhile; the migrations run once, in the
 * primary, and no worker listens (so none answers /readyz) before they are applied, nor before its
 * contract validator is prepared. Each worker (CONTRACT_PRECOMPILE on here; off by default)
 * compiles its own contract validator in the background: its warm-up requests go to its own
 * loopback server, never to the other worker's (a plain listen(0) in a cluster worker is shared
 * through the primary), so both log "contract validator compiled" and neither "failed".
 * Also: a worker's database readiness waits for the primary's `prepared` message (workerSetup).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { LEAVE_WAIT_MS, ListenGate, workerSetup } from '../../src/cluster';
import { readyz, spawnCluster, type SpawnedCluster } from '../support/cluster-process';
import { createThrowawayDatabase } from '../support/pg-throwaway';
import { secretsEnv } from '../support/secrets';

const ENGINE = process.env.TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let url = '';
let drop: () => Promise<void> = async () => {};
let cluster: SpawnedCluster;

/** An empty database: no table at all, so the start must migrate it. */
async function emptyDatabase(): Promise<void> {
  if (ENGINE === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-cluster-start-'));
    url = `sqlite://${path.join(dir, 'empty.sqlite')}`;
    drop = async () => fs.rmSync(dir, { recursive: true, force: true });
    return;
  }
  const db = await createThrowawayDatabase(process.env.TEST_POSTGRES_URL!, 'ais_t');
  url = db.url;
  drop = async () => db.drop();
}

const logLines = (): Array<Record<string, any>> => cluster.logLines();

before(async () => {
  await emptyDatabase();
  cluster = await spawnCluster({
    databaseUrl: url,
    workers: 2,
    env: { INSTANCE_ID: 'cs', LOG_LEVEL: 'info', DEMO_API_KEY: randomUUID(), CONTRACT_PRECOMPILE: 'true', ...secretsEnv(ENGINE) },
    // The start migrates the empty database first.
    startupTimeoutMs: 120_000,
  });
});

after(async () => {
  await cluster?.kill('SIGKILL');
  await drop();
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

test('the workers open together: none listens before every worker is prepared (its first requests do not run beside a sibling still starting)', () => {
  const lines = logLines();
  const warmed = lines.filter((l) => l.worker && l.msg === 'request path warmed');
  const listening = lines.filter((l) => l.worker && l.msg === 'listening');
  assert.equal(warmed.length, 2, 'both workers logged their warm-up');
  assert.equal(listening.length, 2);
  const lastWarmed = Math.max(...warmed.map((l) => l.time));
  for (const l of listening) assert.ok(l.time >= lastWarmed, `worker ${l.worker} listened at ${l.time}, before the last worker was prepared at ${lastWarmed}`);
});

test('ListenGate: prepared workers wait for the others, then all listen; once open a replacement listens at once; a stuck worker holds them at most waitMs; a stop lets them go', async () => {
  const sent = (name: string, log: string[]) => ({ send: (m: unknown) => (log.push(`${name} ${JSON.stringify(m)}`), true) });
  const log: string[] = [];
  let live = 2;
  const gate = new ListenGate(() => live, 60_000);
  gate.warmed(sent('w1', log));
  assert.deepEqual(log, [], 'the first waits for its sibling');
  gate.warmed(sent('w2', log));
  assert.deepEqual(log, ['w1 {"type":"listen"}', 'w2 {"type":"listen"}']);
  gate.warmed(sent('w1-replacement', log));
  assert.equal(log.at(-1), 'w1-replacement {"type":"listen"}', 'open: a replacement listens as soon as it is prepared');
  gate.stop();

  const stopping: string[] = [];
  const early = new ListenGate(() => 2, 60_000);
  early.warmed(sent('w1', stopping));
  early.stop();
  assert.deepEqual(stopping, ['w1 {"type":"listen"}'], 'a stop lets the waiting worker go on (it then drains on its SIGTERM instead of hanging)');

  const slow: string[] = [];
  const bounded = new ListenGate(() => 2, 40);
  bounded.warmed(sent('w1', slow));
  await sleep(10);
  assert.deepEqual(slow, []);
  await sleep(80);
  assert.deepEqual(slow, ['w1 {"type":"listen"}'], 'the service opens without the stuck worker after waitMs');
  assert.ok(bounded.isOpen);

  const gone: string[] = [];
  const exits = new ListenGate(() => live, 60_000);
  const w2 = sent('w2', gone);
  exits.warmed(sent('w1', gone));
  live = 1;
  exits.forget(w2);
  assert.deepEqual(gone, ['w1 {"type":"listen"}'], 'a sibling that exited is not waited for');
});

test('mayListen: the worker says it is prepared and listens only on the primary\'s answer', async () => {
  const channel = Object.assign(new EventEmitter(), { sent: [] as unknown[], send(m: unknown) { this.sent.push(m); return true; } });
  const setup = workerSetup({ WORKER_INDEX: '1', WORKER_COUNT: '2' }, channel as unknown as NodeJS.Process);
  let may = false;
  void setup.mayListen().then(() => (may = true));
  assert.deepEqual(channel.sent, [{ type: 'prepared?' }, { type: 'warmed' }]);
  channel.emit('message', { type: 'prepared', seeded: false });
  await sleep(10);
  assert.equal(may, false, 'not before the listen message');
  channel.emit('message', { type: 'listen' });
  await sleep(10);
  assert.equal(may, true);
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
  for (let i = 0; i < 4; i += 1) statuses.push(await readyz(cluster.port));
  assert.deepEqual(statuses, [200, 200, 200, 200]);
  cluster.child.kill('SIGTERM');
  assert.equal(await cluster.exited, 0);
});

test('a worker learns that the database is prepared from the primary\'s message, not before', async () => {
  const channel = Object.assign(new EventEmitter(), { sent: [] as unknown[], send(m: unknown) { this.sent.push(m); return true; } });
  const setup = workerSetup({ WORKER_INDEX: '2', WORKER_COUNT: '2' }, channel as unknown as NodeJS.Process);
  assert.equal(setup.index, 2);
  // It asks only once it listens: an answer sent before a process listens for it would be lost.
  assert.deepEqual(channel.sent, [{ type: 'prepared?' }]);
  assert.equal(channel.listenerCount('message'), 1);
  let report: unknown;
  void setup.boot.then((r) => (report = r));
  channel.emit('message', { type: 'something else' });
  await sleep(10);
  assert.equal(report, undefined, 'not prepared before the message');
  channel.emit('message', { type: 'prepared', seeded: true });
  await sleep(10);
  assert.deepEqual(report, { seeded: true });
  assert.equal(channel.listenerCount('message'), 0, 'the listener is removed');
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

test('leave: a stopping worker tells the primary and exits on its answer (every connection handed to it before is then handed back), or after LEAVE_WAIT_MS', async () => {
  const channel = Object.assign(new EventEmitter(), { sent: [] as unknown[], send(m: unknown) { this.sent.push(m); return true; } });
  const setup = workerSetup({ WORKER_INDEX: '1', WORKER_COUNT: '2' }, channel as unknown as NodeJS.Process);
  channel.sent.length = 0;
  let left = false;
  void setup.leave().then(() => (left = true));
  assert.deepEqual(channel.sent, [{ type: 'leaving' }]);
  await sleep(10);
  assert.equal(left, false, 'not before the answer');
  channel.emit('message', { type: 'left' });
  await sleep(10);
  assert.equal(left, true);
  assert.equal(channel.listenerCount('message'), 1, 'only the prepared? listener is left');

  const started = Date.now();
  await setup.leave();
  assert.ok(Date.now() - started >= LEAVE_WAIT_MS - 5, 'a primary that does not answer is waited for at most LEAVE_WAIT_MS');
});
