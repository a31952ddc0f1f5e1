/**
 * Where the wall time of a posting goes through HTTP (issue 27): the service runs with
 * bench/trace-hooks.ts loaded, which marks the phases of every request (request in, write runner,
 * number allocation, posting transaction begun, body done, committed, response written, finished)
 * with the wall clock, the process's CPU and the time its main thread was runnable but not running
 * (the scheduler's statistics): what is left, "other", is time the thread slept (a timer, a lock, a
 * read of the socket, the client). Also per request: each thread's CPU, the collector's pauses, and
 * on SQLite the write lock's waits across processes.
 *
 *   [W=journals] [C=1] [SECS=4] [REPEAT=2] [MODES=plain,replay,keyed] node --import tsx bench/trace-posting.ts
 *   WORKERS=2 C=16 ... : the service as src/main.ts with WORKERS=2 (the cluster), MODES=plain only
 *   TEST_ENGINE=postgres TEST_POSTGRES_URL=postgres://... : on PostgreSQL
 *   SERVICE_NODE_OPTIONS="--max-semi-space-size=32" : node flags for the service's processes
 *
 * Modes: plain (a new document, no key), keyed (a new document and key), replay (one key and body
 * again and again: the HTTP surface alone), combo (MODES=...,combo: a replay that first runs the
 * write runner in process for a new document, bench/trace-hooks.ts: the engine and the surface one
 * after the other in one request, to compare with plain: what a first posting through HTTP does
 * beyond both shows as plain slower than combo). With one server process and C=1, after each round, the
 * write runner is also called in a loop inside the service's process for ENGINE_LOOP_MS (default
 * 3000; no HTTP; SIGUSR1 to the hooks), with the same statistics: the engine where the requests ran.
 */
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import knexFactory from 'knex';
import { createTestDatabase } from '../test/support/app';
import { installPostingFixture } from '../test/support/posting-fixture';
import { postJson, spawnServer } from '../test/support/server-process';
import { spawnCluster } from '../test/support/cluster-process';
import { ApiKeyRepository } from '../src/storage/api-keys';
import { parseDatabaseUrl } from '../src/storage/database';
import { SCENARIOS, type BenchContext } from './posting-scenarios';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<any>;

const SECS = Number(process.env.SECS ?? 4);
const REPEAT = Number(process.env.REPEAT ?? 2);
const CONNECTIONS = Number(process.env.C ?? 1);
const WORKERS = Number(process.env.WORKERS ?? 0);
type Mode = 'plain' | 'replay' | 'keyed' | 'combo';
const MODES = (process.env.MODES ?? (WORKERS ? 'plain' : 'plain,replay,keyed')).split(',') as Mode[];
/** The hooks, loaded in every process of the service (before src/main.ts or the test server). */
const HOOKS = `--require tsx/cjs --require ./bench/trace-hooks.ts ${process.env.SERVICE_NODE_OPTIONS ?? ''}`.trim();

interface Server {
  port: number;
  /** Processes that serve (the workers of a cluster). */
  pids(): number[];
  output(): string;
  kill(): Promise<void>;
}

async function startServer(dbUrl: string, knex: ReturnType<typeof knexFactory>, adminKey: string, apiKey: string): Promise<Server> {
  const env = { LOG_LEVEL: 'error', RATE_LIMIT_PER_MINUTE: '0', DB_POOL_MAX: '10', NODE_OPTIONS: HOOKS };
  if (WORKERS) {
    const keys = new ApiKeyRepository(knex);
    await keys.ensure(adminKey, 'trace admin', 'admin');
    await keys.ensure(apiKey, 'trace integration', 'integration');
    const cluster = await spawnCluster({ databaseUrl: dbUrl, workers: WORKERS, env });
    const pids = () => execFileSync('pgrep', ['-P', String(cluster.child.pid)]).toString().trim().split('\n').map(Number);
    return { port: cluster.port, pids, output: cluster.output, kill: () => cluster.kill() };
  }
  const server = await spawnServer({ databaseUrl: dbUrl, adminKey, apiKey, env });
  return { port: server.port, pids: () => [server.child.pid!], output: server.output, kill: () => server.kill('SIGTERM') };
}

/** Sends `signal` to every serving process and collects the lines starting with `prefix` they print. */
async function collect(server: Server, signal: NodeJS.Signals, prefix: string, waitMs: number): Promise<any[]> {
  const before = server.output().length;
  const pids = server.pids();
  for (const pid of pids) process.kill(pid, signal);
  const deadline = Date.now() + waitMs;
  let lines: string[] = [];
  while (Date.now() < deadline) {
    lines = server.output().slice(before).split('\n').filter((l) => l.startsWith(`${prefix} `));
    if (lines.length >= pids.length) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return lines.map((l) => JSON.parse(l.slice(prefix.length + 1)));
}

function print(label: string, d: any): void {
  process.stdout.write(`  ${label}: ${d.requests} requests; CPU a request by thread (ms) ${JSON.stringify(d.threadCpuMsPerRequest)}; collector ${JSON.stringify(d.gc)}${d.writeLock?.transactions ? `; SQLite write lock ${JSON.stringify(d.writeLock)}` : ''}\n`);
  for (const [phase, v] of Object.entries(d.phases)) process.stdout.write(`    ${phase.padEnd(62)} ${v}\n`);
}

async function main(): Promise<void> {
  const scenario = SCENARIOS.find((x) => x.name === (process.env.W ?? 'journals'));
  if (!scenario) throw new Error(`W: unknown write ${process.env.W}`);
  const db = await createTestDatabase();
  const knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 10 }).config);
  await installPostingFixture(knex);
  const adminKey = randomUUID();
  const apiKey = randomUUID();
  const runId = randomUUID().slice(0, 6);
  const server = await startServer(db.url, knex, adminKey, apiKey);
  try {
    const ctx: BenchContext = { knex, port: server.port, apiKey, runId };
    await scenario.setup?.(ctx);
    let seq = 0;
    for (let i = 0; i < 50; i += 1) {
      const n = (seq += 1);
      const res = await postJson(server.port, scenario.path, scenario.body(ctx, n, `W-${runId}-${n}`), { 'x-api-key': apiKey, 'Idempotency-Key': `W-${runId}-${n}` });
      if (res.status !== 200) throw new Error(`warm-up: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    const replay = { key: `R-${runId}`, body: scenario.body(ctx, (seq += 1), `R-${runId}`) };
    await postJson(server.port, scenario.path, replay.body, { 'x-api-key': apiKey, 'Idempotency-Key': replay.key });
    await collect(server, 'SIGUSR2', 'TRACE', 3000); // reset
    for (let round = 1; round <= REPEAT; round += 1) {
      for (const mode of MODES) {
        if (mode === 'plain' && scenario.key === 'required') continue;
        const result = await autocannon({
          url: `http://127.0.0.1:${server.port}${scenario.path}`,
          method: 'POST',
          connections: CONNECTIONS,
          duration: SECS,
          headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
          requests: [
            {
              setupRequest: (req: Record<string, any>) => {
                const n = (seq += 1);
                const again = mode === 'replay' || mode === 'combo';
                const body = again ? replay.body : scenario.body(ctx, n, `P-${runId}-${n}`);
                const key = again ? replay.key : mode === 'keyed' ? `K-${runId}-${n}` : undefined;
                return { ...req, body: JSON.stringify(body), headers: { ...req.headers, ...(key ? { 'idempotency-key': key } : {}), ...(mode === 'combo' ? { 'x-bench-combo': '1' } : {}) } };
              },
            },
          ],
        });
        process.stdout.write(
          `round ${round}, ${mode}, ${CONNECTIONS} connection(s)${WORKERS ? `, WORKERS=${WORKERS}` : ''}: ${(result['2xx'] / SECS).toFixed(0)}/s, latency p50 ${result.latency.p50} / p99 ${result.latency.p99} / max ${result.latency.max} ms, non-2xx ${result.non2xx}\n`,
        );
        const traces = await collect(server, 'SIGUSR2', 'TRACE', 3000);
        traces.forEach((d, i) => print(traces.length > 1 ? `worker ${i + 1}` : 'service', d));
      }
      if (!WORKERS && CONNECTIONS === 1) {
        const [engine] = await collect(server, 'SIGUSR1', 'TRACE-ENGINE', Number(process.env.ENGINE_LOOP_MS ?? 3000) + 30_000);
        process.stdout.write(`round ${round}, the write runner in a loop inside the service's process: ${JSON.stringify(engine)}\n`);
        await collect(server, 'SIGUSR2', 'TRACE', 3000); // reset
      }
    }
  } finally {
    await server.kill();
    await knex.destroy();
    await db.drop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
