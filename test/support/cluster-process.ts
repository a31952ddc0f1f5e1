/**
 * The real entry point (src/main.ts) in a child process with WORKERS=n, on a free port: what an
 * operator runs, with the default process model (bench/posting.ts `BENCH_SERVER=cluster`). The API
 * keys must exist in the database before (ApiKeyRepository.ensure). Resolves when /readyz has
 * answered 200 on `readyPolls` fresh connections in a row (connections spread over the workers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

export interface SpawnedCluster {
  port: number;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM (a graceful drain), SIGKILL after 10 s. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 60_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

function readyz(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}

export async function spawnCluster(options: { databaseUrl: string; workers: number; env?: Record<string, string>; readyPolls?: number }): Promise<SpawnedCluster> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'main.ts')], {
    cwd: path.resolve(__dirname, '..', '..'),
    env: { ...process.env, DATABASE_URL: options.databaseUrl, PORT: String(port), WORKERS: String(options.workers), SEED_ON_START: 'false', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let inARow = 0;
  const wanted = options.readyPolls ?? 10 * options.workers;
  while (inARow < wanted) {
    if (child.exitCode !== null) throw new Error(`cluster exited before ready:\n${out}`);
    if (Date.now() > deadline) throw new Error(`cluster not ready in ${STARTUP_TIMEOUT_MS} ms:\n${out}`);
    inARow = (await readyz(port)) === 200 ? inARow + 1 : 0;
    if (inARow === 0) await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    child,
    output: () => out,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
