/**
 * Posting benchmark: journals (3 lines) and AP invoices (10 lines) per second through HTTP,
 * with and without an Idempotency-Key, replays per second, and the same rows written by a raw
 * knex transaction loop in the same run (the floor the HTTP path is compared with).
 *
 *   node --import tsx bench/posting.ts                     SQLite (seeded demo company copy)
 *   TEST_ENGINE=postgres TEST_POSTGRES_URL=postgres://... node --import tsx bench/posting.ts
 *
 *   BENCH_SECONDS (default 8) per measurement, BENCH_REPEAT (default 3, median reported), BENCH_CONNECTIONS (default 1,8) HTTP connections;
 *   the raw loop runs with as many concurrent transactions (up to the pool, 1 on SQLite).
 *
 * The service runs in a child process (test/support/server-process.ts: the production wiring,
 * no response validation), so the load generator does not share its event loop.
 */
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../test/support/app';
import { FX, apInvoice, installPostingFixture, journal } from '../test/support/posting-fixture';
import { postJson, spawnServer } from '../test/support/server-process';
import { parseDatabaseUrl } from '../src/storage/database';
import { dialectFor, engineOf } from '../src/storage/dialect';
import { Dec } from '../src/storage/decimal';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<any>;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,8').split(',').map(Number);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const runId = randomUUID().slice(0, 6);
let seq = 0;
/** Record numbers of the raw loops: far above anything the service allocates, never reused in a run. */
let rawRecnum = 50_000_000 + Math.floor(Math.random() * 100) * 100_000;

interface Row {
  what: string;
  connections: number;
  perSecond: number;
  p50?: number;
  p99?: number;
  errors: number;
}

async function load(port: number, apiKey: string, path: string, connections: number, body: () => unknown, key: () => string | undefined): Promise<Row & { raw: any }> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    method: 'POST',
    connections,
    duration: SECONDS,
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    requests: [
      {
        setupRequest: (req: Record<string, any>) => {
          const k = key();
          return { ...req, body: JSON.stringify(body()), headers: { ...req.headers, ...(k ? { 'idempotency-key': k } : {}) } };
        },
      },
    ],
  });
  const ok = result['2xx'] as number;
  return { what: path, connections, perSecond: ok / SECONDS, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors, raw: result };
}

/** The rows a journal posting writes, by a raw knex transaction: header, 3 lines, 3 balance updates. */
async function rawJournals(knex: Knex, seconds: number, concurrency = 1): Promise<number> {
  const dialect = dialectFor(engineOf(knex));
  const money = (v: string) => dialect.encodeDecimal(new Dec(v), 2);
  const lines: Array<[number, string, string]> = [
    [FX.accounts.overhead, '100.10', '0'],
    [FX.accounts.directExpense, '20.05', '0'],
    [FX.accounts.cash, '0', '120.15'],
  ];
  const end = Date.now() + seconds * 1000;
  let n = 0;
  const worker = async () => {
    while (Date.now() < end) {
      await knex.transaction(async (trx) => {
        const id = randomUUID();
        const recnum = (rawRecnum += 1);
        await trx('lgrtrn').insert({ _idnum: id, recnum, trnnum: `RAW-${runId}-${recnum}`, trndte: FX.openDate, dscrpt: 'raw', srcnum: FX.source.journal, status: 1, dbttot: money('120.15'), crdtot: money('120.15'), entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year });
        await trx('lgtnln').insert(lines.map(([account, d, c], i) => ({ _idnum: randomUUID(), _idref: id, linnum: i + 1, lgract: account, dscrpt: '', dbtamt: money(d), crdamt: money(c) })));
        for (const [account, d, c] of lines) {
          await trx('lgrbal')
            .where({ lgract: account, postyr: FX.year, actprd: FX.openPeriod })
            .update({ dbttot: trx.raw('dbttot + ?', [money(d)]), crdtot: trx.raw('crdtot + ?', [money(c)]) });
        }
      });
      n += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return n / seconds;
}

/** The rows an AP invoice (10 job lines) writes: invoice, 10 lines, journal + 11 lines, 10 job costs, 2 balance updates. */
async function rawInvoices(knex: Knex, seconds: number, concurrency = 1): Promise<number> {
  const dialect = dialectFor(engineOf(knex));
  const money = (v: string) => dialect.encodeDecimal(new Dec(v), 2);
  const end = Date.now() + seconds * 1000;
  let n = 0;
  const worker = async () => {
    while (Date.now() < end) {
      await knex.transaction(async (trx) => {
        const recnum = (rawRecnum += 1);
        const inv = randomUUID();
        const lgr = randomUUID();
        await trx('acpinv').insert({ _idnum: inv, recnum, vndnum: FX.vendor.withDefaults, invnum: `RAW-${runId}-${recnum}`, invdte: FX.openDate, duedte: FX.openDate, dscrpt: 'raw', jobnum: FX.job.open, phsnum: FX.phase, invttl: money('101.55'), amtpad: money('0'), invbal: money('101.55'), retain: money('0'), taxamt: money('1'), status: 1, entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year, lgrrec: recnum });
        await trx('apivln').insert(Array.from({ length: 10 }, (_, i) => ({ _idnum: randomUUID(), _idref: inv, linnum: i + 1, lgract: FX.accounts.directExpense, dscrpt: '', jobnum: FX.job.open, phsnum: FX.phase, cstcde: dialect.encodeDecimal(new Dec(FX.costCode), 3), csttyp: 1, linqty: dialect.encodeDecimal(new Dec(2), 4), linprc: dialect.encodeDecimal(new Dec(5), 4), extttl: money('10.05'), taxamt: money('0') })));
        await trx('lgrtrn').insert({ _idnum: lgr, recnum, trnnum: `RAW-${runId}-${recnum}`, trndte: FX.openDate, dscrpt: 'raw', srcnum: 11, status: 1, dbttot: money('101.55'), crdtot: money('101.55'), entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year });
        await trx('lgtnln').insert(Array.from({ length: 11 }, (_, i) => ({ _idnum: randomUUID(), _idref: lgr, linnum: i + 1, lgract: i < 10 ? FX.accounts.directExpense : FX.accounts.apControl, dscrpt: '', dbtamt: money(i < 10 ? '10.15' : '0'), crdamt: money(i < 10 ? '0' : '101.55'), jobnum: i < 10 ? FX.job.open : null })));
        await trx('jobcst').insert(Array.from({ length: 10 }, (_, i) => ({ _idnum: randomUUID(), recnum: 1_000_000_000 + (recnum - 50_000_000) * 10 + i, jobnum: FX.job.open, phsnum: FX.phase, cstcde: dialect.encodeDecimal(new Dec(FX.costCode), 3), csttyp: 1, trndte: FX.openDate, dscrpt: '', srcnum: 11, docnum: 'RAW', srcrec: recnum, srclin: i + 1, vndnum: FX.vendor.withDefaults, cstamt: money('10.15'), csthrs: dialect.encodeDecimal(new Dec(0), 2), status: 1, actprd: FX.openPeriod, postyr: FX.year })));
        for (const [account, d, c] of [
          [FX.accounts.directExpense, '101.55', '0'],
          [FX.accounts.apControl, '0', '101.55'],
        ] as const) {
          await trx('lgrbal').where({ lgract: account, postyr: FX.year, actprd: FX.openPeriod }).update({ dbttot: trx.raw('dbttot + ?', [money(d)]), crdtot: trx.raw('crdtot + ?', [money(c)]) });
        }
      });
      n += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return n / seconds;
}

function fmt(n: number): string {
  return n >= 100 ? n.toFixed(0) : n.toFixed(1);
}

async function main(): Promise<void> {
  const db = await createTestDatabase();
  const knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 10 }).config);
  await installPostingFixture(knex);
  const engine = engineOf(knex);
  const adminKey = randomUUID();
  const apiKey = randomUUID();
  const server = await spawnServer({ databaseUrl: db.url, adminKey, apiKey, env: { LOG_LEVEL: 'error', RATE_LIMIT_PER_MINUTE: '0', DB_POOL_MAX: '10' } });
  try {
    // Warm up: compile the validator for both operations, first balance rows, counters.
    for (let i = 0; i < 20; i += 1) {
      await postJson(server.port, '/api/v3/ledger-transactions', journal(`W-${runId}-${i}`), { 'x-api-key': apiKey });
      await postJson(server.port, '/api/v3/ap-invoices', apInvoice(`W-${runId}-${i}`, 10), { 'x-api-key': apiKey });
    }
    const rows: Array<Record<string, string | number>> = [];
    // Every measurement REPEAT times, interleaved (raw and HTTP alternate), the median reported:
    // a shared, busy machine drifts by tens of percent within a minute.
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    for (const c of CONNECTIONS) {
      const pool = engine === 'sqlite' ? 1 : Math.min(c, 10);
      const m: Record<string, number[]> = { rawJ: [], rawI: [], j: [], jk: [], r: [], i: [], ik: [], ri: [] };
      let errors = 0;
      let p99j = 0;
      let p99i = 0;
      const replayBody = journal(`BR-${runId}-${c}`);
      const replayKey = `bench-replay-${runId}-${c}`;
      await postJson(server.port, '/api/v3/ledger-transactions', replayBody, { 'x-api-key': apiKey, 'Idempotency-Key': replayKey });
      const replayInvoice = apInvoice(`BRI-${runId}-${c}`, 10);
      const replayInvoiceKey = `bench-replay-inv-${runId}-${c}`;
      await postJson(server.port, '/api/v3/ap-invoices', replayInvoice, { 'x-api-key': apiKey, 'Idempotency-Key': replayInvoiceKey });
      for (let rep = 0; rep < REPEAT; rep += 1) {
        m.rawJ!.push(await rawJournals(knex, SECONDS, pool));
        const j = await load(server.port, apiKey, '/api/v3/ledger-transactions', c, () => journal(`BJ-${runId}-${(seq += 1)}`), () => undefined);
        const jk = await load(server.port, apiKey, '/api/v3/ledger-transactions', c, () => journal(`BK-${runId}-${(seq += 1)}`), () => `bench-${runId}-${seq}`);
        const r = await load(server.port, apiKey, '/api/v3/ledger-transactions', c, () => replayBody, () => replayKey);
        m.rawI!.push(await rawInvoices(knex, SECONDS, pool));
        const i = await load(server.port, apiKey, '/api/v3/ap-invoices', c, () => apInvoice(`BI-${runId}-${(seq += 1)}`, 10), () => undefined);
        const ik = await load(server.port, apiKey, '/api/v3/ap-invoices', c, () => apInvoice(`BL-${runId}-${(seq += 1)}`, 10), () => `bench-${runId}-${seq}`);
        const ri = await load(server.port, apiKey, '/api/v3/ap-invoices', c, () => replayInvoice, () => replayInvoiceKey);
        m.j!.push(j.perSecond);
        m.jk!.push(jk.perSecond);
        m.r!.push(r.perSecond);
        m.i!.push(i.perSecond);
        m.ik!.push(ik.perSecond);
        m.ri!.push(ri.perSecond);
        p99j = Math.max(p99j, j.p99 ?? 0);
        p99i = Math.max(p99i, i.p99 ?? 0);
        errors += j.errors + jk.errors + r.errors + i.errors + ik.errors + ri.errors;
      }
      const [rawJ, rawI, j, jk, r, i, ik, ri] = ['rawJ', 'rawI', 'j', 'jk', 'r', 'i', 'ik', 'ri'].map((k) => median(m[k]!)) as number[];
      rows.push({
        connections: c,
        journals: fmt(j!),
        journalsKeyed: fmt(jk!),
        journalKeyOverhead: `${(((j! - jk!) / j!) * 100).toFixed(1)}%`,
        journalReplays: fmt(r!),
        replayVsFirst: `${(r! / jk!).toFixed(1)}x`,
        rawJournals: fmt(rawJ!),
        journalVsRaw: (j! / rawJ!).toFixed(2),
        invoices: fmt(i!),
        invoicesKeyed: fmt(ik!),
        invoiceKeyOverhead: `${(((i! - ik!) / i!) * 100).toFixed(1)}%`,
        invoiceReplays: fmt(ri!),
        invoiceReplayVsFirst: `${(ri! / ik!).toFixed(1)}x`,
        rawInvoices: fmt(rawI!),
        invoiceVsRaw: (i! / rawI!).toFixed(2),
        journalP99ms: p99j,
        invoiceP99ms: p99i,
        errors,
      });
    }
    const out = { engine, seconds: SECONDS, repeat: REPEAT, loadAverage: (await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' '), rows };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    // Markdown rows for bench/README.md.
    for (const row of rows) {
      process.stdout.write(
        `| ${engine} | ${row.connections} | ${row.journals} | ${row.journalsKeyed} (${row.journalKeyOverhead}) | ${row.journalReplays} (${row.replayVsFirst}) | ${row.rawJournals} | ${row.journalVsRaw} | ${row.invoices} | ${row.invoicesKeyed} (${row.invoiceKeyOverhead}) | ${row.invoiceReplays} (${row.invoiceReplayVsFirst}) | ${row.rawInvoices} | ${row.invoiceVsRaw} |\n`,
      );
    }
  } finally {
    await server.kill('SIGTERM');
    await knex.destroy();
    await db.drop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
