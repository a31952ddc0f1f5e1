/**
 * The real service in a child process, for tests that kill it (crash safety, restart while
 * locked). As a script it starts the app exactly as production wires it (createServices +
 * createApp) on DATABASE_URL and PORT (0 = any), makes sure ADMIN_KEY and API_KEY exist, and
 * prints `LISTENING <port>` on stdout. POSTING_DELAY_MS holds every posting transaction open that
 * long before it commits, so that a kill lands mid-write.
 *
 * As a module, `spawnServer()` runs that script and resolves when it listens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config';
import { createServices } from '../../src/services';
import { createApp } from '../../src/app';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';
import { ApiKeyRepository } from '../../src/storage/api-keys';

export interface SpawnedServer {
  port: number;
  child: ChildProcess;
  exited: Promise<number | null>;
  output: () => string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface SpawnOptions {
  databaseUrl: string;
  adminKey: string;
  apiKey: string;
  env?: Record<string, string>;
  /** Extra node flags (e.g. --cpu-prof). */
  nodeArgs?: string[];
}

export async function spawnServer(options: SpawnOptions): Promise<SpawnedServer> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', path.join(__dirname, 'server-process.ts')], {
    cwd: path.resolve(__dirname, '..', '..'),
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      PORT: '0',
      ADMIN_KEY: options.adminKey,
      API_KEY: options.apiKey,
      LOG_LEVEL: 'warn',
      SERVER_PROCESS: '1',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 60 s:\n${out}`)), 60_000);
    const check = () => {
      const m = /LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', check);
    exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`server exited before listening:\n${out}`));
    });
  });
  return {
    port,
    child,
    exited,
    output: () => out,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

export interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** POST JSON to the spawned server (a fresh connection per request). */
export function postJson(port: number, urlPath: string, body: unknown, headers: Record<string, string>): Promise<HttpResult> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: urlPath, agent: false, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = text;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function main(): Promise<void> {
  const config = { ...loadConfig(process.env), seedOnStart: false };
  const target = parseDatabaseUrl(config.databaseUrl, { min: 0, max: config.dbPoolMax });
  const knex = openDatabase(target);
  const logger = pino({ level: config.logLevel });
  const keys = new ApiKeyRepository(knex);
  await keys.ensure(process.env.ADMIN_KEY!, 'crash test admin', 'admin');
  await keys.ensure(process.env.API_KEY!, 'crash test integration', 'integration');
  const services = createServices(config, logger, knex, target.engine);
  await services.heartbeat.start();
  await services.lock.load();
  const delay = Number(process.env.POSTING_DELAY_MS ?? 0);
  if (delay > 0) services.writes.hooks.beforeCommit = () => new Promise<void>((r) => setTimeout(r, delay));
  const app = createApp(services);
  const server = http.createServer(app);
  process.on('SIGTERM', () => process.exit(0));
  server.listen(config.port, '127.0.0.1', () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    process.stdout.write(`LISTENING ${port}\n`);
  });
}

if (require.main === module && process.env.SERVER_PROCESS === '1') {
  main().catch((err) => {
    process.stderr.write(`server-process failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
