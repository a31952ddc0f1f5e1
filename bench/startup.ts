/**
 * Start-up benchmark: the production build (`node dist/src/main.js`, built first) on an existing,
 * seeded SQLite database (the demo company, made once in bench/.data/startup.sqlite by a first
 * start). Per start: time from spawn to the first 200 of /readyz (polled every 5 ms), resident
 * set then, then one request to each of 20 operations (their first request in this process: the
 * contract examples of generated/openapi.public.yaml, writes as dry runs), each timed, and the
 * resident set after them. Repeated `--starts N` times (default 5); prints per start and p50/p99.
 *
 *   npx tsx bench/startup.ts [--starts N] [--no-build]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
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

async function start(port: number): Promise<{ child: ChildProcess; readyMs: number }> {
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, PORT: String(port), DATABASE_URL: `sqlite://${DB}`, DEMO_API_KEY: KEY, LOG_LEVEL: 'info', VALIDATE_RESPONSES: 'false', RATE_LIMIT_PER_MINUTE: '100000' },
  });
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr = (stderr + String(c)).slice(-4000)));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${stderr}`);
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) return { child, readyMs: Number(process.hrtime.bigint() - t0) / 1e6 };
    if (Number(process.hrtime.bigint() - t0) > 120e9) throw new Error(`not ready after 120 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const starts = Number(arg('starts', '5'));
  if (!process.argv.includes('--no-build')) {
    execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  }
  fs.mkdirSync(DATA_DIR, { recursive: true });
  const reqs = requests();
  if (!fs.existsSync(DB)) {
    // First start: migrates and seeds the demo company; not measured.
    const { child } = await start(await freePort());
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  const ready: number[] = [];
  const readyCpu: number[] = [];
  const first: number[] = [];
  const rssReady: number[] = [];
  const rssAfter: number[] = [];
  for (let s = 0; s < starts; s++) {
    const port = await freePort();
    const { child, readyMs } = await start(port);
    try {
      ready.push(readyMs);
      readyCpu.push(cpuMs(child.pid!));
      rssReady.push(rssMb(child.pid!));
      const times: string[] = [];
      for (const r of reqs) {
        const t = process.hrtime.bigint();
        const res = await fetch(`http://127.0.0.1:${port}${r.path}`, {
          method: r.method,
          headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
          body: JSON.stringify(r.body),
        });
        await res.arrayBuffer();
        const ms = Number(process.hrtime.bigint() - t) / 1e6;
        if (res.status >= 500) throw new Error(`${r.operationId} answered ${res.status}`);
        first.push(ms);
        times.push(`${r.operationId} ${res.status} ${ms.toFixed(0)}`);
      }
      rssAfter.push(rssMb(child.pid!));
      process.stdout.write(`start ${s + 1}: ready ${readyMs.toFixed(0)} ms (CPU ${readyCpu.at(-1)!.toFixed(0)} ms), RSS ${rssReady.at(-1)!.toFixed(0)} MB; first requests max ${Math.max(...first.slice(-reqs.length)).toFixed(0)} ms; RSS after ${rssAfter.at(-1)!.toFixed(0)} MB\n`);
      if (process.argv.includes('--verbose')) process.stdout.write(`  ${times.join(', ')}\n`);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
  process.stdout.write(
    `\n${starts} starts, ${reqs.length} operations each (${reqs.map((r) => r.operationId).join(', ')})\n` +
      `readyz 200 after start: p50 ${pct(ready, 50).toFixed(0)} ms, max ${Math.max(...ready).toFixed(0)} ms; CPU used by then p50 ${pct(readyCpu, 50).toFixed(0)} ms, max ${Math.max(...readyCpu).toFixed(0)} ms\n` +
      `load average at the end: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} on ${os.cpus().length} cores\n` +
      `first request per operation: p50 ${pct(first, 50).toFixed(1)} ms, p99 ${pct(first, 99).toFixed(1)} ms, max ${Math.max(...first).toFixed(1)} ms\n` +
      `RSS at ready: max ${Math.max(...rssReady).toFixed(0)} MB; after the ${reqs.length} requests: max ${Math.max(...rssAfter).toFixed(0)} MB\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
