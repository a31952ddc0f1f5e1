/**
 * A resent delivery gets a whole new retry window (spec Events rule 8; decisions 0027, 0428): after
 * a delivery failed through its schedule, a resend (one delivery, or every failed one since a time)
 * is retried on the schedule again from its first delay, not sent once and failed for good. The
 * delivery log keeps counting every attempt (`attempts`, `attemptLog`). A real receiver on loopback;
 * delivery driven cycle by cycle under the harness's settable clock (no jitter: random 0.5).
 */
import test, { after, before, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import { startTestApp, type TestApp } from '../support/app';
import { installEvents, type EventsHarness, emptyWebhookTables } from '../support/events';
import type { LoopbackServer } from '../support/net';
import { startWebhookReceiver, type ReceivedWebhook as Received } from '../support/webhook-receiver';
import { RETRY_DELAYS_MS, RETRY_WINDOW_MS } from '../../src/events/schedule';
import { ENDPOINT_DELETED } from '../../src/events/store';
import { backfill } from '../../db/migrations/20261127000428_delivery_window_attempts';

let t: TestApp;
let h: EventsHarness;
let receiver: LoopbackServer;
const received: Received[] = [];
/** What the receiver answers next; default 503 (every attempt fails). */
let answer: { status: number } | Promise<{ status: number }> = { status: 503 };

/** Attempts in one full window: the first, then one after each delay of the schedule. */
const WINDOW_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

before(async () => {
  t = await startTestApp();
  receiver = await startWebhookReceiver(received, () => answer);
});
after(async () => {
  await receiver.close();
  await t.close();
});
beforeEach(async () => {
  received.length = 0;
  answer = { status: 503 };
  await emptyWebhookTables(t);
  h = installEvents(t, { allowPrivate: true, start: new Date(Date.now() - 5_000) });
});

/** A test event queued for a new endpoint: the delivery id. */
async function queuedDelivery(): Promise<{ endpointId: string; deliveryId: string }> {
  const ep = await t.post('/api/v3/webhook-endpoints', { url: `${receiver.url}/hook`, eventTypes: ['payable_invoice.updated'] }, t.adminKey);
  assert.equal(ep.status, 200, ep.text);
  const sent = await t.post(`/api/v3/webhook-endpoints/${ep.body.id}/test`, {}, t.adminKey);
  assert.equal(sent.status, 200, sent.text);
  return { endpointId: ep.body.id, deliveryId: sent.body.id };
}

/** The delivery as the delivery log answers it (HTTP). */
async function logged(endpointId: string, deliveryId: string): Promise<any> {
  const res = await t.post('/api/v3/webhook-deliveries/query', { endpointId }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  const d = res.body.data.find((x: any) => x.id === deliveryId);
  assert.ok(d, 'the delivery is in the log');
  return d;
}

/**
 * Makes the attempts of the delivery while it is pending, each exactly when the log says it is due
 * (and not a millisecond earlier), at most `limit`: the times of the attempts made.
 */
async function attemptWhileDue(endpointId: string, deliveryId: string, limit: number): Promise<number[]> {
  const times: number[] = [];
  while (times.length < limit) {
    const d = await logged(endpointId, deliveryId);
    if (d.status !== 'pending') break;
    const due = new Date(d.nextAttemptAt).getTime();
    if (due > h.clock.now.getTime()) {
      h.clock.set(new Date(due - 1));
      assert.equal((await h.events.deliverNow()).claimed, 0, 'not sent early');
      h.clock.set(new Date(due));
    }
    assert.equal((await h.events.deliverNow()).claimed, 1, `attempt ${times.length + 1} of the window`);
    times.push(h.clock.now.getTime());
  }
  return times;
}

/** The gaps between attempts are the schedule's delays, from its first, inside the window. */
function assertOnSchedule(times: number[], windowStart: number): void {
  const gaps = times.slice(1).map((x, i) => x - times[i]!);
  assert.deepEqual(gaps, RETRY_DELAYS_MS.slice(0, gaps.length).map((ms, i) => Math.min(ms, windowStart + RETRY_WINDOW_MS - times[i]!)));
}

/** The delivery's row and its attempt rows (the database). */
async function stored(deliveryId: string): Promise<{ row: any; attempts: number[] }> {
  const row = await t.knex('whkdlv').where({ id: deliveryId }).first();
  const attempts = (await t.knex('whkatt').where({ delivery_id: deliveryId }).orderBy('attempt')).map((a: any) => Number(a.attempt));
  return { row, attempts };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Fails the delivery through its whole first window. */
async function failedForGood(endpointId: string, deliveryId: string): Promise<void> {
  const times = await attemptWhileDue(endpointId, deliveryId, WINDOW_ATTEMPTS + 1);
  assert.equal(times.length, WINDOW_ATTEMPTS);
  const d = await logged(endpointId, deliveryId);
  assert.equal(d.status, 'failed');
  assert.equal(d.attempts, WINDOW_ATTEMPTS);
}

test('a resent delivery that had failed for good is retried on the whole schedule again, then succeeds; the log counts every attempt', async () => {
  const { endpointId, deliveryId } = await queuedDelivery();
  await failedForGood(endpointId, deliveryId);

  h.clock.advance(3_600_000);
  const resentAt = h.clock.now.getTime();
  const resent = await t.post(`/api/v3/webhook-deliveries/${deliveryId}/resend`, {}, t.adminKey);
  assert.equal(resent.status, 200, resent.text);
  assert.equal(resent.body.status, 'pending');
  assert.equal(resent.body.attempts, WINDOW_ATTEMPTS, 'the log keeps the attempts made before the resend');
  assert.equal(new Date(resent.body.nextAttemptAt).getTime(), resentAt, 'due at once');

  // Five more failures, each followed by the schedule's next delay (not failed after the first).
  const failing = await attemptWhileDue(endpointId, deliveryId, 5);
  assert.equal(failing.length, 5, 'still pending after each failed attempt of the new window');
  assert.equal(failing[0], resentAt);
  const d = await logged(endpointId, deliveryId);
  assert.equal(d.status, 'pending');
  assert.equal(d.attempts, WINDOW_ATTEMPTS + 5);
  assert.equal(new Date(d.nextAttemptAt).getTime() - failing[4]!, RETRY_DELAYS_MS[4], 'the fifth delay of the schedule comes next');

  // The sixth attempt of the window succeeds.
  answer = { status: 204 };
  const times = [...failing, ...(await attemptWhileDue(endpointId, deliveryId, WINDOW_ATTEMPTS))];
  assert.equal(times.length, 6);
  assertOnSchedule(times, resentAt);
  const done = await logged(endpointId, deliveryId);
  assert.equal(done.status, 'succeeded');
  assert.equal(done.attempts, WINDOW_ATTEMPTS + 6);
  assert.equal(done.nextAttemptAt, null);
  assert.deepEqual(done.attemptLog.map((a: any) => a.attempt), range(1, WINDOW_ATTEMPTS + 6));
  assert.deepEqual(done.attemptLog.map((a: any) => a.outcome), [...Array(WINDOW_ATTEMPTS + 5).fill('failed'), 'succeeded']);

  const { row, attempts } = await stored(deliveryId);
  assert.equal(row.status, 'succeeded');
  assert.equal(Number(row.attempts), WINDOW_ATTEMPTS + 6);
  assert.deepEqual(attempts, range(1, WINDOW_ATTEMPTS + 6));
  assert.equal(received.length, WINDOW_ATTEMPTS + 6);
  assert.equal(new Set(received.map((r) => r.headers['webhook-id'])).size, 1, 'the same event id on every attempt');
});

test('resend-failed opens a whole new window for each delivery: failed again only after the full schedule, and a second resend-failed succeeds', async () => {
  const { endpointId, deliveryId } = await queuedDelivery();
  const createdAt = h.clock.now;
  await failedForGood(endpointId, deliveryId);

  h.clock.advance(3_600_000);
  const resentAt = h.clock.now.getTime();
  const resent = await t.post('/api/v3/webhook-deliveries/resend-failed', { since: new Date(createdAt.getTime() - 60_000).toISOString(), endpointId }, t.adminKey);
  assert.equal(resent.status, 200, resent.text);
  assert.equal(resent.body.resent, 1);

  // The whole schedule again: ten attempts over the new three-day window, then failed.
  const times = await attemptWhileDue(endpointId, deliveryId, WINDOW_ATTEMPTS + 1);
  assert.equal(times.length, WINDOW_ATTEMPTS, 'a full window of attempts after the resend');
  assert.equal(times[0], resentAt);
  assertOnSchedule(times, resentAt);
  assert.ok(times.at(-1)! - resentAt <= RETRY_WINDOW_MS, 'inside the new window');
  const failed = await logged(endpointId, deliveryId);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.attempts, 2 * WINDOW_ATTEMPTS);
  assert.equal(failed.nextAttemptAt, null);

  // Resent again: the second attempt of that window succeeds.
  h.clock.advance(3_600_000);
  const again = await t.post('/api/v3/webhook-deliveries/resend-failed', { since: new Date(createdAt.getTime() - 60_000).toISOString() }, t.adminKey);
  assert.equal(again.body.resent, 1);
  const first = await attemptWhileDue(endpointId, deliveryId, 1);
  assert.equal((await logged(endpointId, deliveryId)).status, 'pending', 'retried after its first failure');
  answer = { status: 200 };
  const second = await attemptWhileDue(endpointId, deliveryId, WINDOW_ATTEMPTS);
  assert.equal(second.length, 1);
  assert.equal(second[0]! - first[0]!, RETRY_DELAYS_MS[0], 'the first delay of the schedule');
  const done = await logged(endpointId, deliveryId);
  assert.equal(done.status, 'succeeded');
  assert.equal(done.attempts, 2 * WINDOW_ATTEMPTS + 2);

  const { row, attempts } = await stored(deliveryId);
  assert.equal(row.status, 'succeeded');
  assert.equal(Number(row.attempts), 2 * WINDOW_ATTEMPTS + 2);
  assert.deepEqual(attempts, range(1, 2 * WINDOW_ATTEMPTS + 2));
  assert.equal(received.length, 2 * WINDOW_ATTEMPTS + 2);
});

test('a resend while an attempt is in flight: no second worker sends beside it, and its answer does not undo the resend', async () => {
  const { endpointId, deliveryId } = await queuedDelivery();
  // The receiver holds the first attempt's answer until the test lets it go (then: delivered).
  let release!: () => void;
  answer = new Promise((resolve) => (release = () => resolve({ status: 204 })));
  const inFlight = h.events.deliverNow();
  while (received.length === 0) await new Promise((r) => setTimeout(r, 5));

  // Within the claim (it outlives an attempt's timeout: delivery.ts).
  h.clock.advance(1_000);
  const resentAt = h.clock.now.getTime();
  const resent = await t.post(`/api/v3/webhook-deliveries/${deliveryId}/resend`, {}, t.adminKey);
  assert.equal(resent.status, 200, resent.text);
  assert.equal((await h.events.deliverNow()).claimed, 0, 'the attempt in flight keeps its claim: nothing is sent beside it');

  release();
  answer = { status: 204 };
  assert.equal((await inFlight).succeeded, 1);
  // The attempt is logged; the resend stands: pending, due at once, its window counting from the next attempt.
  const after = await logged(endpointId, deliveryId);
  assert.equal(after.status, 'pending', 'the resend is not undone by the answer of an attempt made before it');
  assert.equal(after.attempts, 1);
  assert.equal(new Date(after.nextAttemptAt).getTime(), resentAt);
  const { row } = await stored(deliveryId);
  assert.equal(Number(row.attempts_at_window_start), 1);
  assert.equal(row.claimed_by, null);

  // The resend's own attempt: delivered again, the second of the log.
  assert.equal((await h.events.deliverNow()).succeeded, 1);
  const done = await logged(endpointId, deliveryId);
  assert.equal(done.status, 'succeeded');
  assert.deepEqual(done.attemptLog.map((a: any) => a.attempt), [1, 2]);
  assert.equal(received.length, 2);
});

test('the migration gives a delivery resent before it its full window: the attempts recorded before its window started', async () => {
  const { endpointId, deliveryId } = await queuedDelivery();
  await failedForGood(endpointId, deliveryId);
  // Another delivery, never resent (delivered at its first attempt).
  const other = (await queuedDelivery()).deliveryId;
  answer = { status: 204 };
  assert.equal((await h.events.deliverNow()).succeeded, 1);
  answer = { status: 503 };
  h.clock.advance(3_600_000);
  assert.equal((await t.post(`/api/v3/webhook-deliveries/${deliveryId}/resend`, {}, t.adminKey)).status, 200);
  // As the rows stood before the migration added the column.
  await t.knex('whkdlv').update({ attempts_at_window_start: 0 });
  await backfill(t.knex);
  const rows = await t.knex('whkdlv').whereIn('id', [deliveryId, other]).select('id', 'attempts', 'attempts_at_window_start');
  const byId = new Map(rows.map((r: any) => [r.id.toLowerCase(), r]));
  assert.equal(Number(byId.get(deliveryId)!.attempts_at_window_start), WINDOW_ATTEMPTS, 'resent: the attempts of its first window');
  assert.equal(Number(byId.get(other)!.attempts_at_window_start), 0, 'never resent: from its creation');
  // Its new window is the whole schedule.
  const times = await attemptWhileDue(endpointId, deliveryId, 3);
  assert.equal(times.length, 3);
  assert.equal((await logged(endpointId, deliveryId)).status, 'pending');
});

test('the migration\'s backfill compiles for SQL Server: one correlated UPDATE', async () => {
  const mssql = knexFactory({ client: 'mssql' });
  try {
    assert.equal(
      backfill(mssql).toQuery(),
      'update [whkdlv] set [attempts_at_window_start] = (select count(*) from [whkatt] as [a] where [a].[delivery_id] = [whkdlv].[id] and [a].[attempted_at] < [whkdlv].[window_start]) where [window_start] > [created_at];select @@rowcount',
    );
  } finally {
    await mssql.destroy();
  }
});

test('deleting an endpoint fails its pending deliveries; resending one answers 404 WEBHOOK_ENDPOINT_NOT_FOUND, resend-failed counts none of them', async () => {
  // Another endpoint's delivery failed through its window: resend-failed sends it again.
  const kept = await queuedDelivery();
  await failedForGood(kept.endpointId, kept.deliveryId);
  const gone = await queuedDelivery();
  assert.equal((await h.events.deliverNow()).claimed, 1);
  assert.equal((await logged(gone.endpointId, gone.deliveryId)).status, 'pending', 'a retry is due');

  const deleted = await t.post(`/api/v3/webhook-endpoints/${gone.endpointId}/delete`, {}, t.adminKey);
  assert.equal(deleted.status, 200, deleted.text);
  const d = await logged(gone.endpointId, gone.deliveryId);
  assert.deepEqual([d.status, d.lastError, d.nextAttemptAt, d.attempts], ['failed', ENDPOINT_DELETED, null, 1]);
  assert.equal(d.attemptLog[0].error, 'HTTP 503', 'the attempt log keeps what the attempt got');
  assert.equal((await stored(gone.deliveryId)).row.status, 'failed');
  assert.deepEqual((await t.services.audit.flush(), await h.events.store.auditLog(gone.endpointId)).at(-1)!.detail, { failedDeliveries: 1 });

  const resent = await t.post(`/api/v3/webhook-deliveries/${gone.deliveryId}/resend`, {}, t.adminKey);
  assert.equal(resent.status, 404, resent.text);
  assert.equal(resent.headers['x-error-code'], 'WEBHOOK_ENDPOINT_NOT_FOUND');
  const named = await t.post('/api/v3/webhook-deliveries/resend-failed', { since: '2000-01-01T00:00:00Z', endpointId: gone.endpointId }, t.adminKey);
  assert.equal(named.status, 404);
  assert.equal(named.headers['x-error-code'], 'WEBHOOK_ENDPOINT_NOT_FOUND');
  const all = await t.post('/api/v3/webhook-deliveries/resend-failed', { since: '2000-01-01T00:00:00Z' }, t.adminKey);
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(all.body, { resent: 1 }, "the other endpoint's delivery only");
  assert.equal((await stored(gone.deliveryId)).row.status, 'failed');
  assert.equal((await stored(kept.deliveryId)).row.status, 'pending');

  // Nothing is ever attempted for it again.
  h.clock.advance(RETRY_WINDOW_MS);
  while ((await h.events.deliverNow()).claimed > 0);
  assert.deepEqual((await stored(gone.deliveryId)).attempts, [1]);
});

test('an attempt in flight when its endpoint is deleted: a failure leaves the delivery failed (not pending for ever), a success succeeded', async () => {
  for (const outcome of [503, 204]) {
    await emptyWebhookTables(t);
    received.length = 0;
    let release!: (a: { status: number }) => void;
    answer = new Promise((resolve) => (release = resolve));
    const { endpointId, deliveryId } = await queuedDelivery();
    const cycle = h.events.deliverNow();
    for (let i = 0; i < 200 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(received.length, 1, 'the attempt reached the receiver');
    assert.equal((await t.post(`/api/v3/webhook-endpoints/${endpointId}/delete`, {}, t.adminKey)).status, 200);
    release({ status: outcome });
    await cycle;
    const d = await logged(endpointId, deliveryId);
    assert.deepEqual(d.attemptLog.map((a: any) => a.outcome), [outcome === 204 ? 'succeeded' : 'failed']);
    if (outcome === 204) assert.deepEqual([d.status, d.nextAttemptAt], ['succeeded', null]);
    else assert.deepEqual([d.status, d.nextAttemptAt, d.lastError], ['failed', null, ENDPOINT_DELETED]);
    assert.equal((await stored(deliveryId)).row.status, d.status);
  }
});
