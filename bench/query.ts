/**
 * Query engine benchmark: the full app versus a raw baseline (bare Express + knex/better-sqlite3
 * in one file, issuing the plain SQL a hand-written server would), on the same SQLite file.
 *
 *   A  parts: page 1 of 100, partCost > 50, order by partCode, with totalCount
 *   B  service invoices: page 1 of 100, invoiceTotal > 50, order by invoiceNumber, children lines
 *      (parts have no child collection in the contract; service invoices carry ~3 lines each)
 *   C  A at page 500 (OFFSET 49,900)
 *   D  parts match: partName, maxDistance 2
 *   E  B with pageSize 1000
 *   F  job costs (1.1 million rows): jobNumber = J and costCode = C (the pair with the most rows),
 *      ordered by transactionDate, page 1 of 100, with totalCount
 *
 * Data (built once, about 7 minutes, cached in bench/.data/, gitignored): the demo company
 * seeded at scale 250: 100,000 parts, 84,000 service invoices with 271,000 lines, 7.8 million
 * rows in all (2.4 GB). `--engine postgres` runs the same against PostgreSQL: database
 * ais_bench_query_v2 on the server of BENCH_POSTGRES_URL (or TEST_POSTGRES_URL), created and seeded
 * at the same scale on first use; the baseline then uses knex/pg.
 *
 * The server under test is the production build (`node dist/src/main.js`, built first); the
 * baseline runs under tsx. Each in its own child process, fresh per scenario (peak RSS = VmHWM
 * reset after boot; for the server, the largest of its processes': with WORKERS > 1 a worker's,
 * each process's peak printed beside it), autocannon in this one. Usage:
 *   npx tsx bench/query.ts [--duration S] [--connections N] [--only A,C] [--no-write]
 *                          [--node-flags "..."] [--also-flags "--optimize-for-size"] [--engine-tsx]
 *                          [--engine sqlite|postgres] [--data-only]
 * BENCH_SCALE=n seeds (and names) a data set at another scale than 250 (a smaller one builds faster).
 * With every scenario (no --only) and without --no-write, writes the table to bench/README.md, section
 * "Query engine" (SQLite) or "Query engine on PostgreSQL".
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { freePort } from '../test/support/net';
import { memoryMb, processTree, resetPeak } from './procfs';
import { writeReadmeSection } from './readme-section';

// autocannon ships no types
// eslint-disable-next-line @typescript-eslint/no-var-requires
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<any>;

const ROOT = path.resolve(__dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const DATA_VERSION = 'v2';
/** Scale at which the demo company has 100,000 parts (BENCH_SCALE: another, smaller data set for a loaded machine). */
const SEED_SCALE = Number(process.env.BENCH_SCALE ?? 250);
/** The data set's name: the default scale keeps the name it always had. */
const DATA_NAME = SEED_SCALE === 250 ? DATA_VERSION : `${DATA_VERSION}_s${SEED_SCALE}`;
export const DATA_FILE = path.join(DATA_DIR, `query-${DATA_NAME}.sqlite`);
export const BENCH_KEY = '8c1d2a4e-6f3b-4c5d-9e7f-a1b2c3d4e5f6';

// ------------------------------------------------------------------ scenarios
const A = {
  filters: { match: { field: 'partCost', operator: '>', value: 50 } },
  orderBy: ['partCode ASC'],
  page: { pageNumber: 1, pageSize: 100 },
};
const B = {
  filters: { match: { field: 'invoiceTotal', operator: '>', value: 50 } },
  orderBy: ['invoiceNumber ASC'],
  children: ['lines'],
  page: { pageNumber: 1, pageSize: 100 },
};
export const SCENARIOS: Scenario[] = [
  { id: 'A', title: 'page 1 of 100, partCost > 50, by partCode, totalCount', path: '/api/v3/parts/query', body: A },
  { id: 'B', title: 'A with children (service invoices + lines)', path: '/api/v3/service-invoices/query', body: B },
  { id: 'C', title: 'A at page 500', path: '/api/v3/parts/query', body: { ...A, page: { pageNumber: 500, pageSize: 100 } } },
  {
    id: 'D',
    title: 'match parts, partName, maxDistance 2',
    path: '/api/v3/parts/match',
    body: { matchString: 'Cleanout Plug 1in Comercial', matchFields: ['partName'], select: ['partCode', 'partName'], maxDistance: 2 },
  },
  { id: 'E', title: 'pageSize 1000 with children', path: '/api/v3/service-invoices/query', body: { ...B, page: { pageNumber: 1, pageSize: 1000 } } },
  // Filled in by main() with the (job, cost code) pair that has the most job costs.
  { id: 'F', title: 'job costs: jobNumber and costCode, by transactionDate, page 1 of 100, totalCount', path: '/api/v3/job-costs/query', body: {} as Record<string, unknown> },
  // Varied-filter twins: the same query with a different filter value in every request (the same
  // sequence for every server), so no count computed for one request serves another. Filled in by
  // main() from the data (variedSequences).
  { id: 'Av', title: 'A, partCost > a different value each request', path: '/api/v3/parts/query', body: A as Record<string, unknown> },
  { id: 'Bv', title: 'B, invoiceTotal > a different value each request', path: '/api/v3/service-invoices/query', body: B as Record<string, unknown> },
  { id: 'Fv', title: 'F, a different (jobNumber, costCode) pair each request', path: '/api/v3/job-costs/query', body: {} as Record<string, unknown> },
];

export interface Scenario {
  id: string;
  title: string;
  path: string;
  body: Record<string, unknown>;
  /** Varied scenarios: the request bodies, in the order every server gets them (cycled if a run sends more). */
  sequence?: string[];
}

/** The job-cost query of scenario F for job `job` and cost code `code`. */
function jobCostBody(job: number, code: number): Record<string, unknown> {
  return {
    filters: { and: [{ match: { field: 'jobNumber', operator: '=', value: job } }, { match: { field: 'costCode', operator: '=', value: code } }] },
    orderBy: ['transactionDate ASC'],
    page: { pageNumber: 1, pageSize: 100 },
  };
}

const ENGINE = arg('engine', 'sqlite') === 'postgres' ? 'postgres' : 'sqlite';
/** BENCH_POSTGRES_DATABASE: another database name (e.g. a copy of the seeded one, so a branch's migrations stay on it). */
const PG_DATABASE = process.env.BENCH_POSTGRES_DATABASE || `ais_bench_query_${DATA_NAME}`;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
}

// ------------------------------------------------------------------ data
/** The database URL of the bench data on ENGINE, built on first use. */
async function ensureData(): Promise<string> {
  if (ENGINE === 'postgres') return ensurePostgresData();
  return `sqlite://${await ensureSqliteData()}`;
}

async function ensurePostgresData(): Promise<string> {
  const base = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;
  if (!base) throw new Error('--engine postgres needs BENCH_POSTGRES_URL (or TEST_POSTGRES_URL), e.g. postgres://user:pass@127.0.0.1:5432/postgres');
  const url = new URL(base);
  url.pathname = `/${PG_DATABASE}`;
  const knexFactory = (await import('knex')).default;
  const admin = knexFactory({ client: 'pg', connection: base, pool: { min: 0, max: 1 } });
  try {
    const exists = await admin.raw('select 1 from pg_database where datname = ?', [PG_DATABASE]);
    if (exists.rows.length === 0) await admin.raw(`create database "${PG_DATABASE}"`);
  } finally {
    await admin.destroy();
  }
  const { openDatabase, parseDatabaseUrl } = await import('../src/storage/database');
  const { migrateLatest } = await import('../db/migrate');
  const knex = openDatabase(parseDatabaseUrl(url.toString()));
  try {
    // bench_ready is created when the seed completed: a run interrupted while seeding starts over.
    if (await knex.schema.hasTable('bench_ready')) {
      await migrateLatest(knex);
      return url.toString();
    }
    const started = Date.now();
    process.stdout.write(`building PostgreSQL database ${PG_DATABASE}: seed scale ${SEED_SCALE} ...\n`);
    await knex.raw('drop schema public cascade');
    await knex.raw('create schema public');
    await migrateLatest(knex);
    const { seedDemoCompany } = await import('../db/seed');
    await seedDemoCompany(knex, { scale: SEED_SCALE });
    await knex.raw('vacuum analyze');
    await knex.schema.createTable('bench_ready', (t) => t.integer('scale'));
    process.stdout.write(`  done in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  } finally {
    await knex.destroy();
  }
  return url.toString();
}

async function ensureSqliteData(): Promise<string> {
  if (fs.existsSync(DATA_FILE)) return DATA_FILE;
  fs.mkdirSync(DATA_DIR, { recursive: true });
  const building = `${DATA_FILE}.building`;
  for (const s of ['', '-wal', '-shm']) fs.rmSync(building + s, { force: true });
  const { openDatabase, parseDatabaseUrl } = await import('../src/storage/database');
  const { migrateLatest } = await import('../db/migrate');
  const { seedDemoCompany } = await import('../db/seed');
  const started = Date.now();
  process.stdout.write(`building ${path.relative(ROOT, DATA_FILE)}: seed scale ${SEED_SCALE} ...\n`);
  const knex = openDatabase(parseDatabaseUrl(`sqlite://${building}`));
  try {
    await migrateLatest(knex);
    await seedDemoCompany(knex, { scale: SEED_SCALE });
    await knex.raw('pragma wal_checkpoint(TRUNCATE)');
  } finally {
    await knex.destroy();
  }
  for (const s of ['-wal', '-shm']) fs.rmSync(building + s, { force: true });
  fs.renameSync(building, DATA_FILE);
  process.stdout.write(`  done in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  return DATA_FILE;
}

// ------------------------------------------------------------------ children: the servers
interface Ready {
  port: number;
}

async function serveFull(url: string): Promise<number> {
  const pino = (await import('pino')).default;
  const { loadConfig } = await import('../src/config');
  const { createServices } = await import('../src/services');
  const { createApp } = await import('../src/app');
  const { openDatabase, parseDatabaseUrl } = await import('../src/storage/database');
  // Production configuration (responses not validated), logs to /dev/null, rate limit out of reach.
  const config = { ...loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'info', SECRETS_KEY: process.env.SECRETS_KEY || randomBytes(32).toString('base64') }), rateLimitPerMinute: 10_000_000, seedOnStart: false };
  const target = parseDatabaseUrl(config.databaseUrl, { min: 0, max: config.dbPoolMax });
  const knex = openDatabase(target);
  const logger = pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: false }));
  const services = createServices(config, logger, knex, target.engine);
  await services.keys.ensure(BENCH_KEY, 'bench', 'integration');
  const app = createApp(services);
  await (app.locals.warmContract as () => Promise<unknown>)();
  return listen(app);
}

// ------------------------------------------------------------------ the baselines' shared pieces
type BaselineFields = Record<string, { name: string; column: string; kind: string; scale?: number }>;
type BaselineRow = Record<string, any>;

/**
 * What both baselines write by hand, the same way: the scenarios' entities from the catalog, a
 * filter value as stored and a row mapped to published names (decimals: scaled integers on
 * SQLite, DECIMAL, strings from pg, on PostgreSQL), and the query envelope. Their match is
 * matchParts below.
 */
async function baselineKit(pg: boolean) {
  const { CATALOG } = await import('../generated/catalog');
  // DATE as its YYYY-MM-DD text, the published form (the driver would build a Date, serialised as a datetime).
  if (pg) (await import('pg')).types.setTypeParser(1082, (text: string) => text);
  const mapper = (fields: BaselineFields) => {
    const list = Object.values(fields);
    return (row: BaselineRow) => {
      const out: Record<string, unknown> = {};
      for (const f of list) {
        const v = row[f.column];
        out[f.name] = v === null ? null : f.kind === 'decimal' ? (pg ? Number(v) : v / 10 ** (f.scale ?? 2)) : f.kind === 'boolean' ? v === 1 || v === true : v;
      }
      return out;
    };
  };
  const parts = CATALOG.parts!;
  const invoices = CATALOG['service-invoices']!;
  const jobCosts = CATALOG['job-costs']!;
  return {
    parts,
    invoices,
    jobCosts,
    partRow: mapper(parts.fields),
    invoiceRow: mapper(invoices.fields),
    lineRow: mapper(invoices.children.lines!.fields),
    jobCostRow: mapper(jobCosts.fields),
    toDb: (value: number, scale: number) => (pg ? value : Math.round(value * 10 ** scale)),
    envelope: (pageNumber: number, pageSize: number, n: unknown, data: unknown[]) => ({ asOf: new Date().toISOString(), page: { pageNumber, pageSize, totalCount: Number(n), returnedCount: data.length }, data }),
  };
}

const normaliseName = (s: string) =>
  s
    .normalize('NFKD')
    .toLowerCase()
    .replace(/\p{M}+/gu, '')
    .replace(/[^\p{L}\p{N}\s]+/gu, '')
    .replace(/\s+/g, ' ')
    .trim();

function levenshtein(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** The match answer over every part's (_idnum, prtcde, prtnme). */
function matchParts(rows: BaselineRow[], body: { matchString: string; maxDistance: number }) {
  const target = normaliseName(body.matchString);
  const hits: Array<{ id: string; partCode: string; partName: string; distance: number }> = [];
  for (const r of rows) {
    const d = levenshtein(target, normaliseName(r.prtnme));
    if (d <= body.maxDistance) hits.push({ id: r._idnum, partCode: r.prtcde, partName: r.prtnme, distance: d });
  }
  hits.sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : 1));
  return { asOf: new Date().toISOString(), data: hits.slice(0, 100).map(({ id: _id, ...rest }) => rest) };
}

/** The raw baseline: bare Express + knex/better-sqlite3, plain SQL, hand-written mapping. */
async function serveBaseline(url: string): Promise<number> {
  const express = (await import('express')).default;
  const knexFactory = (await import('knex')).default;
  const pg = url.startsWith('postgres');
  const knex = pg
    ? knexFactory({ client: 'pg', connection: url, pool: { min: 1, max: 10 } })
    : knexFactory({ client: 'better-sqlite3', connection: { filename: url.replace(/^sqlite:\/\//, '') }, useNullAsDefault: true, pool: { min: 1, max: 1 } });
  const { parts, invoices, jobCosts, partRow, invoiceRow, lineRow, jobCostRow, toDb, envelope } = await baselineKit(pg);
  const partCols = Object.values(parts.fields).map((f) => f.column);
  const invoiceCols = Object.values(invoices.fields).map((f) => f.column);
  const lineCols = [...Object.values(invoices.children.lines!.fields).map((f) => f.column), '_idref'];

  const app = express();
  app.use(express.json());
  app.post('/api/v3/parts/query', async (req, res) => {
    const { pageNumber = 1, pageSize = 100 } = req.body.page ?? {};
    const min = toDb(req.body.filters.match.value, 4);
    const n = ((await knex('tkfprt').where('prtcst', '>', min).count({ n: '*' })) as Array<{ n: number }>)[0]!.n;
    const rows = await knex('tkfprt').select(partCols).where('prtcst', '>', min).orderBy('prtcde').orderBy('_idnum').limit(pageSize).offset((pageNumber - 1) * pageSize);
    res.json(envelope(pageNumber, pageSize, n, rows.map(partRow)));
  });
  app.post('/api/v3/service-invoices/query', async (req, res) => {
    const { pageNumber = 1, pageSize = 100 } = req.body.page ?? {};
    const min = toDb(req.body.filters.match.value, 2);
    const n = ((await knex('srvinv').where('invttl', '>', min).count({ n: '*' })) as Array<{ n: number }>)[0]!.n;
    const rows = await knex('srvinv').select(invoiceCols).where('invttl', '>', min).orderBy('invnum').orderBy('_idnum').limit(pageSize).offset((pageNumber - 1) * pageSize);
    const keys = rows.map((r: any) => r._idnum);
    const lines = keys.length ? await knex('srvlin').select(lineCols).whereIn('_idref', keys).orderBy('_idref').orderBy('linnum') : [];
    const byParent = new Map<string, unknown[]>(keys.map((k: string) => [k, []]));
    for (const l of lines) byParent.get(l._idref)!.push(lineRow(l));
    res.json(envelope(pageNumber, pageSize, n, rows.map((r: any) => ({ ...invoiceRow(r), lines: byParent.get(r._idnum) }))));
  });
  const jobCostCols = Object.values(jobCosts.fields).map((f) => f.column);
  app.post('/api/v3/job-costs/query', async (req, res) => {
    const { pageNumber = 1, pageSize = 100 } = req.body.page ?? {};
    const [job, code] = req.body.filters.and.map((n: any) => n.match.value) as [number, number];
    const where = { jobnum: job, cstcde: toDb(code, 3) };
    const n = ((await knex('jobcst').where(where).count({ n: '*' })) as Array<{ n: number }>)[0]!.n;
    const rows = await knex('jobcst').select(jobCostCols).where(where).orderBy('trndte').orderBy('_idnum').limit(pageSize).offset((pageNumber - 1) * pageSize);
    res.json(envelope(pageNumber, pageSize, n, rows.map(jobCostRow)));
  });
  // Match: read every name, normalise, full Levenshtein, sort, first 100.
  app.post('/api/v3/parts/match', async (req, res) => {
    res.json(matchParts(await knex('tkfprt').select('_idnum', 'prtcde', 'prtnme'), req.body));
  });
  return listen(app);
}

/**
 * The strongest one-process handler a user could write: node:http and the driver's prepared
 * statements (better-sqlite3 statements prepared once; pg named statements, parsed once per
 * connection), the same SQL as the Express baseline and the same JSON, no framework, no knex.
 */
async function serveRaw(url: string): Promise<number> {
  const pg = url.startsWith('postgres');
  type Rows = BaselineRow[];
  let run: (sql: string, values: unknown[]) => Promise<Rows>;
  if (pg) {
    const { Pool, types } = await import('pg');
    // DATE as its YYYY-MM-DD text, the published form (the driver would build a Date, serialised as a datetime).
    types.setTypeParser(1082, (text: string) => text);
    const pool = new Pool({ connectionString: url, max: 10 });
    const names = new Map<string, { name: string; text: string }>();
    run = async (sql, values) => {
      let statement = names.get(sql);
      if (!statement) {
        let i = 0;
        statement = { name: `raw${names.size}`, text: sql.replace(/\?/g, () => `$${(i += 1)}`) };
        names.set(sql, statement);
      }
      return (await pool.query({ ...statement, values })).rows as Rows;
    };
  } else {
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(url.replace(/^sqlite:\/\//, ''), { fileMustExist: true });
    const statements = new Map<string, ReturnType<typeof db.prepare>>();
    run = async (sql, values) => {
      let statement = statements.get(sql);
      if (!statement) {
        statement = db.prepare(sql);
        statements.set(sql, statement);
      }
      return statement.all(values) as Rows;
    };
  }
  const { parts, invoices, jobCosts, partRow, invoiceRow, lineRow, jobCostRow, toDb, envelope } = await baselineKit(pg);
  const columns = (fields: BaselineFields, extra: string[] = []) => [...Object.values(fields).map((f) => f.column), ...extra].join(', ');
  type Handler = (body: any) => Promise<unknown>;
  const routes = new Map<string, Handler>();
  routes.set('/api/v3/parts/query', async (body) => {
    const { pageNumber = 1, pageSize = 100 } = body.page ?? {};
    const min = toDb(body.filters.match.value, 4);
    const [{ n }] = (await run('select count(*) as n from tkfprt where prtcst > ?', [min])) as [{ n: number }];
    const rows = await run(`select ${columns(parts.fields)} from tkfprt where prtcst > ? order by prtcde, _idnum limit ? offset ?`, [min, pageSize, (pageNumber - 1) * pageSize]);
    return envelope(pageNumber, pageSize, n, rows.map(partRow));
  });
  routes.set('/api/v3/service-invoices/query', async (body) => {
    const { pageNumber = 1, pageSize = 100 } = body.page ?? {};
    const min = toDb(body.filters.match.value, 2);
    const [{ n }] = (await run('select count(*) as n from srvinv where invttl > ?', [min])) as [{ n: number }];
    const rows = await run(`select ${columns(invoices.fields)} from srvinv where invttl > ? order by invnum, _idnum limit ? offset ?`, [min, pageSize, (pageNumber - 1) * pageSize]);
    const keys = rows.map((r) => r._idnum);
    const lines = keys.length ? await run(`select ${columns(invoices.children.lines!.fields, ['_idref'])} from srvlin where _idref in (${keys.map(() => '?').join(', ')}) order by _idref, linnum`, keys) : [];
    const byParent = new Map<string, unknown[]>(keys.map((k) => [k, []]));
    for (const l of lines) byParent.get(l._idref)!.push(lineRow(l));
    return envelope(pageNumber, pageSize, n, rows.map((r) => ({ ...invoiceRow(r), lines: byParent.get(r._idnum) })));
  });
  routes.set('/api/v3/job-costs/query', async (body) => {
    const { pageNumber = 1, pageSize = 100 } = body.page ?? {};
    const [job, code] = body.filters.and.map((x: any) => x.match.value) as [number, number];
    const values = [job, toDb(code, 3)];
    const [{ n }] = (await run('select count(*) as n from jobcst where jobnum = ? and cstcde = ?', values)) as [{ n: number }];
    const rows = await run(`select ${columns(jobCosts.fields)} from jobcst where jobnum = ? and cstcde = ? order by trndte, _idnum limit ? offset ?`, [...values, pageSize, (pageNumber - 1) * pageSize]);
    return envelope(pageNumber, pageSize, n, rows.map(jobCostRow));
  });
  routes.set('/api/v3/parts/match', async (body) => matchParts(await run('select _idnum, prtcde, prtnme from tkfprt', []), body));
  return listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const handler = routes.get(req.url ?? '');
      if (!handler) {
        res.writeHead(404).end();
        return;
      }
      handler(JSON.parse(Buffer.concat(chunks).toString('utf8'))).then(
        (out) => {
          const text = JSON.stringify(out);
          res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
          res.end(text);
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        },
      );
    });
  });
}

function listen(handler: http.RequestListener): Promise<number> {
  return new Promise((resolve) => {
    const server = http.createServer(handler);
    server.keepAliveTimeout = 65_000;
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

// ------------------------------------------------------------------ parent: the load
interface Measured {
  rps: number;
  p50: number;
  p99: number;
  total: number;
}

/** Where a server is in a varied sequence: each server starts at 0 and never gets a body twice (unless a run outlasts the list). */
interface Cursor {
  next: number;
}

async function load(url: string, body: string, seconds: number, connections: number, sequence?: string[], cursor: Cursor = { next: 0 }): Promise<Measured> {
  // A varied scenario sends sequence[cursor.next], then the next ... (cycled): the warm-up run and
  // the measured run of one server continue the same list, so no count of the warm-up is reused.
  const varied = sequence ? { requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: sequence[cursor.next++ % sequence.length] }) }] } : {};
  const common = { url, method: 'POST', connections, headers: { 'x-api-key': BENCH_KEY, 'content-type': 'application/json' }, body, timeout: 300, ...varied };
  const started = Date.now();
  let result = await autocannon({ ...common, duration: seconds });
  let elapsed = (Date.now() - started) / 1000;
  // Let the server finish what is still queued before anything else is measured.
  await fetch(url, { method: 'POST', headers: common.headers, body }).then((r) => r.arrayBuffer());
  if (result.requests.total < 2 * connections) {
    // Too slow to measure in the window: a fixed number of requests instead.
    const again = Date.now();
    result = await autocannon({ ...common, amount: 2 * connections });
    elapsed = (Date.now() - again) / 1000;
  }
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) throw new Error(`${url}: ${failed} failed requests of ${result.requests.total}`);
  if (sequence && cursor.next > sequence.length) process.stdout.write(`  note: ${cursor.next} requests cycled a sequence of ${sequence.length} bodies (repeats)\n`);
  return { rps: result.requests.total / elapsed, p50: result.latency.p50, p99: result.latency.p99, total: result.requests.total };
}

/**
 * Largest per-process peak (and current) RSS among a server's processes (bench/procfs.ts
 * processTree), and each process's peak: the figure is the largest (a worker's), the target
 * being one server process's peak.
 */
function serverMemory(pid: number): { peak: number; rss: number; each: string } {
  const all = processTree(pid).map((p) => memoryMb(p));
  return { peak: Math.max(...all.map((m) => m.peak)), rss: Math.max(...all.map((m) => m.rss)), each: all.map((m) => m.peak.toFixed(0)).join('+') };
}

/**
 * The server under test as production runs it: `node dist/src/main.js` (built by this script),
 * configured by environment variables only (request log to stdout, discarded).
 */
async function startProduction(url: string, nodeFlags: string[]): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeFlags, path.join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: url,
      DEMO_API_KEY: BENCH_KEY,
      SEED_ON_START: 'false',
      RATE_LIMIT_PER_MINUTE: '10000000',
      LOG_LEVEL: 'info',
      VALIDATE_RESPONSES: 'false',
      // PostgreSQL needs one (webhook secrets are encrypted under it); nothing is encrypted here.
      SECRETS_KEY: process.env.SECRETS_KEY || randomBytes(32).toString('base64'),
    },
  });
  // The start banner goes to stderr: kept, and shown only if the server fails.
  let stderr = '';
  child.stderr!.on('data', (chunk) => {
    stderr = (stderr + String(chunk)).slice(-4000);
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`server exited ${code}: ${stderr}`))));
  for (let i = 0; i < 600; i++) {
    const ready = await Promise.race([
      fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false),
      exited,
    ]);
    if (ready) return { child, port };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  throw new Error('server not ready after 60 s');
}

function start(kind: 'full' | 'baseline' | 'raw', url: string): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(__filename, ['--serve', kind, url], { execArgv: ['--import', 'tsx'], cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, port: (m as Ready).port }));
    child.once('exit', (code) => reject(new Error(`${kind} server exited ${code}`)));
  });
}

async function post(port: number, p: string, body: unknown): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${port}${p}`, { method: 'POST', headers: { 'x-api-key': BENCH_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = await res.json();
  if (res.status !== 200) throw new Error(`${p} answered ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

async function main(): Promise<void> {
  const seconds = Number(arg('duration', '10'));
  const connections = Number(arg('connections', '10'));
  const only = arg('only', SCENARIOS.map((x) => x.id).join(',')).split(',');
  const nodeFlags = arg('node-flags', '').split(' ').filter(Boolean);
  // A second engine configuration measured against the same baseline (e.g. "--optimize-for-size").
  const alsoFlags = arg('also-flags', '').split(' ').filter(Boolean);
  const file = await ensureData();
  if (process.argv.includes('--data-only')) return;
  const pairs = await jobCostPairs(file);
  pickJobCostPair(pairs);
  variedSequences(pairs);
  process.stdout.write('building dist/ (the server runs as production runs it) ...\n');
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  const rows: Array<{ s: Scenario; full: Measured; base: Measured; raw: Measured; fullPeak: number; fullEach: string; basePeak: number; rawPeak: number; fullBoot: number; also?: { m: Measured; peak: number; boot: number } }> = [];
  for (const s of SCENARIOS.filter((x) => only.includes(x.id))) {
    // Fresh servers per scenario: no backlog or cache of one scenario leaks into the next.
    const full = process.argv.includes('--engine-tsx') ? await start('full', file) : await startProduction(file, nodeFlags);
    const base = await start('baseline', file);
    const raw = await start('raw', file);
    try {
      const fullBoot = serverMemory(full.child.pid!).rss;
      // Same answer from all three (asOf aside: the same page and the same records, field for field;
      // the baselines' match answer has no ids to compare), for the fixed body or the first bodies of
      // a varied sequence.
      for (const text of s.sequence ? s.sequence.slice(0, 5) : [JSON.stringify(s.body)]) {
        const body = JSON.parse(text);
        const [a, b, c] = [await post(full.port, s.path, body), await post(base.port, s.path, body), await post(raw.port, s.path, body)];
        for (const [name, other] of [['Express', b], ['raw', c]] as const) {
          if (a.page) {
            if (JSON.stringify(a.page) !== JSON.stringify(other.page) || JSON.stringify(a.data) !== JSON.stringify(other.data)) {
              throw new Error(`${s.id}: the ${name} baseline answers differently for ${text}`);
            }
          } else if (JSON.stringify(a.data.map((r: any) => r.partCode)) !== JSON.stringify(other.data.map((r: any) => r.partCode))) {
            throw new Error(`${s.id}: the ${name} baseline matches differently`);
          }
        }
      }
      // Peak RSS from here on: the load, not the boot (the full app compiles its contract validator at boot).
      for (const pid of processTree(full.child.pid!)) resetPeak(pid);
      resetPeak(base.child.pid!);
      resetPeak(raw.child.pid!);
      const body = JSON.stringify(s.body);
      const url = (port: number) => `http://127.0.0.1:${port}${s.path}`;
      // Each server's place in a varied sequence (past the bodies of the answer check above).
      const checked = s.sequence ? 5 : 0;
      const [bc, rc, fc] = [{ next: checked }, { next: checked }, { next: checked }];
      await load(url(base.port), body, 2, connections, s.sequence, bc);
      await load(url(raw.port), body, 2, connections, s.sequence, rc);
      await load(url(full.port), body, 2, connections, s.sequence, fc);
      const bm = await load(url(base.port), body, seconds, connections, s.sequence, bc);
      const rm = await load(url(raw.port), body, seconds, connections, s.sequence, rc);
      const fm = await load(url(full.port), body, seconds, connections, s.sequence, fc);
      const fullMemory = serverMemory(full.child.pid!);
      const row: (typeof rows)[number] = { s, full: fm, base: bm, raw: rm, fullPeak: fullMemory.peak, fullEach: fullMemory.each, basePeak: memoryMb(base.child.pid!).peak, rawPeak: memoryMb(raw.child.pid!).peak, fullBoot };
      if (alsoFlags.length > 0) {
        full.child.kill('SIGTERM');
        const other = await startProduction(file, alsoFlags);
        try {
          const boot = serverMemory(other.child.pid!).rss;
          await post(other.port, s.path, s.body);
          for (const pid of processTree(other.child.pid!)) resetPeak(pid);
          const oc = { next: 0 };
          await load(url(other.port), body, 2, connections, s.sequence, oc);
          const m = await load(url(other.port), body, seconds, connections, s.sequence, oc);
          row.also = { m, peak: serverMemory(other.child.pid!).peak, boot };
          process.stdout.write(`${s.id} with node ${alsoFlags.join(' ')}: ${m.rps.toFixed(1)} req/s (p50 ${m.p50} / p99 ${m.p99} ms), ratio to raw ${(m.rps / rm.rps).toFixed(2)}, peak RSS ${row.also.peak.toFixed(0)} MB (after boot ${boot.toFixed(0)} MB)\n`);
        } finally {
          other.child.kill('SIGTERM');
        }
      }
      rows.push(row);
      process.stdout.write(
        `${s.id} ${s.title}: engine ${fm.rps.toFixed(1)} req/s (p50 ${fm.p50} / p99 ${fm.p99} ms), Express baseline ${bm.rps.toFixed(1)} req/s (p50 ${bm.p50} / p99 ${bm.p99} ms), raw baseline ${rm.rps.toFixed(1)} req/s (p50 ${rm.p50} / p99 ${rm.p99} ms), engine ÷ Express ${(fm.rps / bm.rps).toFixed(2)}, engine ÷ raw ${(fm.rps / rm.rps).toFixed(2)}, peak RSS under load ${row.fullPeak.toFixed(0)} / ${row.basePeak.toFixed(0)} / ${row.rawPeak.toFixed(0)} MB (engine per process ${row.fullEach}; after boot ${fullBoot.toFixed(0)} MB)\n`,
      );
    } finally {
      full.child.kill('SIGTERM');
      base.child.kill('SIGTERM');
      raw.child.kill('SIGTERM');
    }
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const also = alsoFlags.join(' ');
  const table = [
    `| scenario | engine req/s | engine p50 / p99 ms | Express baseline req/s | raw baseline req/s | raw p50 / p99 ms | engine ÷ Express | engine ÷ raw | peak RSS under load, engine / Express / raw MB |${also ? ` engine with \`${also}\`: req/s, p50 / p99 ms, ÷ raw, peak RSS MB |` : ''}`,
    `|---|---|---|---|---|---|---|---|---|${also ? '---|' : ''}`,
    ...rows.map(
      (r) =>
        `| ${r.s.id}: ${r.s.title} | ${r.full.rps.toFixed(1)} | ${r.full.p50} / ${r.full.p99} | ${r.base.rps.toFixed(1)} | ${r.raw.rps.toFixed(1)} | ${r.raw.p50} / ${r.raw.p99} | ${(r.full.rps / r.base.rps).toFixed(2)} | **${(r.full.rps / r.raw.rps).toFixed(2)}** | ${r.fullPeak.toFixed(0)} / ${r.basePeak.toFixed(0)} / ${r.rawPeak.toFixed(0)} |` +
        (r.also ? ` ${r.also.m.rps.toFixed(1)}, ${r.also.m.p50} / ${r.also.m.p99}, **${(r.also.m.rps / r.raw.rps).toFixed(2)}**, ${r.also.peak.toFixed(0)} |` : ''),
    ),
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  if (!process.argv.includes('--no-write') && rows.length === SCENARIOS.length) {
    const boot = Math.max(...rows.map((r) => r.fullBoot));
    const SECTION = ENGINE === 'postgres' ? '## Query engine on PostgreSQL' : '## Query engine';
    writeReadmeSection(
      SECTION,
      [
        SECTION,
        '',
        `\`npx tsx bench/query.ts${ENGINE === 'postgres' ? ' --engine postgres' : ''}\` — the server as production runs it (\`node dist/src/main.js\`, built by the script;`,
        `configuration from the environment; request log to stdout, discarded${nodeFlags.length ? `; node ${nodeFlags.join(' ')}` : ''}) against a raw baseline (bare Express +`,
        `knex/${ENGINE === 'postgres' ? 'pg' : 'better-sqlite3'} in one file, plain SQL: count + \`ORDER BY ... LIMIT/OFFSET\` + one IN for children; match`,
        `reads every name and runs a full Levenshtein) on the same ${ENGINE === 'postgres' ? 'PostgreSQL database' : 'SQLite file'}. Data: the demo company seeded at scale ${SEED_SCALE}`,
        `(100,000 parts; 84,000 service invoices with ~3.2 lines each; 1.1 million job costs; 7.8 million rows), ${ENGINE === 'postgres' ? `database ${PG_DATABASE}` : 'cached in bench/.data/'}.`,
        'Fresh server processes per scenario (the baseline under tsx); autocannon in the parent;',
        'peak RSS is VmHWM reset after boot, i.e. the peak while the scenario ran (the engine: the largest per-process peak of',
        'its processes, a worker\'s when WORKERS > 1). Scenarios too slow to complete',
        `2 × connections requests in the window are measured over a fixed ${'2 × connections'} requests instead.`,
        '',
        `Last run: ${new Date().toISOString().slice(0, 10)}, ${connections} connections, ${seconds} s per run after 2 s warm-up, Node ${process.version}, ${os.cpus().length} × ${cpu}.`,
        `Engine resident after boot, before load: ${boot.toFixed(0)} MB` +
          (rows[0]?.also ? `; with \`node ${also}\`: ${Math.max(...rows.map((r) => r.also?.boot ?? 0)).toFixed(0)} MB.` : '.'),
        '',
        table,
        '',
        'Reading the table: targets are A and B at least 0.9 of the baseline, C at least 3 times, D p99 under',
        '100 ms, peak RSS under 150 MB. B and E gain most from reusing the exact totalCount (the baseline counts',
        'all service invoices, a full scan, on every request; the engine counts once per change token). C is the',
        'deferred join: keys by OFFSET from the covering index of migration 005, then the page by key; the',
        'baseline walks the ordering index and reads every skipped row. D is the in-memory match index; the',
        'baseline reads and scores all 100,000 names per request. F filters 1.1 million job costs by job and',
        'cost code (the pair with the most rows) through the (jobnum, cstcde) index and sorts by date. Peak RSS',
        'target: at most 150 MB in every scenario (see "Memory and start-up"). Machine shared with other work:',
        'numbers vary by about ±20 % between runs.',
        '',
      ].join('\n'),
    );
    process.stdout.write('written to bench/README.md (section "Query engine")\n');
  }
}

/** Bodies of a varied scenario: 50,000 of them, the same list in every run. */
const VARIED_LENGTH = 50_000;
/** A permutation of 0 .. period - 1 (period not a multiple of the step), so neighbours differ. */
const spread = (i: number, period: number) => (i * 7919) % period;

/**
 * The varied twins' request sequences. A and B: the threshold of A and B moved by a different
 * amount each request (A: partCost > 25.0000 .. 74.9999, 500,000 values, about as many parts as
 * A's 50; B: invoiceTotal > 0.00 .. 149.99, below every invoice, so every request counts them
 * all, as B does). F: the (job, cost code) pairs with at least a page of job costs, most rows
 * first, in turn (a pair comes back only after all the others).
 */
function variedSequences(pairs: JobCostPair[]): void {
  const set = (id: string, make: (i: number) => Record<string, unknown>) => {
    const scenario = SCENARIOS.find((x) => x.id === id)!;
    scenario.sequence = Array.from({ length: VARIED_LENGTH }, (_, i) => JSON.stringify(make(i)));
    scenario.body = JSON.parse(scenario.sequence[0]!);
  };
  set('Av', (i) => ({ ...A, filters: { match: { field: 'partCost', operator: '>', value: (250_000 + spread(i, 500_000)) / 10_000 } } }));
  set('Bv', (i) => ({ ...B, filters: { match: { field: 'invoiceTotal', operator: '>', value: spread(i, 15_000) / 100 } } }));
  const paged = pairs.filter((p) => p.rows >= 100);
  set('Fv', (i) => {
    const { job, code } = paged[i % paged.length]!;
    return jobCostBody(job, code);
  });
  process.stdout.write(`Fv: ${paged.length} (job, cost code) pairs with at least 100 job costs, in turn\n`);
}

/** Scenario F's body: the (job, cost code) pair with the most job costs in the bench data. */
function pickJobCostPair(pairs: JobCostPair[]): void {
  const { job, code, rows } = pairs[0]!;
  const f = SCENARIOS.find((x) => x.id === 'F')!;
  (f as { body: unknown }).body = jobCostBody(job, code);
  process.stdout.write(`F: job ${job}, cost code ${code}: ${rows} job costs\n`);
}

interface JobCostPair {
  job: number;
  code: number;
  rows: number;
}

/** Every (job, cost code) pair of the bench data's job costs with its number of rows, most rows first. */
async function jobCostPairs(url: string): Promise<JobCostPair[]> {
  const { openDatabase, parseDatabaseUrl } = await import('../src/storage/database');
  const { dialectFor } = await import('../src/storage/dialect');
  const knex = openDatabase(parseDatabaseUrl(url, { min: 0, max: 1 }));
  try {
    const pairs = (await knex('jobcst').select('jobnum', 'cstcde').count({ n: '*' }).whereNotNull('cstcde').groupBy('jobnum', 'cstcde').orderBy('n', 'desc')) as Array<{ jobnum: number; cstcde: unknown; n: unknown }>;
    return pairs.map((p) => ({ job: Number(p.jobnum), code: Number(dialectFor(ENGINE).decodeDecimal(p.cstcde as any, 3)!.toFixed(3)), rows: Number(p.n) }));
  } finally {
    await knex.destroy();
  }
}

if (require.main !== module) {
  // Imported (bench/heap-limit-ab.ts: the scenarios, the data and the key): nothing runs.
} else if (process.argv.includes('--serve')) {
  // Exit normally on a signal (flushes --cpu-prof profiles when profiling a server).
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
  const kind = process.argv[process.argv.indexOf('--serve') + 1];
  const file = process.argv[process.argv.indexOf('--serve') + 2]!; // database URL
  (kind === 'full' ? serveFull(file) : kind === 'raw' ? serveRaw(file) : serveBaseline(file))
    .then((port) => (process.send ? process.send({ port } satisfies Ready) : process.stdout.write(`${kind} listening on ${port}\n`)))
    .catch((err) => {
      process.stderr.write(`bench server failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
} else {
  main().catch((err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
