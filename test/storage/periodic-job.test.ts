/**
 * The background job runner of the heartbeat and the data change log's fold
 * (src/storage/periodic-job.ts): one run at a time, none while paused, failures logged, not thrown.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PeriodicJob } from '../../src/storage/periodic-job';

function logger() {
  const lines: Array<Record<string, unknown>> = [];
  return { lines, log: pino({ level: 'warn' }, { write: (l: string) => void lines.push(JSON.parse(l)) }) };
}

test('a run in progress is joined, not doubled; a later run runs again', async () => {
  let runs = 0;
  let release!: () => void;
  const job = new PeriodicJob({ everyMs: 1000, logger: logger().log, failure: 'x', fallback: -1, run: () => new Promise<number>((r) => ((runs += 1), (release = () => r(runs)))) });
  const a = job.runOnce();
  const b = job.runOnce();
  assert.equal(runs, 1);
  release();
  assert.deepEqual(await Promise.all([a, b]), [1, 1]);
  const c = job.runOnce();
  release();
  assert.equal(await c, 2);
});

test('paused: no run, the fallback; a failure is logged and answers the fallback', async () => {
  let paused = true;
  let runs = 0;
  const { lines, log } = logger();
  const job = new PeriodicJob({ everyMs: 1000, logger: log, failure: 'job failed', fallback: 0, paused: () => paused, run: async () => { runs += 1; throw new Error('boom'); } });
  assert.equal(await job.runOnce(), 0);
  assert.equal(runs, 0, 'paused: nothing ran');
  paused = false;
  assert.equal(await job.runOnce(), 0);
  assert.equal(runs, 1);
  assert.equal(lines.at(-1)?.msg, 'job failed');
});

test('start runs every interval until stop', async () => {
  let runs = 0;
  const job = new PeriodicJob({ everyMs: 20, logger: logger().log, failure: 'x', fallback: undefined, run: async () => void (runs += 1) });
  job.start();
  job.start(); // idempotent: one timer
  for (let i = 0; i < 200 && runs < 2; i += 1) await new Promise((r) => setTimeout(r, 10));
  job.stop();
  const seen = runs;
  assert.ok(seen >= 2, `it ran again and again (${seen})`);
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(runs, seen, 'none after stop');
});

test('a job that keeps failing logs its first failure once, not at every run, and one line when it works again', async () => {
  let failing = true;
  let runs = 0;
  const lines: Array<Record<string, any>> = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  const job = new PeriodicJob({ everyMs: 1000, logger: log, failure: 'job failed', fallback: 0, run: async () => { runs += 1; if (failing) throw new Error('database away'); return 1; } });
  for (let i = 0; i < 5; i += 1) assert.equal(await job.runOnce(), 0);
  assert.equal(runs, 5);
  assert.deepEqual(lines.map((l) => [l.msg, l.failures]), [['job failed', 1]], 'one warning for five failures');
  failing = false;
  assert.equal(await job.runOnce(), 1);
  assert.equal(await job.runOnce(), 1);
  assert.deepEqual(lines.map((l) => [l.msg, l.failures]), [['job failed', 1], ['job failed: works again', 5]]);
});
