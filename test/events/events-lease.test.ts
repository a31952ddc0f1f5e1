/**
 * The change-event detection lease across processes (src/events/detector.ts), with two Events on
 * two connections of one database, each holding the lease under its heartbeat's boot id, as the
 * server wires them (src/services.ts): a live holder keeps the lease; a holder whose process is gone
 * (silent for 3 beats, or its instance name now runs another boot) loses it at once to the next
 * process that tries, long before the lease runs out; a holder that is not a boot id (an older
 * version's) keeps it until it runs out. test/deployment/ kills a real detecting process.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { SecretBox } from '../../src/storage/secret-box';
import { AuditLog } from '../../src/audit';
import type { Knex } from 'knex';
import pino from 'pino';
import { createTestDatabase } from '../support/app';
import { openDatabase, parseDatabaseUrl, type Engine } from '../../src/storage/database';
import { toDbTime } from '../../src/storage/db-time';
import { ApiKeyRepository } from '../../src/storage/api-keys';
import { bootGone, InstanceHeartbeat } from '../../src/storage/instance-heartbeat';
import { Events } from '../../src/events';
import { DETECTION_LEASE } from '../../src/events/detector';

const logger = pino({ level: 'silent' });
let db: { url: string; engine: Engine; drop: () => Promise<void> };
let one: Knex;
let two: Knex;

before(async () => {
  db = await createTestDatabase(false);
  one = openDatabase(parseDatabaseUrl(db.url, { min: 0, max: 2 }));
  two = openDatabase(parseDatabaseUrl(db.url, { min: 0, max: 2 }));
});
after(async () => {
  await one?.destroy();
  await two?.destroy();
  await db?.drop();
});

/** A process: its heartbeat (recorded now, no timer) and its events wing, on its own connection. */
async function processOn(knex: Knex, instanceId: string) {
  const heartbeat = new InstanceHeartbeat({ knex, engine: db.engine, logger, instanceId, beatMs: 200 });
  await heartbeat.start();
  heartbeat.stop();
  const events = new Events({
    knex,
    engine: db.engine,
    keys: new ApiKeyRepository(knex),
    secrets: new SecretBox(randomBytes(32)),
    audit: new AuditLog({ knex, engine: db.engine, logger: pino({ level: 'silent' }), retentionDays: 400 }),
    logger,
    config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: true, webhookTimeoutMs: 2000 },
    holder: heartbeat.identity.bootId,
    holderGone: (holder) => bootGone(knex, holder, Date.now()),
  });
  return { heartbeat, events };
}

const holder = async () => (await one('whklse').where({ name: DETECTION_LEASE }).first())?.holder as string | undefined;

test('a live holder keeps the detection lease; a silent one (3 missed beats) loses it at once, long before it runs out', async () => {
  await one('whklse').delete();
  const a = await processOn(one, `a-${randomUUID()}`);
  const b = await processOn(two, `b-${randomUUID()}`);
  assert.equal((await a.events.detectNow()).ran, true);
  assert.equal((await b.events.detectNow()).ran, false, 'A beats: B waits');
  assert.equal(await holder(), a.heartbeat.identity.bootId);

  // A stops beating (killed): 3 beats of 200 ms later B takes over; the 300 s lease has not run out.
  await one('insthb').where({ instance_id: a.heartbeat.identity.instanceId }).update({ last_seen: toDbTime(db.engine, new Date(Date.now() - 700)) });
  assert.equal((await b.events.detectNow()).ran, true, 'B takes the lease of a silent holder');
  assert.equal(await holder(), b.heartbeat.identity.bootId);
  assert.equal((await a.events.detectNow()).ran, false, 'A, back late, does not get it back while B beats');
  assert.equal((await b.events.detectNow()).ran, true, 'B renews');
});

test('a holder whose instance name runs another boot (restarted) loses the lease at once; the new boot may take it', async () => {
  await one('whklse').delete();
  const name = `c-${randomUUID()}`;
  const c = await processOn(one, name);
  const d = await processOn(two, `d-${randomUUID()}`);
  assert.equal((await c.events.detectNow()).ran, true);
  assert.equal((await d.events.detectNow()).ran, false);
  // C restarts under the same name: its old boot is gone.
  const restarted = await processOn(one, name);
  assert.equal((await restarted.events.detectNow()).ran, true, 'the new boot takes the old boot\'s lease');
  assert.equal(await holder(), restarted.heartbeat.identity.bootId);
  assert.equal((await c.events.detectNow()).ran, false, 'the old boot does not hold it any more');
});

test('a holder that is not a boot id (an older version) keeps the lease until it runs out; without holderGone nothing is taken over early', async () => {
  await one('whklse').delete();
  const e = await processOn(one, `e-${randomUUID()}`);
  await one('whklse').insert({ name: DETECTION_LEASE, holder: 'old-host:4242:ab12cd34', expires_at: toDbTime(db.engine, new Date(Date.now() + 60_000)) });
  assert.equal((await e.events.detectNow()).ran, false);
  assert.equal(await holder(), 'old-host:4242:ab12cd34');

  // An Events without holderGone (tests, tools) waits for the lease even of a gone boot.
  await one('whklse').where({ name: DETECTION_LEASE }).update({ holder: randomUUID() });
  const plain = new Events({
    knex: two,
    engine: db.engine,
    keys: new ApiKeyRepository(two),
    secrets: new SecretBox(randomBytes(32)),
    audit: new AuditLog({ knex: two, engine: db.engine, logger: pino({ level: 'silent' }), retentionDays: 400 }),
    logger,
    config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: true, webhookTimeoutMs: 2000 },
  });
  assert.equal((await plain.detectNow()).ran, false);
  assert.equal((await e.events.detectNow()).ran, true, 'a boot id that no instance runs is gone');
});
