/**
 * The real entry point (src/main.ts) in a child process with WORKERS=n, on a free port: what an
 * operator runs, with the default process model (bench/posting.ts `BENCH_SERVER=cluster`). The API
 * keys must exist in the database before (ApiKeyRepository.ensure). Resolves when every worker
 * listens (the primary's banner on stderr, printed whatever LOG_LEVEL: the port opens with the
 * first ready worker and the others join, so /readyz alone may be answered by one worker only)
 * and /readyz has answered 200 on `readyPolls` fresh connections in a row (connections spread
 * over the workers).
 * The JSON log lines are kept as they arrive (`logLines`), so the workers' pids stay known after
 * a worker is replaced (test/deployment/ kills single workers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { freePort } from './net';

export interface SpawnedCluster {
  port: number;
  child: ChildProcess;
  output: () => string;
  /** Every JSON log line of the primary and its workers so far (the last MAX_LOG_LINES). */
  logLines: () => Array<Record<string, any>>;
  /** The pid of each worker that announced it listens, by worker index (a replacement overwrites its predecessor). */
  workerPids: () => Map<number, number>;
  /** The primary's exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /**
   * SIGTERM (default: a graceful drain, SIGKILL after 10 s). SIGKILL kills the primary and every
   * worker at once, as a machine that dies (a primary killed alone lets its workers exit on their
   * own), and resolves when none of them runs any more.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Log lines kept per cluster (a request may log one). */
const MAX_LOG_LINES = 50_000;

const STARTUP_TIMEOUT_MS = 60_000;

/** GET /readyz on a new connection (successive calls reach the workers in turn): its status, 0 when refused. */
export function readyz(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}

/** Whether the process runs (a zombie, dead but not yet reaped by its new parent, does not). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // Linux: the state follows the command name in parentheses; Z is a zombie.
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

type SpawnOptions = Parameters<typeof spawnClusterOn>[0];

/**
 * Starts a cluster on `options.port`, or on a port freePort() found. Such a port is free only when
 * it was found: another process (a parallel test file, an outgoing connection's ephemeral port) may
 * take it before the cluster listens, and the start then fails with EADDRINUSE. Then another port
 * is tried, up to 3 times; a port the caller chose (a restart on the same port) is not changed.
 */
export async function spawnCluster(options: SpawnOptions): Promise<SpawnedCluster> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await spawnClusterOn(options);
    } catch (err) {
      const portTaken = err instanceof Error && /EADDRINUSE/.test(err.message);
      if (!portTaken || options.port !== undefined || attempt >= 3) throw err;
    }
  }
}

async function spawnClusterOn(options: {
  databaseUrl: string;
  workers: number;
  env?: Record<string, string>;
  readyPolls?: number;
  port?: number;
  /** How long the start may take (default 60 s; a start that migrates an empty database takes longer). */
  startupTimeoutMs?: number;
  /** A process group of its own (its id is the primary's pid): `process.kill(-pid)` signals every process of it, as systemd's KillMode=control-group does. */
  detached?: boolean;
}): Promise<SpawnedCluster> {
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'main.ts')], {
    cwd: path.resolve(__dirname, '..', '..'),
    env: { ...process.env, DATABASE_URL: options.databaseUrl, PORT: String(port), WORKERS: String(options.workers), SEED_ON_START: 'false', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached === true,
  });
  let out = '';
  let partial = '';
  const lines: Array<Record<string, any>> = [];
  const workers = new Map<number, number>();
  child.stdout!.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
    const text = partial + d.toString();
    const complete = text.split('\n');
    partial = complete.pop()!;
    for (const line of complete) {
      if (!line.startsWith('{')) continue;
      let parsed: Record<string, any>;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue;
      }
      lines.push(parsed);
      if (lines.length > MAX_LOG_LINES) lines.shift();
      if (parsed.msg === 'listening' && parsed.worker) workers.set(parsed.worker, parsed.pid);
    }
  });
  // The banner: printed by the primary once every worker listens (by the process itself with WORKERS=1).
  let everyWorker = false;
  let errTail = '';
  child.stderr!.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
    errTail = (errTail + d.toString()).slice(-200);
    if (errTail.includes(' listening on http')) everyWorker = true;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const startupTimeoutMs = options.startupTimeoutMs ?? STARTUP_TIMEOUT_MS;
  const deadline = Date.now() + startupTimeoutMs;
  let inARow = 0;
  const wanted = options.readyPolls ?? 10 * options.workers;
  while (inARow < wanted || !everyWorker) {
    if (child.exitCode !== null) throw new Error(`cluster exited before ready:\n${out}`);
    if (Date.now() > deadline) throw new Error(`cluster not ready in ${startupTimeoutMs} ms:\n${out}`);
    inARow = (await readyz(port)) === 200 ? inARow + 1 : 0;
    if (inARow === 0 || !everyWorker) await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    child,
    output: () => out,
    logLines: () => lines,
    workerPids: () => new Map(workers),
    exited,
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (signal === 'SIGKILL') {
        const pids = [...workers.values()];
        for (const pid of [child.pid!, ...pids]) if (running(pid)) process.kill(pid, 'SIGKILL');
        await exited;
        for (let i = 0; i < 200 && pids.some(running); i += 1) await new Promise((r) => setTimeout(r, 25));
        return;
      }
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
