/**
 * Where a posting's time goes without HTTP: the write runner called in-process
 * (services.writes.run, the same call the route makes) against the raw knex loop of
 * bench/posting-scenarios.ts, interleaved, plus the time of each statement in the driver
 * (the native execution: better-sqlite3's run/all, or a PostgreSQL round trip).
 *
 *   [W=journals|invoices|...] [SECS=3] [REPEAT=3] node --import tsx bench/posting-engine.ts
 *   TEST_ENGINE=postgres TEST_POSTGRES_URL=postgres://... node --import tsx bench/posting-engine.ts
 *
 * Read with bench/posting.ts: HTTP ms per document − engine ms = the HTTP surface's share;
 * engine ms − raw ms = what the engine adds to the same rows (checks, numbers, read-back).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../test/support/app';
import { installPostingFixture } from '../test/support/posting-fixture';
import { parseDatabaseUrl } from '../src/storage/database';
import { SCENARIOS, rawDocument, type BenchContext } from './posting-scenarios';
import { openEngineLoop } from './posting-engine-loop';

const SECONDS = Number(process.env.SECS ?? 3);
const REPEAT = Number(process.env.REPEAT ?? 3);

/**
 * Driver time per statement text (first 60 characters) and phase: the client class's `_query`
 * (every statement, BEGIN and COMMIT included, which knex's query events leave out; a transaction
 * runs on a client derived from the class, so the wrapper sits on the prototype). The engine and
 * the raw loop run one after the other, so the phase at the time tells whose statement it is.
 */
function statementClock(knex: Knex, phase: () => string) {
  const totals = new Map<string, { n: number; ms: number }>();
  const proto = Object.getPrototypeOf(knex.client) as { _query: (conn: unknown, obj: { sql?: string }) => Promise<unknown> };
  const driverQuery = proto._query;
  proto._query = async function (this: unknown, conn, obj) {
    const t0 = process.hrtime.bigint();
    try {
      return await driverQuery.call(this, conn, obj);
    } finally {
      const key = `${phase()} ${String(obj.sql).replace(/\s+/g, ' ').slice(0, 60)}`;
      const t = totals.get(key) ?? { n: 0, ms: 0 };
      t.n += 1;
      t.ms += Number(process.hrtime.bigint() - t0) / 1e6;
      totals.set(key, t);
    }
  };
  return totals;
}

async function main(): Promise<void> {
  const name = process.env.W ?? 'journals';
  const scenario = SCENARIOS.find((x) => x.name === name);
  if (!scenario) throw new Error(`W: unknown write ${name}`);
  const db = await createTestDatabase();
  const target = parseDatabaseUrl(db.url, { min: 0, max: 10 });
  const rawKnex = knexFactory(target.config);
  await installPostingFixture(rawKnex);
  const runId = randomUUID().slice(0, 6);
  const ctx = { knex: rawKnex, port: 0, apiKey: '', runId } as BenchContext;
  await scenario.setup?.(ctx);
  const loop = await openEngineLoop(db.url, ctx);
  const serviceKnex = loop.knex;
  let phase = 'warm';
  const statements = statementClock(serviceKnex, () => phase);
  let n = 0;
  const post = async () => {
    n += 1;
    await loop.post(scenario, n, `E-${runId}-${n}`);
  };
  for (let i = 0; i < 200; i += 1) await post();
  let recnum = 70_000_000 + Math.floor(Math.random() * 1000) * 10_000;
  // The raw loop warmed up too (its first document reads what it needs once: receipts' stored answer).
  for (let i = 0; i < 50; i += 1) await rawDocument(rawKnex, scenario, ctx, (recnum += 1));

  const per = { engine: [] as number[], raw: [] as number[] };
  // The main thread's time on the CPU and runnable but not running (the scheduler's statistics):
  // on a shared machine the wall time of a loop is mostly the second.
  const sched = () => fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
  const thread = { engine: { cpu: 0, waiting: 0, n: 0 }, raw: { cpu: 0, waiting: 0, n: 0 } };
  const account = (which: 'engine' | 'raw', s0: number[], count: number) => {
    const s1 = sched();
    thread[which].cpu += (s1[0]! - s0[0]!) / 1e6;
    thread[which].waiting += (s1[1]! - s0[1]!) / 1e6;
    thread[which].n += count;
  };
  for (let r = 0; r < REPEAT; r += 1) {
    phase = 'engine';
    let s0 = sched();
    let end = Date.now() + SECONDS * 1000;
    let count = 0;
    for (; Date.now() < end; count += 1) await post();
    per.engine.push((SECONDS * 1000) / count);
    account('engine', s0, count);
    phase = 'raw';
    s0 = sched();
    end = Date.now() + SECONDS * 1000;
    count = 0;
    for (; Date.now() < end; count += 1) {
      const rec = (recnum += 1);
      await rawDocument(rawKnex, scenario, ctx, rec);
    }
    per.raw.push((SECONDS * 1000) / count);
    account('raw', s0, count);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const docs = (totals: Map<string, { n: number; ms: number }>) => {
    const rows = [...totals].sort((a, b) => b[1].ms - a[1].ms);
    const all = rows.reduce((s, [, t]) => s + t.ms, 0);
    return { rows, all };
  };
  const engineCount = per.engine.reduce((s, ms) => s + (SECONDS * 1000) / ms, 0);
  const rawCount = per.raw.reduce((s, ms) => s + (SECONDS * 1000) / ms, 0);
  console.log(`raw loop: ${scenario.rows}`);
  console.log(`${name} on ${target.engine}: engine ${median(per.engine).toFixed(3)} ms a document, raw ${median(per.raw).toFixed(3)} ms, engine ÷ raw (documents/s) ${(median(per.raw) / median(per.engine)).toFixed(2)}`);
  for (const which of ['engine', 'raw'] as const) {
    const t = thread[which];
    console.log(`  ${which}: main thread ${(t.cpu / t.n).toFixed(3)} ms on the CPU a document, ${(t.waiting / t.n).toFixed(3)} ms runnable but not running`);
  }
  for (const [label, count] of [['engine', engineCount], ['raw', rawCount]] as const) {
    const { rows, all } = docs(new Map([...statements].filter(([key]) => key.startsWith(`${label} `))));
    console.log(`  ${label}: statements ${(all / count).toFixed(3)} ms a document`);
    for (const [key, t] of rows.slice(0, 12)) console.log(`    ${(t.n / count).toFixed(1).padStart(4)} × ${((t.ms / t.n) * 1000).toFixed(0).padStart(5)} µs  ${key.slice(key.indexOf(' ') + 1)}`);
  }
  await loop.close();
  await rawKnex.destroy();
  await db.drop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
