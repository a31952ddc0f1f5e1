/**
 * The event feed across processes (TEST_ENGINE: SQLite file or PostgreSQL): two real server
 * processes on one database (two instances) and the detector in a third process (this one), as
 * in production where one detector runs somewhere and any instance answers.
 *   - a consumer that stores `page.nextCursor` reads each event exactly once and in order while its
 *     pages alternate between the two instances, across detection cycles, and across a SIGKILL and
 *     restart of one instance in the middle of its reading;
 *   - a long poll parked on one instance returns as soon as the detector of ANOTHER process has
 *     committed an event (the instance learns it from the database, EVENT_FEED_POLL_MS), not at
 *     the end of its wait.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { Knex } from 'knex';
import { createTestDatabase } from '../support/app';
import { openDatabase, parseDatabaseUrl, type Engine } from '../../src/storage/database';
import { ApiKeyRepository } from '../../src/storage/api-keys';
import { toDbTime } from '../../src/storage/db-time';
import { Events } from '../../src/events';
import { postJson, spawnServer, type SpawnedServer } from '../support/server-process';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/storage/secret-box';
import { AuditLog } from '../../src/audit';

const adminKey = randomUUID();
const apiKey = randomUUID();
const POLL_MS = 100;
let db: { url: string; engine: Engine; drop: () => Promise<void> };
let knex: Knex;
let a: SpawnedServer;
let b: SpawnedServer;
/** The detector, in this process; its clock is set past each round's stamps. */
let events: Events;
let clock = new Date();

const spawn = (name: string) => spawnServer({ databaseUrl: db.url, adminKey, apiKey, env: { INSTANCE_ID: name, EVENT_FEED_POLL_MS: String(POLL_MS) } });

before(async () => {
  db = await createTestDatabase();
  knex = openDatabase(parseDatabaseUrl(db.url, { min: 0, max: 2 }));
  a = await spawn('feed-a');
  b = await spawn('feed-b');
  events = new Events({
    knex,
    engine: db.engine,
    keys: new ApiKeyRepository(knex),
    // This test's detector registers no webhook endpoint: any key seals nothing here.
    secrets: new SecretBox(randomBytes(32)),
    audit: new AuditLog({ knex, engine: db.engine, logger: pino({ level: 'silent' }), retentionDays: 400 }),
    logger: pino({ level: 'silent' }),
    config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: false, webhookTimeoutMs: 2000 },
    clock: () => clock,
  });
  const feed = await postJson(a.port, '/api/v3/event-feeds', { eventTypes: ['payable_invoice.updated', 'purchase_order.updated'] }, { 'x-api-key': adminKey });
  assert.equal(feed.status, 200, JSON.stringify(feed.body));
  clock = new Date(Date.now() + 1_000);
});
after(async () => {
  await a?.kill();
  await b?.kill();
  await knex?.destroy();
  await db?.drop();
});

/** Stamps rows (by record number) as changed now, and runs one detection cycle just after. */
async function changeAndDetect(changes: Array<[table: string, offset: number, count: number]>): Promise<void> {
  const stamp = new Date(clock.getTime() + 1_000);
  for (const [table, offset, count] of changes) {
    const recnums = (await knex(table).orderBy('recnum').offset(offset).limit(count).select('recnum')).map((r: any) => r.recnum);
    await knex(table).whereIn('recnum', recnums).update({ upddte: toDbTime(db.engine, stamp), updusr: 'JSMITH' });
  }
  clock = new Date(stamp.getTime() + 1_000);
  const result = await events.detectNow();
  assert.equal(result.ran, true);
}

const read = (server: SpawnedServer, body: Record<string, unknown>) => postJson(server.port, '/api/v3/events/query', body, { 'x-api-key': apiKey });

/** The consumer: its stored cursor and every event id it processed, in order. */
const consumer = { cursor: undefined as string | undefined, seen: [] as string[] };

/** One page through `server`; the consumer stores the cursor once the page is processed. Answers how many events it held. */
async function page(server: SpawnedServer): Promise<number> {
  const res = await read(server, { ...(consumer.cursor ? { after: consumer.cursor } : {}), page: { pageSize: 2 } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  for (const e of res.body.data) consumer.seen.push(e.id);
  consumer.cursor = res.body.page.nextCursor;
  return res.body.data.length;
}

/** Pages until an empty one, alternating between the servers given. */
async function drain(...servers: SpawnedServer[]): Promise<void> {
  for (let i = 0; i < 100; i++) if ((await page(servers[i % servers.length]!)) === 0) return;
  assert.fail('the feed did not end');
}

async function kept(): Promise<string[]> {
  return (await knex('evtlog').orderBy('seq').select('event_id')).map((r: any) => r.event_id);
}

test('each event is read exactly once and in order, pages alternating between two instances, across a restart of one of them', async () => {
  await changeAndDetect([['acpinv', 0, 3]]);
  await drain(a, b);
  assert.equal(consumer.seen.length, 3);

  await changeAndDetect([['pchord', 0, 2], ['acpinv', 3, 1]]);
  await drain(b, a);
  assert.equal(consumer.seen.length, 6);

  // Mid-reading: one page through A, then A dies; more is detected meanwhile; A comes back.
  await changeAndDetect([['acpinv', 4, 3]]);
  assert.equal(await page(a), 2);
  await a.kill('SIGKILL');
  await changeAndDetect([['pchord', 2, 2]]);
  a = await spawn('feed-a');
  await drain(a, b);

  const ids = await kept();
  assert.equal(ids.length, 11);
  assert.deepEqual(consumer.seen, ids, 'every event once, in the order of the log');
  assert.equal(new Set(consumer.seen).size, consumer.seen.length);
  // The stored cursor answers the same (empty) page on both instances.
  for (const server of [a, b]) {
    const res = await read(server, { after: consumer.cursor });
    assert.deepEqual(res.body.data, []);
    assert.equal(res.body.page.nextCursor, consumer.cursor);
  }
});

test('a long poll on one instance returns as soon as another process has detected an event', async (t) => {
  await drain(a);
  const sent = Date.now();
  const pending = read(b, { after: consumer.cursor, waitSeconds: 25 });
  // Let the request reach B and park (were it later, it would find the event at once: still early).
  await new Promise((r) => setTimeout(r, 500));
  await changeAndDetect([['acpinv', 7, 1]]);
  const detected = Date.now();
  const res = await pending;
  const answered = Date.now();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.data.length, 1);
  assert.equal(res.body.data[0].id, (await kept()).at(-1));
  t.diagnostic(`answered ${answered - detected} ms after the detection committed (${answered - sent} ms after it was sent; poll every ${POLL_MS} ms)`);
  assert.ok(answered - sent < 15_000, `answered long before the 25 s wait (${answered - sent} ms)`);
  assert.ok(answered - detected < 5_000, `answered within seconds of the detection (${answered - detected} ms)`);
});
