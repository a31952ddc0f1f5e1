/**
 * Start-up benchmark: the production build (`node dist/src/main.js`, built first) on an existing,
 * seeded SQLite database (the demo company, made once in bench/.data/startup.sqlite by a first
 * start: the `make run` case after the first run). Per start: time from spawn to the first 200 of
 * /readyz (polled every 5 ms, a new connection each), resident set then, then one request to each
 * of 20 operations (their first request in this process: the contract examples of
 * generated/openapi.public.yaml, writes as dry runs), each timed, and the resident set after them.
 *
 * Every run measures WORKERS=1 and WORKERS=<cores> (the default configuration), `--starts N` starts
 * of each (default 5), interleaved (1, cores, 1, cores, ...) so that both see the same load on a
 * shared machine, and prints per start and, per configuration, the start-up time (p50, max) and the
 * first-request p50 / p99 / max. `--workers 1,2,4` chooses the configurations; `--dist DIR[,DIR]`
 * runs other builds too (an older commit's `dist/`, for interleaved before/after runs).
 *
 * With WORKERS > 1 the port opens with the first ready worker and the others join: the first 200
 * is the service ready; "every worker" is the last worker's `listening` log time (a cluster worker
 * listens once it is prepared; per start the times each worker listened are printed). The first
 * requests go out after 2 × WORKERS 200s in a row. CPU and RSS cover the primary and its workers (RSS: the largest).
 *
 *   npx tsx bench/startup.ts [--starts N] [--workers LIST] [--no-build] [--verbose] [--settle MS|compiled (CONTRACT_PRECOMPILE=true)] [--node-args "--cpu-prof ..."] [--dist DIR[,DIR]]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { freePort } from '../test/support/net';

const ROOT = path.resolve(__dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const DB = path.join(DATA_DIR, 'startup.sqlite');
const KEY = '5b7a3c1e-2d4f-4a6b-8c9d-0e1f2a3b4c5d';
const OPERATIONS = 20;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** CPU time (user + system) the process has used, ms: what a start costs whatever else runs on the machine. */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (100 Hz)
}

/** The server's cluster workers (children of the primary). */
function childPids(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

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
  /** When every worker listened (the last worker's `listening` log time; WORKERS=1: the first 200). Filled as the lines arrive. */
  allReadyMs: () => number;
  /** WORKERS > 1: ms after spawn at which each worker listened (it listens once prepared). Filled as the lines arrive. */
  listened: () => number[];
  /** Per serving process, when it logged `contract validator compiled` (every operation compiled, the idle-time warm-up over). */
  compiled: number[];
}

async function start(port: number, workers: number, dist: string): Promise<Started> {
  const t0 = process.hrtime.bigint();
  const wall0 = Date.now();
  // --node-args "...": flags for the server's node (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"; cluster workers inherit them).
  const nodeArgs = arg('node-args', '').split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, dist, 'src', 'main.js')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WORKERS: String(workers), PORT: String(port), DATABASE_URL: `sqlite://${DB}`, DEMO_API_KEY: KEY, LOG_LEVEL: 'info', VALIDATE_RESPONSES: 'false', RATE_LIMIT_PER_MINUTE: '100000' },
  });
  let stderr = '';
  const compiled: number[] = [];
  const listening: number[] = [];
  child.stderr!.on('data', (c) => (stderr = (stderr + String(c)).slice(-4000)));
  let rest = '';
  child.stdout!.on('data', (c) => {
    const lines = (rest + String(c)).split('\n');
    rest = lines.pop()!;
    for (const l of lines) {
      if (l.includes('"contract validator compiled"')) compiled.push(JSON.parse(l).time - wall0);
      else if (l.includes('"msg":"listening"') && (workers === 1 || l.includes('"worker":'))) listening.push(JSON.parse(l).time - wall0);
    }
  });
  const elapsed = () => Number(process.hrtime.bigint() - t0) / 1e6;
  let readyMs = 0;
  // WORKERS=1 listens before it is ready (503 meanwhile): every worker is ready with the first 200.
  const allReadyMs = () => (workers === 1 ? readyMs : listening.length >= workers ? Math.max(...listening) : Infinity);
  let run = 0;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${stderr}`);
    const ok = (await readyz(port)) === 200;
    if (ok) {
      readyMs ||= elapsed();
      run += 1;
      if (run >= 2 * workers) return { child, readyMs, allReadyMs, listened: () => [...listening], compiled };
    } else run = 0;
    if (!readyMs && elapsed() > 120e3) throw new Error(`not ready after 120 s: ${stderr}`);
    // 200 once, but not 2 x WORKERS in a row within 20 s (a worker stuck at 503): recorded, not fatal.
    if (readyMs && elapsed() > 20e3) return { child, readyMs, allReadyMs, listened: () => [...listening], compiled };
    if (!ok) await new Promise((r) => setTimeout(r, 5));
  }
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Configuration {
  workers: number;
  dist: string;
  label: string;
  ready: number[];
  allReady: number[];
  readyCpu: number[];
  first: number[];
  firstCpu: number[];
  rssReady: number[];
  rssAfter: number[];
}

const fmt = (values: number[], f: (v: number[]) => number, digits = 0): string => (values.length ? f(values).toFixed(digits) : '-');
const max = (values: number[]) => Math.max(...values);

async function measure(c: Configuration, s: number, reqs: Request[], settle: number, settleCompiled: boolean): Promise<void> {
  const port = await freePort();
  const { child, readyMs, allReadyMs, listened, compiled } = await start(port, c.workers, c.dist);
  try {
    c.ready.push(readyMs);
    const procs = [child.pid!, ...childPids(child.pid!)];
    c.readyCpu.push(procs.reduce((sum, pid) => sum + cpuMs(pid), 0));
    c.rssReady.push(Math.max(...procs.map(rssMb)));
    // --settle MS: wait before the first requests (e.g. for the background compile to finish: what is left is the request path's own first-use cost).
    // --settle compiled (with CONTRACT_PRECOMPILE=true): until every worker has compiled every operation (its idle-time warm-up is over).
    if (settleCompiled) while (compiled.length < c.workers) await new Promise((r) => setTimeout(r, 20));
    else if (settle > 0) await new Promise((r) => setTimeout(r, settle));
    const times: string[] = [];
    const first: number[] = [];
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
      c.firstCpu.push(cpu);
      times.push(`${r.operationId} ${res.status} ${ms.toFixed(0)} (cpu ${cpu.toFixed(0)})`);
    }
    c.first.push(...first);
    c.rssAfter.push(Math.max(...procs.map(rssMb)));
    // Read after the requests (a joining worker may log its lines while they run), once every worker listens (at most 20 s more).
    for (let i = 0; i < 400 && !Number.isFinite(allReadyMs()); i += 1) await new Promise((r) => setTimeout(r, 50));
    const allReady = allReadyMs();
    c.allReady.push(allReady);
    process.stdout.write(
      `${c.label} start ${s + 1}: ready ${readyMs.toFixed(0)} ms, every worker ${allReady.toFixed(0)} ms (${c.workers > 1 ? `workers listened at ${listened().map((x) => x.toFixed(0)).join(', ')} ms; ` : ''}CPU of all processes ${c.readyCpu.at(-1)!.toFixed(0)} ms), RSS ${c.rssReady.at(-1)!.toFixed(0)} MB; first requests max ${max(first).toFixed(0)} ms; RSS after ${c.rssAfter.at(-1)!.toFixed(0)} MB\n`,
    );
    if (process.argv.includes('--verbose')) process.stdout.write(`  ${times.join(', ')}\n`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

async function main(): Promise<void> {
  const starts = Number(arg('starts', '5'));
  // WORKERS=1 and the default configuration (src/config.ts: WORKERS = the number of cores), unless --workers says otherwise.
  const workerCounts = [...new Set(arg('workers', `1,${os.availableParallelism()}`).split(',').map(Number))];
  if (workerCounts.some((w) => !Number.isInteger(w) || w < 1)) throw new Error('--workers takes a list of counts, e.g. 1,2');
  // --dist DIR[,DIR]: other builds of the server (e.g. of the commit before a change, for interleaved before/after runs).
  const dists = arg('dist', 'dist').split(',');
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
    const { child } = await start(await freePort(), 1, dists[0]!);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  const configurations: Configuration[] = dists.flatMap((dist) =>
    workerCounts.map((workers) => ({
      workers,
      dist,
      label: `WORKERS=${workers}${dists.length > 1 ? ` ${dist}` : ''}`,
      ready: [],
      allReady: [],
      readyCpu: [],
      first: [],
      firstCpu: [],
      rssReady: [],
      rssAfter: [],
    })),
  );
  // Interleaved: each configuration's starts spread over the run, under the same load.
  for (let s = 0; s < starts; s++) for (const c of configurations) await measure(c, s, reqs, settle, settleCompiled);

  process.stdout.write(`\n${starts} starts of each configuration, ${reqs.length} operations each (${reqs.map((r) => r.operationId).join(', ')})\n`);
  for (const c of configurations) {
    process.stdout.write(
      `${c.label}: readyz 200 (new connection each poll) after start: p50 ${fmt(c.ready, (v) => pct(v, 50))} ms, max ${fmt(c.ready, max)} ms; ` +
        `every worker listening: p50 ${fmt(c.allReady, (v) => pct(v, 50))} ms, max ${fmt(c.allReady, max)} ms; ` +
        `CPU of all processes by ready p50 ${fmt(c.readyCpu, (v) => pct(v, 50))} ms, max ${fmt(c.readyCpu, max)} ms; ` +
        `first request per operation: p50 ${fmt(c.first, (v) => pct(v, 50), 1)} ms, p99 ${fmt(c.first, (v) => pct(v, 99), 1)} ms, max ${fmt(c.first, max, 1)} ms; ` +
        `server CPU per request (10 ms ticks) p50 ${fmt(c.firstCpu, (v) => pct(v, 50))} ms, p99 ${fmt(c.firstCpu, (v) => pct(v, 99))} ms, sum per start ${(c.firstCpu.reduce((a, b) => a + b, 0) / starts).toFixed(0)} ms; ` +
        `RSS at ready max ${fmt(c.rssReady, max)} MB, after the ${reqs.length} requests max ${fmt(c.rssAfter, max)} MB\n`,
    );
  }
  process.stdout.write(`1-minute load average: ${load0.toFixed(1)} at the start, ${os.loadavg()[0]!.toFixed(1)} at the end (${os.loadavg().map((x) => x.toFixed(1)).join(' ')}) on ${os.cpus().length} cores\n\n`);
  process.stdout.write('| configuration | `/readyz` 200 after spawn, p50 / max ms | every worker listening, p50 / max ms | first request p50 / p99 / max ms |\n|---|---|---|---|\n');
  for (const c of configurations) {
    process.stdout.write(
      `| ${c.label} | ${fmt(c.ready, (v) => pct(v, 50))} / ${fmt(c.ready, max)} | ${fmt(c.allReady, (v) => pct(v, 50))} / ${fmt(c.allReady, max)} | ${fmt(c.first, (v) => pct(v, 50), 1)} / ${fmt(c.first, (v) => pct(v, 99), 1)} / ${fmt(c.first, max, 1)} |\n`,
    );
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
