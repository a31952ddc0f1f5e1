/**
 * Posting benchmark: documents per second through HTTP for each write of bench/posting-scenarios.ts
 * (journals of 3 lines, AP invoices of 10 lines, inventory allocations of 2 lines, PO receipts of
 * 2 lines, payroll records of 15 job timecard lines, service work orders, service inventories),
 * with and without an Idempotency-Key (with only, where the write requires one), replays per
 * second, and in the same run, interleaved:
 *   - raw: the same rows written by a raw knex transaction loop (no checks, no reads, no HTTP;
 *     where the key is required, receipts, with the idempotency record the service writes: its
 *     claim committed before the posting and its completion inside, bench/posting-scenarios.ts);
 *   - engine: the write runner called in-process, no HTTP (bench/posting-engine-loop.ts: the call
 *     the route makes, on a connection of its own in this process);
 *   - reachable: 1 / (engine ms + replay ms) documents a second. A replay (a completed key answered
 *     from memory) is the HTTP surface alone, the engine run is the write alone: a document through
 *     HTTP costs both, so this is the rate the service reaches when nothing else waits;
 *   - the ratios HTTP ÷ reachable and engine ÷ raw, and HTTP ÷ raw.
 *
 *   node --import tsx bench/posting.ts                     SQLite (seeded demo company copy)
 *   TEST_ENGINE=postgres TEST_POSTGRES_URL=postgres://... node --import tsx bench/posting.ts
 *
 *   BENCH_SECONDS (default 8) per measurement, BENCH_REPEAT (default 3, median reported),
 *   BENCH_WARMUP_SECONDS (default 6) of load per write through HTTP and in the engine loop before
 *   the first measurement (0: none),
 *   BENCH_CONNECTIONS (default 1,8) HTTP connections, BENCH_WRITES (default all:
 *   journals,invoices,allocations,receipts,payrolls,serviceInvoices,serviceInventories) the scenarios
 *   to run; BENCH_DOCUMENT_COPIES (default 20,000) payroll records and work orders copied for the run;
 *   the raw and engine loops run with as many concurrent transactions as HTTP connections, up to the
 *   pool (1 on SQLite: one writer);
 *   BENCH_WORKERS=n runs the service as src/main.ts with WORKERS=n (unset: one server process).
 *
 * The service runs in a child process (test/support/server-process.ts: the production wiring,
 * no response validation), so the load generator does not share its event loop.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../test/support/app';
import { installPostingFixture } from '../test/support/posting-fixture';
import { postJson, spawnServer } from '../test/support/server-process';
import { spawnCluster } from '../test/support/cluster-process';
import { ApiKeyRepository } from '../src/storage/api-keys';
import { parseDatabaseUrl } from '../src/storage/database';
import { engineOf } from '../src/storage/dialect';
import { SCENARIOS, rawDocument, type BenchContext, type Scenario } from './posting-scenarios';
import { openEngineLoop } from './posting-engine-loop';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<any>;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
/**
 * Load before the first measurement, per write: the service posting through HTTP and the engine loop
 * each for this long. V8 optimises the posting path under load over about 10 s (hundreds of functions,
 * compiled on helper threads: 0.36 ms of their CPU a journal in the first 4 s, 0.05 after): without it
 * the first window of plain postings measured the compiler, and the replays, measured after, did not
 * (decision 0381).
 */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 6);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,8').split(',').map(Number);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const SERVER_WORKERS = process.env.BENCH_WORKERS ? Number(process.env.BENCH_WORKERS) : 0;
const WRITES = (process.env.BENCH_WRITES ?? SCENARIOS.map((s) => s.name).join(',')).split(',').map((w) => w.trim()).filter(Boolean);
const runId = randomUUID().slice(0, 6);
let seq = 0;
/** Record numbers of the raw loops: far above anything the service allocates, never reused in a run. */
let rawRecnum = 50_000_000 + Math.floor(Math.random() * 100) * 100_000;

interface Load {
  perSecond: number;
  p50: number;
  p99: number;
  /** The longest request of the run (ms). */
  max: number;
  errors: number;
  /** First non-2xx answers (status and body start), to tell why. */
  samples: string[];
}

/** autocannon for SECONDS against `path`; each request gets body(n) and key(n) for a new n. */
async function load(port: number, apiKey: string, path: string, connections: number, body: (n: number) => unknown, key: (n: number) => string | undefined, seconds = SECONDS): Promise<Load> {
  const samples: string[] = [];
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    method: 'POST',
    connections,
    duration: seconds,
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    requests: [
      {
        setupRequest: (req: Record<string, any>) => {
          const n = (seq += 1);
          const k = key(n);
          return { ...req, body: JSON.stringify(body(n)), headers: { ...req.headers, ...(k ? { 'idempotency-key': k } : {}) } };
        },
        onResponse: (status: number, responseBody: string) => {
          if ((status < 200 || status >= 300) && samples.length < 3) samples.push(`${status} ${String(responseBody).slice(0, 200)}`);
        },
      },
    ],
  });
  const ok = result['2xx'] as number;
  return { perSecond: ok / seconds, p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max, errors: result.non2xx + result.errors, samples };
}

/**
 * `scenario.raw` in a loop of transactions for `seconds`, `concurrency` at a time: documents per second.
 */
async function rawLoop(knex: Knex, ctx: BenchContext, scenario: Scenario, seconds: number, concurrency = 1): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let n = 0;
  const worker = async () => {
    while (Date.now() < end) {
      const recnum = (rawRecnum += 1);
      await rawDocument(knex, scenario, ctx, recnum);
      n += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return n / seconds;
}

function fmt(n: number): string {
  return n >= 100 ? n.toFixed(0) : n.toFixed(1);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const tagOf = (prefix: string, n: number) => `${prefix}-${runId}-${n}`;

async function main(): Promise<void> {
  const scenarios = WRITES.map((w) => {
    const s = SCENARIOS.find((x) => x.name === w);
    if (!s) throw new Error(`BENCH_WRITES: unknown write ${w} (known: ${SCENARIOS.map((x) => x.name).join(', ')})`);
    return s;
  });
  const db = await createTestDatabase();
  const knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 10 }).config);
  await installPostingFixture(knex);
  const engine = engineOf(knex);
  const adminKey = randomUUID();
  const apiKey = randomUUID();
  const serverEnv = { LOG_LEVEL: 'error', RATE_LIMIT_PER_MINUTE: '0', DB_POOL_MAX: '10' };
  // BENCH_WORKERS=n: the real entry point (src/main.ts) with WORKERS=n, the process model an
  // operator runs (the default is one worker per core); unset: one server process.
  if (SERVER_WORKERS) {
    const keys = new ApiKeyRepository(knex);
    await keys.ensure(adminKey, 'bench admin', 'admin');
    await keys.ensure(apiKey, 'bench integration', 'integration');
  }
  const server = SERVER_WORKERS
    ? await spawnCluster({ databaseUrl: db.url, workers: SERVER_WORKERS, env: serverEnv })
    : await spawnServer({ databaseUrl: db.url, adminKey, apiKey, env: serverEnv });
  const ctx: BenchContext = { knex, port: server.port, apiKey, runId };
  let engineLoop: Awaited<ReturnType<typeof openEngineLoop>> | undefined;
  const loads: number[][] = [];
  const sampleLoad = () => loads.push(os.loadavg());
  try {
    for (const s of scenarios) await s.setup?.(ctx);
    engineLoop = await openEngineLoop(db.url, ctx);
    // Warm up: compile the validator for every operation, first balance rows, and the service's
    // record-number counters synced with max(recnum) before any raw row exists.
    for (let i = 0; i < 20; i += 1) {
      for (const s of scenarios) {
        const n = (seq += 1);
        const res = await postJson(server.port, s.path, s.body(ctx, n, tagOf('W', n)), { 'x-api-key': apiKey, 'Idempotency-Key': `bench-warm-${runId}-${n}` });
        if (res.status !== 200) throw new Error(`warm-up ${s.name}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
        const e = (seq += 1);
        await engineLoop.post(s, e, tagOf('WE', e));
      }
    }
    // The raw loops too (a first raw document reads what it needs once: receipts' stored answer).
    for (const s of scenarios) for (let i = 0; i < 5; i += 1) await rawDocument(knex, s, ctx, (rawRecnum += 1));
    // Under load until V8 has optimised each path (WARMUP_SECONDS): new documents through HTTP, with
    // a key where it is required, and the engine loop.
    if (WARMUP_SECONDS > 0) {
      for (const s of scenarios) {
        const warm = await load(server.port, apiKey, s.path, 1, (n) => s.body(ctx, n, tagOf('WL', n)), (n) => (s.key === 'required' ? `bench-warm-${runId}-${n}` : undefined), WARMUP_SECONDS);
        if (warm.errors > 0) throw new Error(`warm-up ${s.name}: ${warm.samples.join(' | ')}`);
        await engineLoop.run(s, WARMUP_SECONDS, 1, () => (seq += 1), (n) => tagOf('WE', n));
      }
    }
    const rows: Array<Record<string, string | number>> = [];
    for (const c of CONNECTIONS) {
      const pool = engine === 'sqlite' ? 1 : Math.min(c, 10);
      const m = new Map<string, { raw: number[]; engine: number[]; plain: number[]; keyed: number[]; replay: number[]; p99: number; max: number; errors: number; samples: string[] }>();
      const replays = new Map<string, { body: unknown; key: string }>();
      for (const s of scenarios) {
        m.set(s.name, { raw: [], engine: [], plain: [], keyed: [], replay: [], p99: 0, max: 0, errors: 0, samples: [] });
        const n = (seq += 1);
        const replay = { body: s.body(ctx, n, tagOf('BR', n)), key: `bench-replay-${s.name}-${runId}-${c}-${n}` };
        const first = await postJson(server.port, s.path, replay.body, { 'x-api-key': apiKey, 'Idempotency-Key': replay.key });
        if (first.status !== 200) throw new Error(`replay setup ${s.name}: ${first.status}`);
        replays.set(s.name, replay);
      }
      // Every measurement REPEAT times, interleaved (raw and HTTP alternate), the median reported:
      // a shared, busy machine drifts by tens of percent within a minute.
      for (let rep = 0; rep < REPEAT; rep += 1) {
        for (const s of scenarios) {
          const r = m.get(s.name)!;
          const replay = replays.get(s.name)!;
          sampleLoad();
          r.raw.push(await rawLoop(knex, ctx, s, SECONDS, pool));
          r.engine.push(await engineLoop.run(s, SECONDS, pool, () => (seq += 1), (n) => tagOf('BE', n)));
          const runs: Load[] = [];
          if (s.key === 'optional') {
            const plain = await load(server.port, apiKey, s.path, c, (n) => s.body(ctx, n, tagOf('BP', n)), () => undefined);
            r.plain.push(plain.perSecond);
            runs.push(plain);
          }
          const keyed = await load(server.port, apiKey, s.path, c, (n) => s.body(ctx, n, tagOf('BK', n)), (n) => `bench-${runId}-${n}`);
          r.keyed.push(keyed.perSecond);
          runs.push(keyed);
          const replayed = await load(server.port, apiKey, s.path, c, () => replay.body, () => replay.key);
          r.replay.push(replayed.perSecond);
          runs.push(replayed);
          r.p99 = Math.max(r.p99, runs[0]!.p99);
          r.max = Math.max(r.max, runs[0]!.max);
          for (const x of runs) {
            r.errors += x.errors;
            r.samples.push(...x.samples);
          }
        }
      }
      sampleLoad();
      for (const s of scenarios) {
        const r = m.get(s.name)!;
        const raw = median(r.raw);
        const engineRate = median(r.engine);
        const keyed = median(r.keyed);
        const replay = median(r.replay);
        const plain = r.plain.length > 0 ? median(r.plain) : undefined;
        // HTTP documents: those posted without a key (with one where it is required).
        // Reachable: a document through HTTP costs the write (the engine run) and the surface (a
        // replay): 1 / (engine ms + replay ms) documents a second when nothing else waits.
        const http = plain ?? keyed;
        const reachable = 1 / (1 / engineRate + 1 / replay);
        rows.push({
          write: s.name,
          connections: c,
          perSecond: plain === undefined ? 'key required' : fmt(plain),
          keyed: fmt(keyed),
          keyOverhead: plain === undefined ? '' : `${(((plain - keyed) / plain) * 100).toFixed(0)}`,
          replays: fmt(replay),
          replayVsFirst: `${(replay / keyed).toFixed(1)}`,
          engine: fmt(engineRate),
          engineMs: (1000 / engineRate).toFixed(2),
          replayMs: (1000 / replay).toFixed(2),
          raw: fmt(raw),
          engineVsRaw: (engineRate / raw).toFixed(2),
          reachable: fmt(reachable),
          httpVsReachable: (http / reachable).toFixed(2),
          httpVsRaw: (http / raw).toFixed(2),
          p99ms: r.p99,
          maxMs: r.max,
          errors: r.errors,
          ...(r.samples.length > 0 ? { errorSamples: r.samples.slice(0, 3).join(' | ') } : {}),
        });
      }
    }
    const loadAverage = os.loadavg().map((x) => x.toFixed(1)).join(' ');
    const oneMinute = loads.map((l) => l[0]!);
    const out = {
      engine,
      serverWorkers: SERVER_WORKERS || 'one process',
      seconds: SECONDS,
      repeat: REPEAT,
      writes: scenarios.map((s) => `${s.name}: ${s.rows}`),
      loadAverage,
      loadAverage1mDuringRun: `${Math.min(...oneMinute).toFixed(1)} to ${Math.max(...oneMinute).toFixed(1)} (${os.cpus().length} cores)`,
      rows,
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    // Markdown rows for bench/README.md.
    process.stdout.write('| engine | conn | write | docs/s | keyed (overhead) | replays/s (× first) | engine docs/s (ms) | raw docs/s | engine ÷ raw | reachable/s | HTTP ÷ reachable | HTTP ÷ raw | p99 / max ms | errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n');
    for (const row of rows) {
      const overhead = row.keyOverhead === '' ? '' : ` (${String(row.keyOverhead).replace('-', '−')} %)`;
      process.stdout.write(
        `| ${engine} | ${row.connections} | ${row.write} | ${row.perSecond} | ${row.keyed}${overhead} | ${row.replays} (${row.replayVsFirst}×) | ${row.engine} (${row.engineMs} ms) | ${row.raw} | **${row.engineVsRaw}** | ${row.reachable} | **${row.httpVsReachable}** | ${row.httpVsRaw} | ${row.p99ms} / ${row.maxMs} | ${row.errors} |\n`,
      );
    }
  } finally {
    await engineLoop?.close();
    await server.kill('SIGTERM');
    await knex.destroy();
    await db.drop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
