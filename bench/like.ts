/**
 * LIKE benchmark: what a LIKE / NOT LIKE filter costs the query engine over a large table, one
 * request at a time (decision 0463: SQLite's LIKE folds case through a function of the service).
 *
 *   Lj   job costs, description LIKE '%<fragment>%', page 1 of 100 with totalCount (the count reads
 *        every job cost: 112,000 at scale 25, 1.1 million at 250)
 *   Ljn  the same with NOT LIKE
 *   Lp   parts, partName LIKE '<prefix>%', page 1 of 100 by partCode with totalCount
 *   Lju  Lj with an accented pattern (its `e`s as `é`): on SQLite the path of a non-ASCII pattern
 *
 * Every request has a pattern of its own (fragments of the stored text in three cases), so no
 * count is reused. The app is built as production builds it (responses not validated) and served
 * in this process; the requests go over HTTP on loopback, one at a time. Printed per scenario: the
 * median and 90th percentile wall time and the CPU time of this process per request (the client's
 * share is the same on every build). Data: bench/query.ts's data set (`BENCH_SCALE=25 npx tsx
 * bench/query.ts --data-only` builds it, about 20 s), SQLite, or `--engine postgres` on the
 * database bench/query.ts seeds there.
 *
 *   BENCH_SCALE=25 npx tsx bench/like.ts [--requests N] [--engine sqlite|postgres]
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

const ROOT = path.resolve(__dirname, '..');
const SCALE = Number(process.env.BENCH_SCALE ?? 250);
const DATA_NAME = SCALE === 250 ? 'v2' : `v2_s${SCALE}`;
const KEY = '8c1d2a4e-6f3b-4c5d-9e7f-a1b2c3d4e5f6';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
}

function databaseUrl(engine: string): string {
  if (engine === 'postgres') {
    const base = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;
    if (!base) throw new Error('--engine postgres needs BENCH_POSTGRES_URL (or TEST_POSTGRES_URL)');
    const url = new URL(base);
    url.pathname = `/${process.env.BENCH_POSTGRES_DATABASE || `ais_bench_query_${DATA_NAME}`}`;
    return url.toString();
  }
  const file = path.join(ROOT, 'bench', '.data', `query-${DATA_NAME}.sqlite`);
  if (!fs.existsSync(file)) throw new Error(`${path.relative(ROOT, file)} is missing: BENCH_SCALE=${SCALE} npx tsx bench/query.ts --data-only`);
  return `sqlite://${file}`;
}

/** Fragments of stored text, in three cases each: as many distinct patterns as requests. */
function fragments(texts: string[], count: number, from: 'anywhere' | 'start'): string[] {
  const out = new Set<string>();
  for (let i = 0; out.size < count && i < count * 20; i += 1) {
    const text = texts[(i * 7919) % texts.length]!;
    const length = 2 + (i % 4);
    const start = from === 'start' ? 0 : (i * 31) % Math.max(1, text.length - length);
    const piece = text.slice(start, start + length);
    const cased = i % 3 === 0 ? piece.toUpperCase() : i % 3 === 1 ? piece.toLowerCase() : piece;
    out.add(cased);
  }
  return [...out];
}

function median(values: number[], q = 0.5): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function main(): Promise<void> {
  const engine = arg('engine', 'sqlite');
  const requests = Number(arg('requests', '200'));
  const pino = (await import('pino')).default;
  const { loadConfig } = await import('../src/config');
  const { createServices } = await import('../src/services');
  const { createApp } = await import('../src/app');
  const { openDatabase, parseDatabaseUrl } = await import('../src/storage/database');
  const url = databaseUrl(engine);
  const config = { ...loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', SECRETS_KEY: process.env.SECRETS_KEY || randomBytes(32).toString('base64') }), rateLimitPerMinute: 0, seedOnStart: false, validateResponses: false };
  const target = parseDatabaseUrl(config.databaseUrl, { min: 0, max: config.dbPoolMax });
  const knex = openDatabase(target);
  const services = createServices(config, pino({ level: 'silent' }), knex, target.engine);
  await services.keys.ensure(KEY, 'bench', 'integration');
  const server = http.createServer(createApp(services));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const post = async (p: string, body: unknown): Promise<any> => {
    const res = await fetch(`http://127.0.0.1:${port}${p}`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = await res.json();
    if (res.status !== 200) throw new Error(`${p} answered ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
    return json;
  };
  try {
    const descriptions = ((await knex('jobcst').distinct('dscrpt').whereNotNull('dscrpt')) as Array<{ dscrpt: string }>).map((r) => r.dscrpt);
    const names = ((await knex('tkfprt').distinct('prtnme').whereNotNull('prtnme')) as Array<{ prtnme: string }>).map((r) => r.prtnme);
    const jobCosts = (operator: string) => (p: string) => ({ filters: { match: { field: 'description', operator, value: `%${p}%` } }, page: { pageNumber: 1, pageSize: 100 } });
    const scenarios = [
      { id: 'Lj', path: '/api/v3/job-costs/query', patterns: fragments(descriptions, requests, 'anywhere'), body: jobCosts('LIKE') },
      { id: 'Ljn', path: '/api/v3/job-costs/query', patterns: fragments(descriptions, requests, 'anywhere'), body: jobCosts('NOT LIKE') },
      {
        id: 'Lju',
        path: '/api/v3/job-costs/query',
        patterns: fragments(descriptions, requests, 'anywhere').map((p) => (p.includes('e') ? p.replace(/e/g, 'é') : `${p}é`)),
        body: jobCosts('LIKE'),
      },
      {
        id: 'Lp',
        path: '/api/v3/parts/query',
        patterns: fragments(names, requests, 'start'),
        body: (p: string) => ({ filters: { match: { field: 'partName', operator: 'LIKE', value: `${p}%` } }, orderBy: ['partCode ASC'], page: { pageNumber: 1, pageSize: 100 } }),
      },
    ];
    process.stdout.write(`${engine}, scale ${SCALE}, ${requests} requests a scenario, one at a time\n`);
    for (const s of scenarios) {
      // Warm-up: the validator of the operation, the statement cache, the pages of the table.
      for (const p of ['zz warm-up 1', 'zz warm-up 2', 'zz warm-up 3']) await post(s.path, s.body(p));
      const wall: number[] = [];
      let rows = 0;
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      for (const p of s.patterns) {
        const t0 = performance.now();
        const env = await post(s.path, s.body(p));
        wall.push(performance.now() - t0);
        rows += env.page.totalCount;
      }
      const elapsed = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const n = s.patterns.length;
      process.stdout.write(
        `${s.id}: ${n} requests, median ${median(wall).toFixed(2)} ms, p90 ${median(wall, 0.9).toFixed(2)} ms, ` +
          `CPU ${((cpu.user + cpu.system) / 1000 / n).toFixed(2)} ms a request, ${((n * 1000) / elapsed).toFixed(1)} req/s, ` +
          `${(rows / n).toFixed(0)} rows matched on average\n`,
      );
    }
  } finally {
    server.close();
    services.lock.stop();
    await knex.destroy();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
