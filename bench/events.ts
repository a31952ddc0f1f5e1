/**
 * Change events: the cost of one detection cycle over a large subscribed table as the number of
 * changes grows (it should grow with the changes, not with the table), and events delivered per
 * second to a local receiver.
 *
 *   node --import tsx bench/events.ts                      (SQLite, a temporary file)
 *   BENCH_DATABASE_URL=postgres://.../db node --import tsx bench/events.ts   (an empty database)
 *   BENCH_ROWS=1000000 BENCH_EVENTS=2000
 *
 * The table is lgrtrn (ledger transactions, a subscribed document kind) filled with BENCH_ROWS
 * rows stamped long ago; each measurement stamps K rows inside the window and runs one cycle.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { openDatabase, parseDatabaseUrl } from '../src/storage/database';
import { migrateLatest } from '../db/migrate';
import { ApiKeyRepository } from '../src/storage/api-keys';
import { Events } from '../src/events';
import { SecretBox } from '../src/storage/secret-box';
import { AuditLog } from '../src/audit';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2_000);

async function main() {
  const tmp = path.join(os.tmpdir(), `bench-events-${process.pid}.sqlite`);
  const url = process.env.BENCH_DATABASE_URL ?? `sqlite://${tmp}`;
  const target = parseDatabaseUrl(url, { min: 0, max: 10 });
  const knex = openDatabase(target);
  const engine = target.engine;
  const logger = pino({ level: 'warn' });
  try {
    await migrateLatest(knex);
    await knex('whkatt').delete();
    await knex('whkdlv').delete();
    await knex('whkept').delete();
    await knex('whkcur').delete();
    await knex('whklse').delete();
    await knex('lgtnln').delete();
    await knex('lgrtrn').delete();
    if (!(await knex('source').where({ recnum: 1 }).first())) await knex('source').insert({ recnum: 1, srcnme: 'bench' });

    const keys = new ApiKeyRepository(knex);
    const { record: owner } = await keys.create('bench owner', 'admin');
    let clock = new Date('2026-01-01T00:00:00Z');
    const events = new Events({
      knex,
      engine,
      keys,
      // A key of this run only: the bench's endpoints are deleted at its start.
      secrets: new SecretBox(randomBytes(32)),
      audit: new AuditLog({ knex, engine, logger, retentionDays: 400 }),
      logger,
      config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: true, webhookTimeoutMs: 10_000 },
      clock: () => clock,
    });

    const fill = async (from: number, to: number) => {
      const started = Date.now();
      if (engine === 'sqlite') {
        await knex.raw(
          `WITH RECURSIVE s(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM s WHERE n < ?)
           INSERT INTO lgrtrn (_idnum, recnum, trnnum, trndte, srcnum, actprd, postyr, insdte, upddte, insusr, updusr)
           SELECT printf('%08x-0000-4000-8000-%012x', n, n), n, 'B' || n, '2020-01-01', 1, 1, 2020, '2020-01-01 00:00:00', '2020-01-01 00:00:00', 'SEED', 'SEED' FROM s`,
          [from, to],
        );
      } else {
        await knex.raw(
          `INSERT INTO lgrtrn (_idnum, recnum, trnnum, trndte, srcnum, actprd, postyr, insdte, upddte, insusr, updusr)
           SELECT (lpad(to_hex(n), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, n, 'B' || n, '2020-01-01', 1, 1, 2020,
                  '2020-01-01T00:00:00Z', '2020-01-01T00:00:00Z', 'SEED', 'SEED' FROM generate_series(?::int, ?::int) n`,
          [from, to],
        );
        await knex.raw('ANALYZE lgrtrn');
      }
      console.log(`filled lgrtrn rows ${from}..${to} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    };

    const ep = await events.store.createEndpoint({ url: 'http://127.0.0.1:9/unused', description: 'bench', eventTypes: ['ledger_transaction.created', 'ledger_transaction.updated'], ownerKeyId: owner.id, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }, clock);
    // Nothing is sent while detecting (deliverNow is not called); the outbox is emptied after each cycle.

    const results: Array<{ rows: number; changes: number; ms: number; queued: number }> = [];
    const measure = async (rows: number, changes: number) => {
      const samples: number[] = [];
      let queued = 0;
      for (let rep = 0; rep < 3; rep++) {
        const cursor = clock;
        await knex('whkcur').delete();
        await events.store.ensureCursor('ledger_transaction', cursor);
        // Stamp `changes` rows spread over the table inside the window (cursor, cursor + 1 min].
        const stamp = events.store.t(new Date(cursor.getTime() + 30_000));
        if (changes > 0) {
          const step = Math.max(1, Math.floor(rows / changes));
          const ids: number[] = [];
          for (let i = 0; i < changes; i++) ids.push(1 + ((i * step + rep) % rows));
          for (let i = 0; i < ids.length; i += 500) await knex('lgrtrn').whereIn('recnum', ids.slice(i, i + 500)).update({ upddte: stamp, updusr: 'JSMITH' });
        }
        clock = new Date(cursor.getTime() + 60_000);
        await knex('whklse').delete();
        const started = process.hrtime.bigint();
        const r = await events.detectNow();
        samples.push(Number(process.hrtime.bigint() - started) / 1e6);
        queued = r.queued;
        await knex('whkdlv').delete();
        clock = new Date(clock.getTime() + 60_000);
      }
      samples.sort((a, b) => a - b);
      results.push({ rows, changes, ms: samples[1]!, queued });
      console.log(`rows ${rows}, changes ${changes}: ${samples[1]!.toFixed(1)} ms per cycle (median of 3), ${queued} queued`);
    };

    const small = Math.min(100_000, ROWS);
    await fill(1, small);
    for (const changes of [0, 100, 1_000]) await measure(small, changes);
    if (ROWS > small) {
      await fill(small + 1, ROWS);
      for (const changes of [0, 100, 1_000, 10_000]) await measure(ROWS, changes);
    }

    // ---------------------------------------------------------------- delivery throughput
    let received = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received++;
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    await events.store.updateEndpoint(ep.id, { url: `http://127.0.0.1:${port}/hook` }, clock);
    const payload = JSON.stringify({ type: 'ledger_transaction.updated', timestamp: clock.toISOString(), data: { entity: 'ledger_transaction', source: 'accounting_system', changedAt: clock.toISOString(), changedBy: 'JSMITH', record: { id: '00000001-0000-4000-8000-000000000001', recordNumber: 1, transactionNumber: 'B1', description: 'x'.repeat(40) } } });
    for (let i = 0; i < EVENTS; i++) await events.store.enqueue(knex, { endpointId: ep.id, eventId: `evt_bench_${i}`, eventType: 'ledger_transaction.updated', payload }, clock);
    const started = Date.now();
    while ((await events.deliverNow()).claimed > 0);
    const seconds = (Date.now() - started) / 1000;
    const ok = await knex('whkdlv').where({ status: 'succeeded' }).count<{ n: number }[]>({ n: '*' });
    console.log(`delivered ${received} events (${ok[0]!.n} succeeded) in ${seconds.toFixed(2)} s: ${(received / seconds).toFixed(0)} events/s`);
    await new Promise((r) => server.close(r));
    console.log(JSON.stringify({ engine, results, delivery: { events: received, seconds, perSecond: Math.round(received / seconds) } }));
  } finally {
    await knex.destroy();
    for (const s of ['', '-wal', '-shm']) fs.rmSync(tmp + s, { force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
