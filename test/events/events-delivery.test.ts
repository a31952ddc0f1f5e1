/**
 * Change detection and signed delivery end to end: a real receiver on loopback (the development
 * switch on) verifies every request with the standardwebhooks library. Detection and delivery
 * are driven cycle by cycle (detectNow / deliverNow) under a settable clock.
 */
import test, { after, before, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import { startTestApp, type TestApp } from '../support/app';
import { installEvents, exampleBody, PUBLIC_DOC, type EventsHarness, emptyWebhookTables } from '../support/events';
import type { LoopbackServer } from '../support/net';
import { startWebhookReceiver, type ReceivedWebhook as Received } from '../support/webhook-receiver';
import { RETRY_DELAYS_MS, RETRY_WINDOW_MS } from '../../src/events/schedule';
import { Events } from '../../src/events';

let t: TestApp;
let h: EventsHarness;
let receiver: LoopbackServer;
let base: string;
const received: Received[] = [];
/** What the receiver answers next (status, headers); default 204. */
let answer: { status: number; headers?: Record<string, string> } = { status: 204 };

before(async () => {
  t = await startTestApp();
  receiver = await startWebhookReceiver(received, () => answer);
  base = receiver.url;
});
after(async () => {
  await receiver.close();
  await t.close();
});
beforeEach(async () => {
  received.length = 0;
  answer = { status: 204 };
  await emptyWebhookTables(t);
  h = installEvents(t, { allowPrivate: true, start: new Date(Date.now() - 5_000) });
});

async function endpoint(eventTypes: string[], key = t.adminKey): Promise<{ id: string; secret: string }> {
  const res = await t.post('/api/v3/webhook-endpoints', { url: `${base}/hook`, eventTypes }, key);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Moves the clock past now (so detection's window covers what was just written). */
function catchUp(): void {
  h.clock.set(new Date(Date.now() + 2_000));
}

function verify(secret: string, r: Received): any {
  return new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });
}

/** Signature check without the library's clock-skew check (the fake clock is a day ahead). */
function signedWith(secret: string, r: Received): boolean {
  const expected = new Webhook(secret).sign(String(r.headers['webhook-id']), new Date(Number(r.headers['webhook-timestamp']) * 1000), r.body);
  return String(r.headers['webhook-signature']).split(' ').includes(expected);
}

const ajv = new Ajv2020({ strict: false, validateFormats: true });
addFormats(ajv);
ajv.addSchema({ ...PUBLIC_DOC, $id: 'contract' });

/** The body matches the webhooks section of the contract (the payload schema of its type). */
function assertContractPayload(r: Received): void {
  const hook = PUBLIC_DOC.webhooks[r.json.type];
  assert.ok(hook, `the contract documents ${r.json.type}`);
  const ref: string = hook.post.requestBody.content['application/json'].schema.$ref;
  const validate = ajv.getSchema(`contract${ref}`)!;
  assert.ok(validate(r.json), `${r.json.type}: ${ajv.errorsText(validate.errors)}`);
}

test('a row changed directly in the database is delivered signed, as accounting_system, with the user stamp', async () => {
  const ep = await endpoint(['payable_invoice.updated', 'payable_invoice.created']);
  const row = await t.knex('acpinv').orderBy('recnum').first();
  await t.knex('acpinv').where({ _idnum: row._idnum }).update({ dscrpt: 'changed at the desk', updusr: 'JSMITH' });
  catchUp();
  const d = await h.events.detectNow();
  assert.equal(d.ran, true);
  assert.deepEqual(d.kinds, ['payable_invoice']);
  assert.equal(d.queued, 1);
  const cycle = await h.events.deliverNow();
  assert.equal(cycle.succeeded, 1);
  assert.equal(received.length, 1);
  const r = received[0]!;
  const body = verify(ep.secret, r);
  assertContractPayload(r);
  assert.equal(body.type, 'payable_invoice.updated');
  assert.equal(body.data.entity, 'payable_invoice');
  assert.equal(body.data.source, 'accounting_system');
  assert.equal(body.data.changedBy, 'JSMITH');
  assert.equal(body.data.record.id, String(row._idnum).toLowerCase());
  assert.equal(body.data.record.recordNumber, row.recnum);
  assert.match(String(r.headers['webhook-id']), /^evt_[0-9a-f]{32}$/);
  assert.match(String(r.headers['webhook-signature']), /^v1,/);
  assert.ok(Math.abs(Number(r.headers['webhook-timestamp']) - h.clock.now.getTime() / 1000) < 2);
  // The log records the attempt.
  const log = await t.post('/api/v3/webhook-deliveries/query', { endpointId: ep.id }, t.adminKey);
  assert.equal(log.body.data[0].status, 'succeeded');
  assert.equal(log.body.data[0].attemptLog[0].statusCode, 204);
});

test('a row inserted directly is a created event; a kind nobody subscribes to is not read', async () => {
  await endpoint(['purchase_order.created']);
  const src = await t.knex('pchord').orderBy('recnum').first();
  const { _idnum, recnum, insdte, upddte, ...rest } = src;
  void _idnum, void insdte, void upddte;
  const max = await t.knex('pchord').max<{ m: number }[]>({ m: 'recnum' });
  await t.knex('pchord').insert({ ...rest, recnum: Number(max[0]!.m) + 1, ordnum: 'DESK-1', insusr: 'MARY', updusr: 'MARY' });
  await t.knex('acpinv').update({ dscrpt: 'not subscribed' }).where('recnum', recnum);
  catchUp();
  const d = await h.events.detectNow();
  assert.deepEqual(d.kinds, ['purchase_order']);
  assert.equal(d.queued, 1);
  await h.events.deliverNow();
  assert.equal(received.length, 1);
  assert.equal(received[0]!.json.type, 'purchase_order.created');
  assertContractPayload(received[0]!);
  assert.equal(received[0]!.json.data.changedBy, 'MARY');
  assert.equal(received[0]!.json.data.record.orderNumber, 'DESK-1');
});

test('a change made through the API is delivered with source api; ids are stable (a re-detected window queues nothing)', async () => {
  const ep = await endpoint(['payable_invoice.created', 'ledger_transaction.created']);
  const res = await t.post('/api/v3/ap-invoices', exampleBody('postApInvoice'));
  assert.equal(res.status, 200, res.text);
  catchUp();
  const d = await h.events.detectNow();
  assert.equal(d.queued, 2, 'the invoice and its journal');
  await h.events.deliverNow();
  const types = received.map((r) => r.json.type).sort();
  assert.deepEqual(types, ['ledger_transaction.created', 'payable_invoice.created']);
  for (const r of received) {
    verify(ep.secret, r);
    assertContractPayload(r);
    assert.equal(r.json.data.source, 'api');
    assert.match(r.json.data.changedBy, /^api:/);
  }
  const invoice = received.find((r) => r.json.type === 'payable_invoice.created')!;
  assert.equal(invoice.json.data.record.id, res.body.document.id);

  // A restart that re-reads the same window (cursor moved back) produces the same ids: nothing new.
  await t.knex('whkcur').update({ cursor: h.events.store.t(new Date(Date.now() - 60_000)) });
  const again = await h.events.detectNow();
  assert.equal(again.changes >= 2, true);
  assert.equal(again.queued, 0);
});

test('retries follow the schedule under a fake clock (Retry-After honoured), and a restart mid-way loses nothing', async () => {
  const ep = await endpoint(['payable_invoice.updated']);
  answer = { status: 503 };
  const sent = await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, t.adminKey);
  const id = sent.body.id;
  const start = h.clock.now.getTime();
  let events: Events = h.events;
  const times: number[] = [];
  for (let attempt = 1; attempt <= RETRY_DELAYS_MS.length + 1; attempt++) {
    const row = await t.knex('whkdlv').where({ id }).first();
    if (attempt > 1) {
      // Not due a millisecond early.
      const next = new Date(row.next_attempt_at instanceof Date ? row.next_attempt_at : String(row.next_attempt_at).replace(' ', 'T') + 'Z').getTime();
      h.clock.set(new Date(next - 1));
      assert.equal((await events.deliverNow()).claimed, 0, `attempt ${attempt} is not sent early`);
      h.clock.set(new Date(next));
    }
    if (attempt === 5) {
      // Restart: a new process (new worker id, same database) carries on.
      events = new Events({ knex: t.knex, engine: t.engine, keys: t.services.keys, secrets: t.services.secrets, audit: t.services.audit, logger: t.services.logger, config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: true, webhookTimeoutMs: 2000 }, clock: () => h.clock.now, random: () => 0.5 });
    }
    if (attempt === 3) answer = { status: 503, headers: { 'Retry-After': '3600' } };
    else answer = { status: 503 };
    const c = await events.deliverNow();
    assert.equal(c.claimed, 1, `attempt ${attempt}`);
    times.push(h.clock.now.getTime() - start);
  }
  // Delays: the schedule, except after attempt 3 where Retry-After (1 h) beat 30 min.
  const gaps = times.slice(1).map((x, i) => x - times[i]!);
  const expected = RETRY_DELAYS_MS.map((ms, i) => (i === 2 ? 3_600_000 : ms));
  assert.deepEqual(gaps, expected.map((ms, i) => Math.min(ms, start + RETRY_WINDOW_MS - (start + times[i]!))));
  const row = await t.knex('whkdlv').where({ id }).first();
  assert.equal(row.status, 'failed');
  assert.equal(Number(row.attempts), 10);
  assert.equal(received.length, 10);
  assert.ok(times[9]! <= RETRY_WINDOW_MS, 'every attempt within three days');
  // The same webhook-id on every attempt, a fresh timestamp on each.
  assert.equal(new Set(received.map((r) => r.headers['webhook-id'])).size, 1);
  assert.equal(new Set(received.map((r) => r.headers['webhook-timestamp'])).size, 10);
  const attempts = await t.knex('whkatt').where({ delivery_id: id }).orderBy('attempt');
  assert.deepEqual(attempts.map((a: any) => Number(a.attempt)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

  // Resend: queued again with the same event id.
  answer = { status: 200 };
  const resent = await t.post(`/api/v3/webhook-deliveries/${id}/resend`, {}, t.adminKey);
  assert.equal(resent.body.status, 'pending');
  await events.deliverNow();
  assert.equal((await t.knex('whkdlv').where({ id }).first()).status, 'succeeded');
  assert.equal(received.at(-1)!.headers['webhook-id'], received[0]!.headers['webhook-id']);
});

test('a claim held by a process that died expires; two workers never send the same attempt', async () => {
  const ep = await endpoint(['payable_invoice.updated']);
  for (let i = 0; i < 6; i++) await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, t.adminKey);
  // A dead worker claimed one delivery.
  const dead = await h.events.store.claimDue('dead-worker', h.clock.now, new Date(h.clock.now.getTime() + 60_000), 1);
  assert.equal(dead.length, 1);
  const other = new Events({ knex: t.knex, engine: t.engine, keys: t.services.keys, secrets: t.services.secrets, audit: t.services.audit, logger: t.services.logger, config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: true, webhookTimeoutMs: 2000 }, clock: () => h.clock.now });
  const [a, b] = await Promise.all([h.events.deliverNow(), other.deliverNow()]);
  assert.equal(a.claimed + b.claimed, 5);
  assert.equal(received.length, 5);
  h.clock.advance(61_000);
  await other.deliverNow();
  assert.equal(received.length, 6);
  assert.equal(new Set(received.map((r) => r.headers['webhook-id'])).size, 6, 'each event sent once');
});

test('410 disables the endpoint; a redirect is a failure and is not followed', async () => {
  const ep = await endpoint(['payable_invoice.updated']);
  answer = { status: 302, headers: { Location: `${base}/elsewhere` } };
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, t.adminKey);
  await h.events.deliverNow();
  assert.equal(received.length, 1, 'the Location was not followed');
  const d1 = (await t.post('/api/v3/webhook-deliveries/query', { endpointId: ep.id }, t.adminKey)).body.data[0];
  assert.equal(d1.status, 'pending');
  assert.equal(d1.lastStatusCode, 302);
  answer = { status: 410 };
  h.clock.advance(RETRY_DELAYS_MS[0]!);
  await h.events.deliverNow();
  const e = (await t.post('/api/v3/webhook-endpoints/query', {}, t.adminKey)).body.data.find((x: any) => x.id === ep.id);
  assert.equal(e.status, 'disabled');
  const d2 = (await t.post('/api/v3/webhook-deliveries/query', { endpointId: ep.id }, t.adminKey)).body.data[0];
  assert.equal(d2.status, 'failed');
  assert.equal(d2.attemptLog[1].outcome, 'gone');
});

test('during a rotation both secrets sign; after 24 hours only the new one', async () => {
  const ep = await endpoint(['payable_invoice.updated']);
  const rot = (await t.post(`/api/v3/webhook-endpoints/${ep.id}/rotate-secret`, {}, t.adminKey)).body;
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, t.adminKey);
  await h.events.deliverNow();
  const r = received[0]!;
  assert.equal(String(r.headers['webhook-signature']).split(' ').length, 2);
  verify(ep.secret, r);
  verify(rot.secret, r);
  assertContractPayload(r);
  h.clock.advance(24 * 3_600_000 + 1);
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, t.adminKey);
  await h.events.deliverNow();
  const r2 = received[1]!;
  assert.equal(String(r2.headers['webhook-signature']).split(' ').length, 1);
  assert.equal(signedWith(rot.secret, r2), true);
  assert.equal(signedWith(ep.secret, r2), false);
});

test('when the owner key is disabled or revoked its endpoints are paused and nothing is sent', async () => {
  const { key, record } = await t.services.keys.create('events owner', 'admin');
  const ep = await endpoint(['payable_invoice.updated'], key);
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, key);
  await t.services.keys.setStateById(record.id, 'revoked', 'left the company');
  const row = await t.knex('acpinv').orderBy('recnum').first();
  await t.knex('acpinv').where({ _idnum: row._idnum }).update({ dscrpt: 'after revocation', updusr: 'JSMITH' });
  catchUp();
  const d = await h.events.detectNow();
  assert.equal(d.pausedEndpoints, 1);
  assert.equal(d.queued, 0);
  await h.events.deliverNow();
  assert.equal(received.length, 0);
  const e = await t.knex('whkept').where({ id: ep.id }).first();
  assert.equal(e.state, 'paused');
  assert.match(e.state_reason, /revoked/);
  assert.ok((await h.events.store.auditLog(ep.id)).some((a) => a.action === 'paused'));
});

test('the delivery log is purged after 30 days (attempts too): younger rows stay, a month-old pending one of a paused endpoint goes', async () => {
  const ep = await endpoint(['payable_invoice.updated']);
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, t.adminKey);
  await h.events.deliverNow();
  const old = (await t.knex('whkdlv').first()).id;
  h.clock.advance(20 * 24 * 3_600_000);
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, t.adminKey);
  await h.events.deliverNow();
  // A delivery of an endpoint paused for the whole month is purged too.
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/update`, { paused: true }, t.adminKey);
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, t.adminKey);
  const stuck = (await t.knex('whkdlv').where({ status: 'pending' }).first()).id;
  h.clock.advance(10 * 24 * 3_600_000 + 1_000);
  const purged = await h.events.delivery.purge(h.clock.now);
  assert.equal(purged, 1);
  h.clock.advance(20 * 24 * 3_600_000);
  assert.equal(await h.events.delivery.purge(h.clock.now), 2, 'the younger one and the pending one, now both past 30 days');
  assert.equal(await t.knex('whkdlv').where({ id: stuck }).first(), undefined);
  h.clock.advance(-20 * 24 * 3_600_000);
  assert.equal(await t.knex('whkdlv').where({ id: old }).first(), undefined);
  assert.equal((await t.knex('whkatt').where({ delivery_id: old })).length, 0);
});

test('one detector at a time: a second process does not get the lease until it expires or is released', async () => {
  await endpoint(['payable_invoice.updated']);
  const other = new Events({ knex: t.knex, engine: t.engine, keys: t.services.keys, secrets: t.services.secrets, audit: t.services.audit, logger: t.services.logger, config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: true, webhookTimeoutMs: 2000 }, clock: () => h.clock.now });
  assert.equal((await h.events.detectNow()).ran, true);
  assert.equal((await other.detectNow()).ran, false);
  h.clock.advance(600_001);
  assert.equal((await other.detectNow()).ran, true);
  assert.equal((await h.events.detectNow()).ran, false);
  await other.stop();
  assert.equal((await h.events.detectNow()).ran, true);
});

test('a restart neither loses nor repeats a window; a cycle that fails half-way leaves the cursor and the outbox as they were', async () => {
  await endpoint(['payable_invoice.updated']);
  const rows = await t.knex('acpinv').orderBy('recnum').limit(3);
  const change = async (i: number, text: string) => {
    await t.knex('acpinv').where({ _idnum: rows[i]._idnum }).update({ dscrpt: text, updusr: 'JSMITH', upddte: h.events.store.t(new Date(Date.now() - 1_000 + i)) });
  };
  await change(0, 'first');
  catchUp();
  assert.equal((await h.events.detectNow()).queued, 1);

  // A change while the process is down; then a new process (new holder, lease released by stop).
  await h.events.stop();
  await change(1, 'while down');
  h.clock.advance(1_000);
  await t.knex('acpinv').where({ _idnum: rows[1]._idnum }).update({ upddte: h.events.store.t(new Date(h.clock.now.getTime() - 500)) });
  const restarted = installEvents(t, { allowPrivate: true, start: h.clock.now });
  const second = await restarted.events.detectNow();
  assert.equal(second.ran, true);
  assert.equal(second.queued, 1, 'the change made while down, not the first one again');

  // A cycle that fails half-way (the outbox insert throws) moves nothing; the next one queues it.
  await t.knex('acpinv').where({ _idnum: rows[2]._idnum }).update({ dscrpt: 'crash', updusr: 'JSMITH', upddte: restarted.events.store.t(new Date(restarted.clock.now.getTime() + 500)) });
  restarted.clock.advance(1_000);
  const cursorBefore = (await restarted.events.store.cursors()).get('payable_invoice')!.getTime();
  const store = restarted.events.store;
  const enqueue = store.enqueue.bind(store);
  store.enqueue = async () => {
    throw new Error('process killed');
  };
  await assert.rejects(restarted.events.detectNow(), /process killed/);
  store.enqueue = enqueue;
  assert.equal((await store.cursors()).get('payable_invoice')!.getTime(), cursorBefore);
  assert.equal((await t.knex('whkdlv')).length, 2);
  const third = await restarted.events.detectNow();
  assert.equal(third.queued, 1);
  await restarted.events.deliverNow();
  assert.deepEqual(received.map((r) => r.json.data.record.description).sort(), ['crash', 'first', 'while down']);
});

test('an owner key disabled after an event was queued: the delivery worker pauses the endpoint and sends nothing', async () => {
  const { key, record } = await t.services.keys.create('events owner 2', 'admin');
  const ep = await endpoint(['payable_invoice.updated'], key);
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/test`, {}, key);
  await t.services.keys.setStateById(record.id, 'disabled', 'holiday');
  await h.events.deliverNow();
  assert.equal(received.length, 0);
  assert.equal((await t.knex('whkept').where({ id: ep.id }).first()).state, 'paused');
  const d = await t.knex('whkdlv').where({ endpoint_id: ep.id }).first();
  assert.equal(d.status, 'pending', 'kept for when the endpoint is resumed');
  assert.equal(Number(d.attempts), 0);
  // Re-enabled and resumed: sent.
  await t.services.keys.setStateById(record.id, 'active', null);
  await t.post(`/api/v3/webhook-endpoints/${ep.id}/update`, { paused: false }, t.adminKey);
  await h.events.deliverNow();
  assert.equal(received.length, 1);
});
