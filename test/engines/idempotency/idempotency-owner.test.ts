/**
 * Claims with an owner (instance + boot) and the conditional completion, with two idempotency
 * stores on two connections of one database, as two processes would be:
 *   - a live owner's claim is in flight for everyone else; a gone owner's (restarted: its instance
 *     runs another boot; silent: no heartbeat for 3 beats) is taken over at once, lease or not;
 *   - the old owner's late completion after a takeover matches nothing, so its posting (written in
 *     the same transaction) rolls back: the key posts once;
 *   - a completion already made (row written, transaction not yet committed) wins over a takeover
 *     racing it: the taker waits, then finds the answer recorded (no second execution);
 *   - a restarted instance frees its previous boot's claims at start.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import pino from 'pino';
import { TEST_ENGINE, createTestDatabase } from '../../support/app';
import { openDatabase, parseDatabaseUrl, type Engine } from '../../../src/storage/database';
import { toDbTime } from '../../../src/storage/db-time';
import { ApiKeyRepository } from '../../../src/storage/api-keys';
import { KnexIdempotencyStore } from '../../../src/engines/idempotency/store';
import { InstanceHeartbeat } from '../../../src/storage/instance-heartbeat';

const logger = pino({ level: 'silent' });
let db: { url: string; engine: Engine; drop: () => Promise<void> };
let one: Knex;
let two: Knex;
let scope: string;

before(async () => {
  db = await createTestDatabase(false);
  one = openDatabase(parseDatabaseUrl(db.url, { min: 0, max: 2 }));
  two = openDatabase(parseDatabaseUrl(db.url, { min: 0, max: 2 }));
  scope = (await new ApiKeyRepository(one).create('owner test', 'integration')).record.id;
});
after(async () => {
  await one?.destroy();
  await two?.destroy();
  await db?.drop();
});

/** A process: its heartbeat (recorded now, no timer) and its store, on its own connection. */
async function processOn(knex: Knex, instanceId: string, leaseMs = 60_000) {
  const heartbeat = new InstanceHeartbeat({ knex, engine: db.engine, logger, instanceId, beatMs: 200 });
  const freed = await heartbeat.start();
  heartbeat.stop();
  const store = new KnexIdempotencyStore({ knex, engine: db.engine, ttlHours: 1, leaseMs, inFlightRetryAfterSeconds: 1, owner: heartbeat.identity });
  return { heartbeat, store, freed };
}

const response = (n: number) => ({ status: 200, headers: {}, body: JSON.stringify({ n }) });

/** The "posting": a numseq row written in the transaction that completes the claim. */
async function post(knex: Knex, store: KnexIdempotencyStore, token: string, name: string): Promise<boolean> {
  try {
    await knex.transaction(async (trx) => {
      await trx('numseq').insert({ name, next_value: 1 });
      if (!(await store.complete(trx, token, response(1)))) throw new Error('lost ownership');
    });
    return true;
  } catch (err) {
    if ((err as Error).message === 'lost ownership') return false;
    throw err;
  }
}

async function postings(name: string): Promise<number> {
  const [row] = await one('numseq').where({ name }).count({ n: '*' });
  return Number((row as { n: unknown }).n);
}

test('a live owner keeps its claim; once its heartbeat is stale the claim is taken over at once, and the old owner\'s late completion rolls its posting back', async () => {
  const a = await processOn(one, `a-${randomUUID()}`);
  const b = await processOn(two, `b-${randomUUID()}`);
  const request = { scope, key: `k-${randomUUID()}`, fingerprint: 'f1' };
  const claimA = await a.store.claim(request);
  assert.equal(claimA.kind, 'claimed');
  const row = await one('idmkey').where({ idem_key: request.key }).first();
  assert.equal(row.owner_instance, a.heartbeat.identity.instanceId);
  assert.equal(row.owner_boot, a.heartbeat.identity.bootId);

  // A beats: its claim is in flight for B (the lease is a minute).
  assert.equal((await b.store.claim(request)).kind, 'in_flight');
  // A falls silent: its last beat is older than 3 of its 200 ms beats.
  await one('insthb').where({ instance_id: a.heartbeat.identity.instanceId }).update({ last_seen: toDbTime(db.engine, new Date(Date.now() - 700)) });
  const claimB = await b.store.claim(request);
  assert.equal(claimB.kind, 'claimed', 'taken over without waiting for the lease');
  assert.ok(claimB.kind === 'claimed' && claimB.takeover);
  assert.equal((await one('idmkey').where({ idem_key: request.key }).first()).owner_instance, b.heartbeat.identity.instanceId);

  // A was not dead after all: its completion is conditional and its posting rolls back.
  const name = `P-${request.key}`.slice(0, 60);
  assert.equal(await post(one, a.store, (claimA as { token: string }).token, name), false, 'the old owner lost the key');
  assert.equal(await postings(name), 0, 'the old owner\'s posting rolled back');
  assert.equal(await post(two, b.store, (claimB as { token: string }).token, name), true);
  assert.equal(await postings(name), 1, 'posted exactly once');
  const done = await a.store.claim(request);
  assert.equal(done.kind, 'completed');
});

// SQLite admits one writer for the whole file, so a takeover cannot interleave with an uncommitted
// completion; and better-sqlite3 waits for the write lock synchronously, which in ONE process would
// block the event loop the holder needs to commit. The interleaving exists on server engines only.
test('a completion written but not yet committed wins over a takeover racing it: the taker waits and replays', { skip: TEST_ENGINE === 'sqlite' && 'SQLite serialises writers: no interleaving to race' }, async () => {
  const a = await processOn(one, `a-${randomUUID()}`);
  const b = await processOn(two, `b-${randomUUID()}`);
  const request = { scope, key: `k-${randomUUID()}`, fingerprint: 'f1' };
  const claimA = await a.store.claim(request);
  assert.equal(claimA.kind, 'claimed');
  const name = `R-${request.key}`.slice(0, 60);
  // A is called gone (another boot now runs under its name) while it is still posting.
  await two('insthb').where({ instance_id: a.heartbeat.identity.instanceId }).update({ boot_id: randomUUID() });
  let releaseCommit!: () => void;
  const commitGate = new Promise<void>((r) => (releaseCommit = r));
  let completed!: () => void;
  const completionWritten = new Promise<void>((r) => (completed = r));
  const posting = one.transaction(async (trx) => {
    await trx('numseq').insert({ name, next_value: 1 });
    assert.equal(await a.store.complete(trx, (claimA as { token: string }).token, response(1)), true);
    completed();
    await commitGate;
  });
  await completionWritten;
  const racing = b.store.claim(request);
  await new Promise((r) => setTimeout(r, 300));
  releaseCommit();
  await posting;
  const claimB = await racing;
  assert.equal(claimB.kind, 'completed', `the taker finds the recorded answer (got ${claimB.kind})`);
  assert.equal(await postings(name), 1, 'posted exactly once');
});

test('a restarted instance frees the claims its previous boot left in flight, and only those', async () => {
  const instanceId = `r-${randomUUID()}`;
  const first = await processOn(one, instanceId);
  const other = await processOn(two, `o-${randomUUID()}`);
  const mine = { scope, key: `k-${randomUUID()}`, fingerprint: 'f1' };
  const theirs = { scope, key: `k-${randomUUID()}`, fingerprint: 'f1' };
  assert.equal((await first.store.claim(mine)).kind, 'claimed');
  assert.equal((await other.store.claim(theirs)).kind, 'claimed');
  // The process dies; the same instance starts again (a new boot).
  const second = await processOn(one, instanceId);
  assert.equal(second.freed, 1);
  assert.equal(await one('idmkey').where({ idem_key: mine.key }).first(), undefined, 'the dead boot\'s claim is gone');
  assert.equal((await one('idmkey').where({ idem_key: theirs.key }).first()).state, 'in_flight', 'another live instance keeps its claim');
  assert.equal((await second.store.claim(mine)).kind, 'claimed', 'the retry claims at once');
  // Even a claim the new boot did not free at start (written by the old boot later, e.g. a late
  // statement) is gone for everyone: that instance name runs another boot now.
  const late = { scope, key: `k-${randomUUID()}`, fingerprint: 'f1' };
  assert.equal((await first.store.claim(late)).kind, 'claimed');
  assert.equal((await other.store.claim(late)).kind, 'claimed');
});
