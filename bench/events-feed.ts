/**
 * The event feed (issue 28): a consumer reading BENCH_FEED_EVENTS (default 100,000) events
 * through POST /events/query, in events per second, and the latency from detection to read of a
 * long-polling consumer.
 *
 *   node --import tsx bench/events-feed.ts                          (SQLite, a temporary file)
 *   BENCH_DATABASE_URL=postgres://.../emptydb node --import tsx bench/events-feed.ts
 *   BENCH_FEED_EVENTS=100000 BENCH_PAGE_SIZES=1000,100 BENCH_LATENCY_TRIALS=20 BENCH_POLL_MS=500
 *
 * Events are made by the real detector: ledger transactions (lgrtrn) are stamped inside detection
 * windows, 10,000 a cycle, with one event feed subscribed (no webhook endpoint). The server runs in
 * a child process (test/support/server-process.ts: the app as production wires it; response
 * validation off); the consumer and the detector run here. The consumer stores nothing but the
 * cursor and counts what it read; every event must be read exactly once.
 *
 * Latency: the consumer long polls (waitSeconds 30) on the server; this process then stamps one row
 * and runs a detection cycle. Measured from the moment the detection transaction has committed
 * (detectNow resolved) to the moment the answer carrying that event is parsed. The detector is in
 * another process than the server, so the server learns of the event through its poll of the log's
 * high-water mark (EVENT_FEED_POLL_MS): the cross-process path, the common one in production.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { SecretBox } from '../src/storage/secret-box';
import { AuditLog } from '../src/audit';
import pino from 'pino';
import { openDatabase, parseDatabaseUrl } from '../src/storage/database';
import { migrateLatest } from '../db/migrate';
import { ApiKeyRepository } from '../src/storage/api-keys';
import { Events } from '../src/events';
import { spawnServer } from '../test/support/server-process';

const EVENTS = Number(process.env.BENCH_FEED_EVENTS ?? 100_000);
const PER_CYCLE = 10_000;
const PAGE_SIZES = (process.env.BENCH_PAGE_SIZES ?? '1000,100').split(',').map(Number);
const TRIALS = Number(process.env.BENCH_LATENCY_TRIALS ?? 20);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 500);

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(port: number, body: unknown, key: string): Promise<{ status: number; body: any; bytes: number }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: '/api/v3/events/query', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload), 'x-api-key': key } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), bytes: text.length });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main() {
  const tmp = path.join(os.tmpdir(), `bench-events-feed-${process.pid}.sqlite`);
  const url = process.env.BENCH_DATABASE_URL ?? `sqlite://${tmp}`;
  const target = parseDatabaseUrl(url, { min: 0, max: 4 });
  const knex = openDatabase(target);
  const engine = target.engine;
  const adminKey = randomUUID();
  const apiKey = randomUUID();
  let server: Awaited<ReturnType<typeof spawnServer>> | undefined;
  try {
    await migrateLatest(knex);
    for (const table of ['evtlog', 'evtfed', 'whkatt', 'whkdlv', 'whkept', 'whkcur', 'whklse', 'lgtnln', 'lgrtrn']) await knex(table).delete();
    await knex('evtctr').update({ seq: 0, purged_through: 0 });
    if (!(await knex('source').where({ recnum: 1 }).first())) await knex('source').insert({ recnum: 1, srcnme: 'bench' });

    // ---------------------------------------------------------------- the rows changes are detected on
    let started = Date.now();
    if (engine === 'sqlite') {
      await knex.raw(
        `WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?)
         INSERT INTO lgrtrn (_idnum, recnum, trnnum, trndte, srcnum, actprd, postyr, insdte, upddte, insusr, updusr)
         SELECT printf('%08x-0000-4000-8000-%012x', n, n), n, 'B' || n, '2020-01-01', 1, 1, 2020, '2020-01-01 00:00:00', '2020-01-01 00:00:00', 'SEED', 'SEED' FROM s`,
        [EVENTS],
      );
    } else {
      await knex.raw(
        `INSERT INTO lgrtrn (_idnum, recnum, trnnum, trndte, srcnum, actprd, postyr, insdte, upddte, insusr, updusr)
         SELECT (lpad(to_hex(n), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, n, 'B' || n, '2020-01-01', 1, 1, 2020,
                '2020-01-01T00:00:00Z', '2020-01-01T00:00:00Z', 'SEED', 'SEED' FROM generate_series(1, ?::int) n`,
        [EVENTS],
      );
      await knex.raw('ANALYZE lgrtrn');
    }
    console.log(`filled lgrtrn with ${EVENTS} rows in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const keys = new ApiKeyRepository(knex);
    await keys.ensure(adminKey, 'bench admin', 'admin');
    await keys.ensure(apiKey, 'bench reader', 'integration');
    const owner = (await keys.findByKey(adminKey))!;
    // The detector's clock: a day ago, moved by each cycle (the server reads with the real clock).
    let clock = new Date(Date.now() - 24 * 3_600_000);
    const events = new Events({
      knex,
      engine,
      keys,
      secrets: new SecretBox(randomBytes(32)),
      audit: new AuditLog({ knex, engine, logger: pino({ level: 'warn' }), retentionDays: 400 }),
      logger: pino({ level: 'warn' }),
      config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: false, webhookTimeoutMs: 10_000 },
      clock: () => clock,
    });
    await events.feed.createFeed({ type: 'api-key', name: owner.name, keyId: owner.id, correlationId: null }, { eventTypes: ['ledger_transaction.created', 'ledger_transaction.updated'], description: 'bench' });

    // ---------------------------------------------------------------- detection: EVENTS events into the log
    started = Date.now();
    for (let from = 1; from <= EVENTS; from += PER_CYCLE) {
      const to = Math.min(EVENTS, from + PER_CYCLE - 1);
      const stamp = new Date(clock.getTime() + 1_000);
      await knex('lgrtrn').whereBetween('recnum', [from, to]).update({ upddte: events.store.t(stamp), updusr: 'JSMITH' });
      clock = new Date(stamp.getTime() + 1_000);
      const r = await events.detectNow();
      if (!r.ran || r.changes !== to - from + 1) throw new Error(`cycle ${from}..${to}: ${JSON.stringify(r)}`);
    }
    const detectSeconds = (Date.now() - started) / 1000;
    const kept = Number((await knex('evtlog').count({ n: '*' }))[0]!.n);
    // Autovacuum analyses a table that grew by 10 % within a minute or so; the bench does not wait
    // for it (without statistics PostgreSQL sorts the whole rest of the log for each page).
    if (engine === 'postgres') await knex.raw('ANALYZE evtlog');
    console.log(`detected ${kept} events in ${detectSeconds.toFixed(1)} s (${Math.round(kept / detectSeconds)} events/s, ${PER_CYCLE} a cycle)`);

    server = await spawnServer({ databaseUrl: url, adminKey, apiKey, env: { EVENT_FEED_POLL_MS: String(POLL_MS), RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn', DB_POOL_MAX: '4' } });
    const port = server.port;

    // ---------------------------------------------------------------- a consumer reading everything
    const reads: Array<{ pageSize: number; events: number; seconds: number; perSecond: number; requests: number; mbPerSecond: number; p50Ms: number; p99Ms: number }> = [];
    for (const pageSize of PAGE_SIZES) {
      let after: string | undefined;
      let n = 0;
      let requests = 0;
      let bytes = 0;
      const seen = new Set<string>();
      const times: number[] = [];
      started = Date.now();
      for (;;) {
        const t0 = process.hrtime.bigint();
        const res = await post(port, { ...(after ? { after } : {}), page: { pageSize } }, apiKey);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
        requests += 1;
        if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(res.body)}`);
        bytes += res.bytes;
        for (const e of res.body.data) seen.add(e.id);
        n += res.body.data.length;
        after = res.body.page.nextCursor;
        if (res.body.data.length === 0) break;
      }
      const seconds = (Date.now() - started) / 1000;
      if (n !== kept || seen.size !== kept) throw new Error(`read ${n} events (${seen.size} distinct), ${kept} kept`);
      times.sort((a, b) => a - b);
      const row = { pageSize, events: n, seconds, perSecond: Math.round(n / seconds), requests, mbPerSecond: Math.round((bytes / 1e6 / seconds) * 10) / 10, p50Ms: Math.round(pct(times, 50)), p99Ms: Math.round(pct(times, 99)) };
      reads.push(row);
      console.log(`pageSize ${pageSize}: ${n} events in ${seconds.toFixed(1)} s = ${row.perSecond} events/s (${requests} requests, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms a page, ${row.mbPerSecond} MB/s)`);
    }

    // ---------------------------------------------------------------- latency from detection to read (long poll)
    let cursor = (await post(port, { page: { pageSize: 1 }, filters: { match: { field: 'timestamp', operator: '>', value: new Date(Date.now() + 3_600_000).toISOString() } } }, apiKey)).body.page.nextCursor;
    const latencies: number[] = [];
    for (let i = 0; i < TRIALS; i++) {
      const pending = post(port, { after: cursor, waitSeconds: 30 }, apiKey);
      // Let the request park on the server (were it later, it would find the event at once).
      await new Promise((r) => setTimeout(r, 150 + Math.random() * POLL_MS));
      const stamp = new Date(clock.getTime() + 1_000);
      await knex('lgrtrn').where({ recnum: 1 + i }).update({ upddte: events.store.t(stamp), updusr: 'JSMITH' });
      clock = new Date(stamp.getTime() + 1_000);
      await events.detectNow();
      const committed = process.hrtime.bigint();
      const res = await pending;
      const ms = Number(process.hrtime.bigint() - committed) / 1e6;
      if (res.status !== 200 || res.body.data.length !== 1) throw new Error(`trial ${i}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      latencies.push(ms);
      cursor = res.body.page.nextCursor;
    }
    latencies.sort((a, b) => a - b);
    const latency = { trials: TRIALS, pollMs: POLL_MS, p50Ms: Math.round(pct(latencies, 50)), p95Ms: Math.round(pct(latencies, 95)), maxMs: Math.round(latencies.at(-1)!) };
    console.log(`detection to read (long poll, EVENT_FEED_POLL_MS ${POLL_MS}): p50 ${latency.p50Ms} ms, p95 ${latency.p95Ms} ms, max ${latency.maxMs} ms over ${TRIALS} events`);
    console.log(JSON.stringify({ engine, events: kept, detectSeconds, reads, latency, load: os.loadavg().map((l) => Math.round(l * 10) / 10), cpus: os.cpus().length, node: process.version }));
  } finally {
    agent.destroy();
    await server?.kill('SIGTERM');
    await knex.destroy();
    for (const s of ['', '-wal', '-shm']) fs.rmSync(tmp + s, { force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
