/**
 * Loaded into each process of the service by bench/trace-posting.ts (NODE_OPTIONS `--require`;
 * a measuring aid, never part of the service): per request, marks at the phases of a write, each
 * with the wall clock, the process's CPU and the time the main thread was runnable but not running
 * (/proc/self/task/<pid>/schedstat). SIGUSR2 prints, on stderr, a line `TRACE {...}` with the mean
 * (and max) of each phase, each thread's CPU a request, the collector's pauses and SQLite's write
 * lock waits, and resets them; SIGUSR1 runs the write runner in a loop in this process (no HTTP)
 * and prints `TRACE-ENGINE {...}`. A request with the header `x-bench-combo: 1` first runs the
 * write runner in process for a new document (the last request without a key, as SIGUSR1 does,
 * outside the request's marks), then goes on: a replay so marked costs the engine and the surface
 * one after the other in one request (bench/trace-posting.ts, mode combo).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import http from 'node:http';
import { performance, PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { WriteRunner } from '../src/engines/posting/runner';
import { Boundary } from '../src/storage/boundary';

interface Mark { name: string; t: number; run: number; wait: number }
const statFile = `/proc/self/task/${process.pid}/schedstat`;
function mark(name: string): Mark {
  // The CPU of the process (getrusage: exact for the running thread; the GC's helper threads
  // included); the time runnable but not running from the scheduler's statistics of the main
  // thread (updated at each switch: exact while this thread runs).
  const wait = Number(fs.readFileSync(statFile, 'utf8').split(' ')[1]);
  const cpu = process.cpuUsage();
  return { name, t: performance.now(), run: (cpu.user + cpu.system) / 1000, wait: wait / 1e6 };
}
/** The marks of the request being served (several at a time with several connections); `combo`: see above. */
const current = new AsyncLocalStorage<Mark[] & { combo?: boolean }>();
const totals = new Map<string, { n: number; wall: number; cpu: number; wait: number; max: number }>();
let requests = 0;
let lastFinish: Mark | undefined;
function add(key: string, a: Mark, b: Mark): void {
  const x = totals.get(key) ?? { n: 0, wall: 0, cpu: 0, wait: 0, max: 0 };
  x.max = Math.max(x.max, b.t - a.t);
  x.n += 1;
  x.wall += b.t - a.t;
  x.cpu += b.run - a.run;
  x.wait += b.wait - a.wait;
  totals.set(key, x);
}
const at = (name: string) => current.getStore()?.push(mark(name));

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (this: http.Server, ev: string, ...args: unknown[]) {
  if (ev === 'request') {
    const res = args[1] as http.ServerResponse;
    const marks: Mark[] & { combo?: boolean } = [mark('request')];
    marks.combo = (args[0] as http.IncomingMessage).headers['x-bench-combo'] === '1';
    if (lastFinish) add('(between requests: client, network, event loop)', lastFinish, marks[0]!);
    const end = res.end;
    res.end = function (this: http.ServerResponse, ...a: unknown[]) {
      marks.push(mark('res.end'));
      const r = (end as (...x: unknown[]) => unknown).apply(this, a);
      marks.push(mark('res.end returned'));
      return r;
    } as typeof res.end;
    res.on('finish', () => {
      marks.push(mark('finish'));
      requests += 1;
      for (let i = 1; i < marks.length; i += 1) add(`${marks[i - 1]!.name} -> ${marks[i]!.name}`, marks[i - 1]!, marks[i]!);
      add('(request total)', marks[0]!, marks.at(-1)!);
      lastFinish = marks.at(-1);
    });
    return current.run(marks, () => emit.apply(this, [ev, ...args] as never));
  }
  return emit.apply(this, [ev, ...args] as never);
} as typeof http.Server.prototype.emit;

const run = WriteRunner.prototype.run;
let lastRun: { runner: WriteRunner; args: Parameters<typeof run> } | undefined;
let comboSeq = 0;
WriteRunner.prototype.run = async function (this: WriteRunner, ...a: Parameters<typeof run>) {
  if (a[1].idempotencyKey === undefined) lastRun = { runner: this, args: a };
  if (current.getStore()?.combo) {
    if (!lastRun) throw new Error('combo: no posting without a key to repeat yet (run the mode plain first)');
    const { runner, args } = lastRun;
    const req = { ...args[1], body: withNewNumber(args[1].body, `C${process.pid}-${(comboSeq += 1)}`) };
    const out = await current.exit(() => run.apply(runner, [args[0], req]));
    if (out.status !== 200) throw new Error(`combo: ${out.status} ${JSON.stringify(out.body)}`);
  }
  at('runner.run');
  try {
    return await run.apply(this, a);
  } finally {
    at('runner.run returned');
  }
} as typeof run;

const within = Boundary.prototype.within;
Boundary.prototype.within = async function (this: Boundary, work: () => Promise<unknown>, call: { what?: string } = {}) {
  const what = call.what?.startsWith('posting') || call.what?.startsWith('allocating') ? call.what.split(' ')[0] : 'boundary';
  at(`${what} start`);
  try {
    return await within.call(this, work, call as never);
  } finally {
    at(`${what} settled`);
  }
} as typeof within;

const transaction = Boundary.prototype.transaction;
Boundary.prototype.transaction = function (this: Boundary, fn: (trx: any) => Promise<unknown>, call?: unknown) {
  return transaction.call(this, async (trx: any) => {
    at('transaction begun');
    const value = await fn(trx);
    at('transaction body done (COMMIT next)');
    return value;
  }, call as never);
} as typeof transaction;

/** The body of a journal or invoice with another document number (the last 20 characters of `n`). */
function withNewNumber(body: unknown, n: string): unknown {
  const b = body as Record<string, unknown>;
  const field = 'transactionNumber' in b ? 'transactionNumber' : 'invoiceNumber' in b ? 'invoiceNumber' : undefined;
  return field ? { ...b, [field]: n.slice(-20) } : b;
}

/** CPU of each thread of the process since the last dump (ms, from /proc: 10 ms ticks), by thread name. */
function threadCpu(): Map<string, number> {
  const m = new Map<string, number>();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const comm = fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]);
      const name = tid === String(process.pid) ? 'main' : comm;
      m.set(name, (m.get(name) ?? 0) + ticks * 10);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return m;
}
let threads0 = threadCpu();
const gc = new Map<string, { n: number; ms: number }>();
const GC_KINDS: Record<number, string> = { [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge', [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact', [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak' };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = GC_KINDS[(e as any).detail?.kind ?? (e as any).kind] ?? 'other';
    const x = gc.get(kind) ?? { n: 0, ms: 0 };
    x.n += 1;
    x.ms += e.duration;
    gc.set(kind, x);
  }
}).observe({ entryTypes: ['gc'] });

/**
 * SQLite: the write lock across processes. Each BEGIN IMMEDIATE that fails with SQLITE_BUSY is a
 * try of src/storage/database.ts takeWriteLock; the wait of a transaction is from its first failed
 * try to its successful one (a transaction that got the lock at once waited 0).
 */
const lockWaits: number[] = [];
let lockTries = 0;
let firstTry: number | undefined;
try {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Database = require('better-sqlite3') as { prototype: { exec(sql: string): unknown } };
  const exec = Database.prototype.exec;
  Database.prototype.exec = function (this: unknown, sql: string) {
    if (sql !== 'BEGIN IMMEDIATE') return exec.call(this, sql);
    const now = performance.now();
    try {
      const out = exec.call(this, sql);
      lockWaits.push(firstTry === undefined ? 0 : now - firstTry);
      firstTry = undefined;
      return out;
    } catch (err) {
      lockTries += 1;
      firstTry ??= now;
      throw err;
    }
  };
} catch {
  // no SQLite driver: nothing to time
}

function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

process.on('SIGUSR2', () => {
  const threads1 = threadCpu();
  const waited = lockWaits.filter((w) => w > 0);
  const lock = { transactions: lockWaits.length, waited: waited.length, failedTries: lockTries, p50Ms: +percentile(waited, 0.5).toFixed(2), p99Ms: +percentile(waited, 0.99).toFixed(2), maxMs: +Math.max(0, ...waited).toFixed(2), totalMs: +waited.reduce((a, b) => a + b, 0).toFixed(1) };
  lockWaits.length = 0;
  lockTries = 0;
  const perThread: Record<string, number> = {};
  for (const [k, v] of threads1) perThread[k] = +((v - (threads0.get(k) ?? 0)) / Math.max(1, requests)).toFixed(3);
  threads0 = threads1;
  const gcPer: Record<string, string> = {};
  for (const [k, x] of gc) gcPer[k] = `${(x.n / Math.max(1, requests)).toFixed(3)} a request, ${(x.ms / Math.max(1, requests)).toFixed(3)} ms a request`;
  gc.clear();
  const out: Record<string, string> = {};
  for (const [k, x] of totals) out[k] = `wall ${(x.wall / x.n).toFixed(3)} = cpu ${(x.cpu / x.n).toFixed(3)} + runnable ${(x.wait / x.n).toFixed(3)} + other ${((x.wall - x.cpu - x.wait) / x.n).toFixed(3)} ms, max ${x.max.toFixed(1)} ms (n ${x.n})`;
  process.stderr.write(`TRACE ${JSON.stringify({ requests, phases: out, threadCpuMsPerRequest: perThread, gc: gcPer, writeLock: lock })}\n`);
  totals.clear();
  requests = 0;
  lastFinish = undefined;
});

/**
 * SIGUSR1: the write runner called in a loop in this process, no HTTP (the same call the last
 * request without a key made, a new document number each time), for ENGINE_LOOP_MS; prints the
 * same statistics (a line `TRACE-ENGINE {...}`).
 */
process.on('SIGUSR1', () => {
  void (async () => {
    if (!lastRun) return;
    const { runner, args } = lastRun;
    const t0 = mark('start');
    const th0 = threadCpu();
    gc.clear();
    const end = performance.now() + Number(process.env.ENGINE_LOOP_MS ?? 3000);
    let n = 0;
    while (performance.now() < end) {
      n += 1;
      const req = { ...args[1], body: withNewNumber(args[1].body, `E${process.pid}-${Date.now()}-${n}`) };
      const out = await runner.run(args[0], req);
      if (out.status !== 200) throw new Error(`engine loop: ${out.status} ${JSON.stringify(out.body)}`);
    }
    const t1 = mark('end');
    const th1 = threadCpu();
    const perThread: Record<string, number> = {};
    for (const [k, v] of th1) perThread[k] = +((v - (th0.get(k) ?? 0)) / n).toFixed(3);
    const gcPer: Record<string, string> = {};
    for (const [k, x] of gc) gcPer[k] = `${(x.n / n).toFixed(3)} a document, ${(x.ms / n).toFixed(3)} ms a document`;
    gc.clear();
    process.stderr.write(`TRACE-ENGINE ${JSON.stringify({ documents: n, perDocument: `wall ${((t1.t - t0.t) / n).toFixed(3)} = cpu ${((t1.run - t0.run) / n).toFixed(3)} + runnable ${((t1.wait - t0.wait) / n).toFixed(3)} ms`, threadCpuMsPerDocument: perThread, gc: gcPer })}\n`);
  })();
});
