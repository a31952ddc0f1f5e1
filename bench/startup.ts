/**
 * Start-up benchmark: the production build (`node dist/src/main.js`, built first) on an existing,
 * seeded SQLite database (the demo company, made once in bench/.data/startup.sqlite by a first
 * start). Per start: time from spawn to the first 200 of /readyz (polled every 5 ms), resident
 * set then, then one request to each of 20 operations (their first request in this process: the
 * contract examples of generated/openapi.public.yaml, writes as dry runs), each timed, and the
 * resident set after them. Repeated `--starts N` times (default 5); prints per start and p50/p99.
 *
 * /readyz is polled on a new connection each time, so with WORKERS > 1 (default: the cores) the
 * cluster hands the polls to every worker: reported are the first 200 (the service is ready) and
 * the first run of 2 × WORKERS 200s in a row, and each worker's "request path warmed" log
 * time (its readiness gate; the last of them = every worker ready: a cluster worker listens only
 * once prepared, so polls alone reach only the ready workers). CPU and RSS cover the primary and its workers (RSS: the largest).
 *
 *   WORKERS=1 npx tsx bench/startup.ts [--starts N] [--no-build] [--verbose] [--settle MS|compiled (CONTRACT_PRECOMPILE=true)] [--node-args "--cpu-prof ..."] [--dist DIR]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { freePort } from '../test/support/net';
import { cpuMs, memoryMb, processTree } from './procfs';

const ROOT = path.resolve(__dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const DB = path.join(DATA_DIR, 'startup.sqlite');
const KEY = '5b7a3c1e-2d4f-4a6b-8c9d-0e1f2a3b4c5d';
const OPERATIONS = 20;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
}

const rssMb = (pid: number): number => memoryMb(pid).rss;

interface Request {
  operationId: string;
  method: string;
  path: string;
  body?: unknown;
}

/** One request per operation with a JSON body example, spread over the contract. */
function requests(): Request[] {
  const doc = YAML.parse(fs.readFileSync(path.join(ROOT, 'generated', 'openapi.public.yaml'), 'utf8'));
  const all: Request[] = [];
  for (const [p, item] of Object.entries<any>(doc.paths)) {
    if (p.includes('{')) continue;
    for (const [method, op] of Object.entries<any>(item)) {
      const json = op?.requestBody?.content?.['application/json'];
      const example = json?.example ?? Object.values<any>(json?.examples ?? {})[0]?.value;
      if (example === undefined || /lock/.test(p)) continue;
      const dryRun = (op.parameters ?? []).some((x: any) => x.name === 'dryRun' || x.$ref?.endsWith('DryRun'));
      all.push({ operationId: op.operationId, method: method.toUpperCase(), path: `/api/v3${p}${dryRun ? '?dryRun=true' : ''}`, body: example });
    }
  }
  const step = all.length / OPERATIONS;
  return Array.from({ length: Math.min(OPERATIONS, all.length) }, (_, i) => all[Math.floor(i * step)]!);
}

/** GET /readyz on a NEW connection (no keep-alive): with WORKERS > 1 the cluster hands each connection to a worker in turn, so polls see every worker, not the one behind a kept-alive socket. */
function readyz(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });
}

interface Started {
  child: ChildProcess;
  /** First 200 of /readyz (the service answers ready from some worker). */
  readyMs: number;
  /** Start of the first run of 2 × workers consecutive 200s on new connections (every worker ready). */
  allReadyMs: number;
  /** Per serving process, ms after spawn at which it passed its readiness gate: logged `request path warmed` (the warm-up, after the validator), or `contract validator prepared` in a build without a warm-up. Filled as the lines arrive. */
  prepared: () => number[];
  /** Per serving process, when it logged `contract validator compiled` (every operation compiled, the idle-time warm-up over). */
  compiled: number[];
}

async function start(port: number, workers: number): Promise<Started> {
  const t0 = process.hrtime.bigint();
  const wall0 = Date.now();
  // --node-args "...": flags for the server's node (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"; cluster workers inherit them).
  const nodeArgs = arg('node-args', '').split(/\s+/).filter(Boolean);
  // --dist DIR: another build of the server (e.g. of the commit before a change, for interleaved before/after runs).
  const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, arg('dist', 'dist'), 'src', 'main.js')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: String(port), DATABASE_URL: `sqlite://${DB}`, DEMO_API_KEY: KEY, LOG_LEVEL: 'info', VALIDATE_RESPONSES: 'false', RATE_LIMIT_PER_MINUTE: '100000' },
  });
  let stderr = '';
  const prepared: number[] = [];
  const preparedOnly: number[] = [];
  const compiled: number[] = [];
  const gates = () => (prepared.length > 0 ? prepared : preparedOnly);
  child.stderr!.on('data', (c) => (stderr = (stderr + String(c)).slice(-4000)));
  let rest = '';
  child.stdout!.on('data', (c) => {
    const lines = (rest + String(c)).split('\n');
    rest = lines.pop()!;
    // The readiness gate: the warm-up's end (it runs after the validator is prepared), or the validator's for a build without it.
    for (const l of lines) if (l.includes('"request path warmed"') || l.includes('"warm-up failed')) prepared.push(JSON.parse(l).time - wall0);
    else if (l.includes('"contract validator prepared"')) preparedOnly.push(JSON.parse(l).time - wall0);
    else if (l.includes('"contract validator compiled"')) compiled.push(JSON.parse(l).time - wall0);
  });
  const elapsed = () => Number(process.hrtime.bigint() - t0) / 1e6;
  let readyMs = 0;
  let runStart = 0;
  let run = 0;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${stderr}`);
    const sent = elapsed();
    const ok = (await readyz(port)) === 200;
    if (ok) {
      readyMs ||= elapsed();
      if (run === 0) runStart = sent;
      run += 1;
      if (run >= 2 * workers) return { child, readyMs, allReadyMs: Math.max(readyMs, runStart), prepared: gates, compiled };
    } else run = 0;
    if (!readyMs && elapsed() > 120e3) throw new Error(`not ready after 120 s: ${stderr}`);
    // Some worker answered 200 but not every one within 20 s (one stuck 503): recorded, not fatal.
    if (readyMs && elapsed() > 20e3) return { child, readyMs, allReadyMs: Infinity, prepared: gates, compiled };
    if (!ok) await new Promise((r) => setTimeout(r, 5));
  }
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const starts = Number(arg('starts', '5'));
  // As src/config.ts: WORKERS, default the number of cores.
  const workers = Number(process.env.WORKERS ?? os.availableParallelism());
  const settleCompiled = arg('settle', '0') === 'compiled';
  const settle = settleCompiled ? 0 : Number(arg('settle', '0'));
  // Operations compile on first use unless CONTRACT_PRECOMPILE (src/config.ts): without it nothing logs "compiled".
  if (settleCompiled && !/^(1|true|yes|on)$/i.test(process.env.CONTRACT_PRECOMPILE ?? '')) throw new Error('--settle compiled needs CONTRACT_PRECOMPILE=true (the server inherits it)');
  const load0 = os.loadavg()[0]!;
  if (!process.argv.includes('--no-build')) {
    execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  }
  fs.mkdirSync(DATA_DIR, { recursive: true });
  const reqs = requests();
  if (!fs.existsSync(DB)) {
    // First start: migrates and seeds the demo company; not measured.
    const { child } = await start(await freePort(), workers);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  const ready: number[] = [];
  const allReady: number[] = [];
  const preparedAll: number[] = [];
  const lastPrepared: number[] = [];
  const readyCpu: number[] = [];
  const first: number[] = [];
  const firstCpu: number[] = [];
  const rssReady: number[] = [];
  const rssAfter: number[] = [];
  for (let s = 0; s < starts; s++) {
    const port = await freePort();
    const { child, readyMs, allReadyMs, prepared: gates, compiled } = await start(port, workers);
    try {
      ready.push(readyMs);
      allReady.push(allReadyMs);

      // The primary and its cluster workers; CPU time (bench/procfs.ts cpuMs) is what a start costs whatever else runs on the machine.
      const procs = processTree(child.pid!);
      readyCpu.push(procs.reduce((sum, pid) => sum + cpuMs(pid), 0));
      rssReady.push(Math.max(...procs.map(rssMb)));
      // --settle MS: wait before the first requests (e.g. for the background compile to finish: what is left is the request path's own first-use cost).
      // --settle compiled (with CONTRACT_PRECOMPILE=true): until every worker has compiled every operation (its idle-time warm-up is over).
      if (settleCompiled) while (compiled.length < workers) await new Promise((r) => setTimeout(r, 20));
      else if (settle > 0) await new Promise((r) => setTimeout(r, settle));
      const times: string[] = [];
      for (const r of reqs) {
        const cpu0 = procs.reduce((sum, pid) => sum + cpuMs(pid), 0);
        const t = process.hrtime.bigint();
        const res = await fetch(`http://127.0.0.1:${port}${r.path}`, {
          method: r.method,
          headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
          body: JSON.stringify(r.body),
        });
        await res.arrayBuffer();
        const ms = Number(process.hrtime.bigint() - t) / 1e6;
        if (res.status >= 500) throw new Error(`${r.operationId} answered ${res.status}`);
        // The server's CPU during the request (all its processes; 10 ms ticks): the request's own cost whatever else runs on the machine, once nothing compiles in the background (--settle compiled).
        const cpu = procs.reduce((sum, pid) => sum + cpuMs(pid), 0) - cpu0;
        first.push(ms);
        firstCpu.push(cpu);
        times.push(`${r.operationId} ${res.status} ${ms.toFixed(0)} (cpu ${cpu.toFixed(0)})`);
      }
      rssAfter.push(Math.max(...procs.map(rssMb)));
      // Every worker ready: the last one's readiness gate (polls cannot tell: a cluster worker listens only once prepared, so polls reach ready workers only).
      const prepared = gates();
      preparedAll.push(...prepared);
      if (prepared.length >= workers) lastPrepared.push(Math.max(...prepared));
      process.stdout.write(`start ${s + 1}: ready ${readyMs.toFixed(0)} ms, every worker ${allReadyMs.toFixed(0)} ms (prepared at ${prepared.map((x) => x.toFixed(0)).join(', ')} ms; CPU of all processes ${readyCpu.at(-1)!.toFixed(0)} ms), RSS ${rssReady.at(-1)!.toFixed(0)} MB; first requests max ${Math.max(...first.slice(-reqs.length)).toFixed(0)} ms; RSS after ${rssAfter.at(-1)!.toFixed(0)} MB\n`);
      if (process.argv.includes('--verbose')) process.stdout.write(`  ${times.join(', ')}\n`);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
  process.stdout.write(
    `\n${starts} starts, ${reqs.length} operations each (${reqs.map((r) => r.operationId).join(', ')})\n` +
      `WORKERS=${workers}; readyz 200 (new connection each poll) after start: p50 ${pct(ready, 50).toFixed(0)} ms, max ${Math.max(...ready).toFixed(0)} ms; ` +
      `every worker 200 (${2 * workers} polls in a row): p50 ${pct(allReady, 50).toFixed(0)} ms, max ${Math.max(...allReady).toFixed(0)} ms; ` +
      `worker ready (warmed) per worker: p50 ${pct(preparedAll, 50).toFixed(0)} ms, max ${Math.max(...preparedAll).toFixed(0)} ms; ` +
      `last worker prepared: p50 ${lastPrepared.length ? pct(lastPrepared, 50).toFixed(0) : '-'} ms, max ${lastPrepared.length ? Math.max(...lastPrepared).toFixed(0) : '-'} ms (${lastPrepared.length} of ${starts} starts had every worker prepared by the end of the 20 requests); CPU of all processes by then p50 ${pct(readyCpu, 50).toFixed(0)} ms, max ${Math.max(...readyCpu).toFixed(0)} ms\n` +
      `1-minute load average: ${load0.toFixed(1)} at the start, ${os.loadavg()[0]!.toFixed(1)} at the end (${os.loadavg().map((x) => x.toFixed(1)).join(' ')}) on ${os.cpus().length} cores\n` +
      `first request per operation: p50 ${pct(first, 50).toFixed(1)} ms, p99 ${pct(first, 99).toFixed(1)} ms, max ${Math.max(...first).toFixed(1)} ms; server CPU per request (10 ms ticks) p50 ${pct(firstCpu, 50).toFixed(0)} ms, p99 ${pct(firstCpu, 99).toFixed(0)} ms, max ${Math.max(...firstCpu).toFixed(0)} ms, sum per start ${(firstCpu.reduce((a, b) => a + b, 0) / starts).toFixed(0)} ms\n` +
      `RSS at ready: max ${Math.max(...rssReady).toFixed(0)} MB; after the ${reqs.length} requests: max ${Math.max(...rssAfter).toFixed(0)} MB\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
