/**
 * Interleaved A/B of the workers' heap sizing: `HEAP_LIMIT_MB=1024` (the server's default) against
 * V8's own sizing (`HEAP_LIMIT_MB=0`; `--other N` compares another limit), on the bench/query.ts data
 * (SQLite, built by bench/query.ts first).
 * Per scenario and repeat, both configurations run back to back in alternating order (ABBA...), each
 * in a fresh production server (`node dist/src/main.js`, the default WORKERS), 2 s warm-up then the
 * measured seconds, 10 connections; prints req/s, the server's CPU time per request (user + system
 * of the primary and its workers: the collector's extra work shows there, and unlike req/s it does
 * not swing with what else the machine runs) and the largest per-process peak RSS of each run, and
 * per scenario the median differences of the pairs. Run `npm run build` first.
 *
 *   npx tsx bench/heap-limit-ab.ts [--only B,D,E] [--repeats 3] [--duration 6] [--other 0]
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../test/support/net';
import { cpuMs, memoryMb, processTree, resetPeak } from './procfs';
import { BENCH_KEY as KEY, DATA_FILE as DATA, SCENARIOS as QUERY_SCENARIOS } from './query';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<any>;

const ROOT = path.resolve(__dirname, '..');
/** bench/query.ts's fixed-body scenarios (A to E), by id. */
const SCENARIOS: Record<string, { path: string; body: unknown }> = Object.fromEntries(QUERY_SCENARIOS.filter((s) => 'ABCDE'.includes(s.id)).map((s) => [s.id, s]));

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
};

function status(port: number): Promise<number> {
  return new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', () => resolve(0));
  });
}


async function run(heapLimit: string, scenario: { path: string; body: unknown }, seconds: number): Promise<{ rps: number; peak: number; cpu: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    stdio: 'ignore',
    env: { ...process.env, PORT: String(port), DATABASE_URL: `sqlite://${DATA}`, DEMO_API_KEY: KEY, SEED_ON_START: 'false', RATE_LIMIT_PER_MINUTE: '10000000', LOG_LEVEL: 'info', VALIDATE_RESPONSES: 'false', HEAP_LIMIT_MB: heapLimit },
  });
  try {
    for (let i = 0; i < 600 && (await status(port)) !== 200; i++) await new Promise((r) => setTimeout(r, 50));
    const opts = { url: `http://127.0.0.1:${port}${scenario.path}`, method: 'POST', connections: 10, headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify(scenario.body) };
    await autocannon({ ...opts, duration: 2 });
    const procs = processTree(child.pid!);
    for (const p of procs) resetPeak(p);
    const cpuBefore = procs.reduce((sum, p) => sum + cpuMs(p), 0);
    const result = await autocannon({ ...opts, duration: seconds });
    const cpu = (procs.reduce((sum, p) => sum + cpuMs(p), 0) - cpuBefore) / result.requests.total;
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
    return { rps: result.requests.average, peak: Math.max(...procs.map((p) => memoryMb(p).peak)), cpu };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

async function main(): Promise<void> {
  const only = arg('only', 'B,D,E').split(',');
  const repeats = Number(arg('repeats', '3'));
  const seconds = Number(arg('duration', '6'));
  const other = arg('other', '0');
  const configs = ['1024', other];
  process.stdout.write(`heap limit A/B, ${new Date().toISOString()}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
  for (const id of only) {
    const diffs: number[] = [];
    const cpuDiffs: number[] = [];
    const cells: Record<string, string[]> = { [configs[0]!]: [], [configs[1]!]: [] };
    for (let r = 0; r < repeats; r++) {
      const order = r % 2 === 0 ? configs : [...configs].reverse();
      const got: Record<string, { rps: number; peak: number; cpu: number }> = {};
      for (const c of order) got[c] = await run(c, SCENARIOS[id]!, seconds);
      for (const c of configs) cells[c]!.push(`${got[c]!.rps.toFixed(0)} req/s ${got[c]!.cpu.toFixed(2)} ms ${got[c]!.peak.toFixed(0)} MB`);
      diffs.push(got[configs[0]!]!.rps / got[configs[1]!]!.rps - 1);
      cpuDiffs.push(got[configs[0]!]!.cpu / got[configs[1]!]!.cpu - 1);
      process.stdout.write(`${id} pair ${r + 1} (${order.join(' then ')}): ${configs.map((c) => `HEAP_LIMIT_MB=${c} ${got[c]!.rps.toFixed(1)} req/s, CPU ${got[c]!.cpu.toFixed(2)} ms/request, peak ${got[c]!.peak.toFixed(0)} MB`).join('; ')}; load ${os.loadavg()[0]!.toFixed(1)}\n`);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    process.stdout.write(
      `${id}: HEAP_LIMIT_MB=1024 ${cells['1024']!.join(', ')} | HEAP_LIMIT_MB=${other} ${cells[other]!.join(', ')} | 1024 against ${other}, median of pairs: req/s ${(100 * median(diffs)).toFixed(1)} % (${diffs.map((d) => (100 * d).toFixed(0)).join(', ')}), CPU per request ${(100 * median(cpuDiffs)).toFixed(1)} % (${cpuDiffs.map((d) => (100 * d).toFixed(0)).join(', ')})\n`,
    );
  }
}

void main().catch((e) => {
  process.stderr.write(`${e?.stack ?? e}\n`);
  process.exit(1);
});
