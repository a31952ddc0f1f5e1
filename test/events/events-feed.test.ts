/**
 * The pull feed of change events (issue 28) in one process, through HTTP and the database:
 * feed subscriptions managed like webhook endpoints; POST /events/query answering the same
 * documents the webhooks carry, oldest first, each once, from an opaque cursor; the query language
 * (filters, select); the rules of delivery applied to the reading key (scopes, PII, payroll, a
 * switched-off key, a switched-off feed owner); expired and foreign cursors; long polling; the
 * 30-day retention and the 30-day unread pause. Detection runs cycle by cycle under a settable
 * clock; rows are stamped explicitly (an UPDATE that sets upddte keeps it).
 *
 * Across processes (restart, two instances, long polling woken by another process):
 * test/events/events-feed-processes.test.ts.
 */
import test, { after, before, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import knexFactory from 'knex';
import { startTestApp, type TestApp } from '../support/app';
import { installEvents, type EventsHarness } from '../support/events';
import { serveOnLoopback } from '../support/net';
import { PII_FIELDS } from '../../src/catalog/pii';
import { FeedStore } from '../../src/events/feed/store';
import { encodeCursor } from '../../src/events/feed/cursor';
import type { SnapshotReader } from '../../src/storage/dialect';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';
import { EVENT_LOG } from '../../src/events/feed/request';
import { resolveFilter } from '../../src/engines/query/filters';
import { Issues } from '../../src/errors/issues';
import { auditEntriesFor } from '../../src/audit/store';

let t: TestApp;
let h: EventsHarness;
/** Detection time of the current round; every round stamps rows just before it. */
let base: number;
const DAY = 24 * 3_600_000;

before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

beforeEach(async () => {
  for (const table of ['evtlog', 'evtfed', 'whkatt', 'whkdlv', 'whkept', 'whkcur', 'whklse']) await t.knex(table).delete();
  await t.knex('evtctr').update({ seq: 0, purged_through: 0 });
  // Past every stamp an earlier test wrote: its changes are not this test's.
  base = Math.max(Date.now(), (h?.clock.now.getTime() ?? 0) + 60_000);
  h = installEvents(t, { start: new Date(base), feedPollMs: 50 });
  h.dns.set('hooks.example.com', ['93.184.215.14']);
});

const query = (body: unknown, key = t.apiKey) => t.post('/api/v3/events/query', body, key);
const adminId = async () => (await t.services.keys.findByKey(t.adminKey))!.id;

async function feed(eventTypes: string[], key = t.adminKey): Promise<any> {
  const res = await t.post('/api/v3/event-feeds', { eventTypes }, key);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Stamps rows of `table` (by record number) as changed by `user` now, then runs one detection cycle after it. */
async function changeAndDetect(changes: Array<[table: string, recnums: number[]]>, user = 'JSMITH') {
  const stamp = new Date(h.clock.now.getTime() + 1_000);
  for (const [table, recnums] of changes) await t.knex(table).whereIn('recnum', recnums).update({ upddte: h.events.store.t(stamp), updusr: user });
  h.clock.set(new Date(stamp.getTime() + 1_000));
  const result = await h.events.detectNow();
  assert.equal(result.ran, true);
  return result;
}

async function firstRecnums(table: string, n: number): Promise<number[]> {
  return (await t.knex(table).orderBy('recnum').limit(n).select('recnum')).map((r: any) => Number(r.recnum));
}

/** Reads the whole feed from `after` in pages of `pageSize`: every event and the last cursor. */
async function readAll(body: Record<string, unknown> = {}, pageSize = 2, key = t.apiKey, from?: string): Promise<{ events: any[]; cursor: string; pages: number }> {
  const events: any[] = [];
  let cursor = from;
  for (let pages = 1; pages < 100; pages++) {
    const res = await query({ ...body, ...(cursor ? { after: cursor } : {}), page: { pageSize } }, key);
    assert.equal(res.status, 200, res.text);
    events.push(...res.body.data);
    assert.equal(res.body.page.pageNumber, 1);
    assert.equal(res.body.page.returnedCount, res.body.data.length);
    cursor = res.body.page.nextCursor;
    if (res.body.page.totalCount <= res.body.page.returnedCount) return { events, cursor: cursor!, pages };
  }
  throw new Error('the feed did not end');
}

test('feeds are managed like webhook endpoints: admin keys only, every change in the audit log, 404 with its code', async () => {
  const refused = await t.post('/api/v3/event-feeds', { eventTypes: ['payable_invoice.created'] }, t.apiKey);
  assert.equal(refused.status, 403);
  assert.equal(refused.headers['x-error-code'], 'FORBIDDEN');

  const f = await feed(['payable_invoice.created', 'payable_invoice.updated']);
  assert.equal(f.status, 'active');
  assert.equal(f.ownerKeyId, await adminId());
  assert.equal(f.lastReadAt, null);
  // Detection of the subscribed kind starts now (no history), as for an endpoint.
  assert.ok((await h.events.store.cursors()).has('payable_invoice'));

  const list = await t.post('/api/v3/event-feeds/query', { status: ['active'] }, t.adminKey);
  assert.equal(list.status, 200, list.text);
  assert.ok(list.body.asOf);
  assert.deepEqual(list.body.data.map((x: any) => x.id), [f.id]);

  const paused = await t.post(`/api/v3/event-feeds/${f.id}/update`, { eventTypes: ['purchase_order.updated'], paused: true }, t.adminKey);
  assert.equal(paused.status, 200, paused.text);
  assert.equal(paused.body.status, 'paused');
  assert.deepEqual(paused.body.eventTypes, ['purchase_order.updated']);
  // Paused, the feed subscribes to nothing yet: detection of its new kind starts when it is resumed.
  assert.ok(!(await h.events.store.cursors()).has('purchase_order'));
  const resumed = await t.post(`/api/v3/event-feeds/${f.id}/update`, { paused: false }, t.adminKey);
  assert.equal(resumed.body.status, 'active');
  assert.ok((await h.events.store.cursors()).has('purchase_order'));
  assert.equal(resumed.body.lastReadAt, h.clock.now.toISOString(), 'resuming counts as a read');

  const del = await t.post(`/api/v3/event-feeds/${f.id}/delete`, {}, t.adminKey);
  assert.deepEqual(del.body, { id: f.id, deleted: true });
  const gone = await t.post(`/api/v3/event-feeds/${f.id}/update`, { paused: false }, t.adminKey);
  assert.equal(gone.status, 404);
  assert.equal(gone.headers['x-error-code'], 'EVENT_FEED_NOT_FOUND');

  // Every change is an entry of the one audit log (a log line too), by the admin key that made it.
  await t.services.audit.flush();
  const audit = await auditEntriesFor(t.knex, 'event-feed', f.id);
  assert.deepEqual(audit.map((a) => a.action), ['event-feed.created', 'event-feed.updated', 'event-feed.updated', 'event-feed.deleted']);
  assert.ok(audit.every((a) => a.actorKeyId === audit[0]!.actorKeyId && a.actorKeyId !== null && a.outcome === 'succeeded'));

  for (const body of [{ eventTypes: ['payroll_record.created'] }, { eventTypes: [] }, { eventTypes: ['payable_invoice.deleted'] }, { eventTypes: ['payable_invoice.created'], url: 'https://x.example.com' }]) {
    const res = await t.post('/api/v3/event-feeds', body, t.adminKey);
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
  }
});

test('the feed lists the same documents the webhooks deliver (same id, type, timestamp and data), oldest first, each once', async () => {
  const ep = await t.post('/api/v3/webhook-endpoints', { url: 'https://hooks.example.com/ap', eventTypes: ['payable_invoice.updated'] }, t.adminKey);
  assert.equal(ep.status, 200, ep.text);
  await feed(['payable_invoice.updated', 'purchase_order.updated']);
  const invoices = await firstRecnums('acpinv', 5);
  const orders = await firstRecnums('pchord', 2);
  await changeAndDetect([['acpinv', invoices.slice(0, 3)]]);
  await changeAndDetect([['pchord', orders], ['acpinv', invoices.slice(3)]]);

  const { events, pages } = await readAll({}, 2);
  assert.equal(events.length, 7);
  // totalCount: the events after the cursor, unfiltered (from the positions) and filtered (counted).
  assert.equal((await query({ page: { pageSize: 2 } })).body.page.totalCount, 7);
  assert.equal((await query({ page: { pageSize: 2 }, filters: { match: { field: 'type', operator: '=', value: 'payable_invoice.updated' } } })).body.page.totalCount, 5);
  assert.ok(pages >= 4, `read in pages of 2 (${pages})`);
  assert.equal(new Set(events.map((e) => e.id)).size, 7, 'no event twice');
  // Oldest first: the log's order, which is detection order.
  const logged = await t.knex('evtlog').orderBy('seq').select('event_id', 'seq');
  assert.deepEqual(events.map((e) => e.id), logged.map((r: any) => r.event_id));
  // First cycle: three invoices; second: the two invoices, then the two orders (kinds in turn).
  assert.deepEqual(events.map((e) => e.type), [...new Array(5).fill('payable_invoice.updated'), 'purchase_order.updated', 'purchase_order.updated']);

  // The webhook outbox holds the AP events with the same ids and the very same bodies.
  const deliveries = await t.knex('whkdlv').select('event_id', 'payload');
  assert.equal(deliveries.length, 5);
  for (const d of deliveries) {
    const item = events.find((e) => e.id === d.event_id);
    assert.ok(item, `${d.event_id} is in the feed`);
    const { id, ...doc } = item;
    assert.deepEqual(doc, JSON.parse(d.payload));
    assert.match(id, /^evt_[0-9a-f]{32}$/);
  }
  const po = events.find((e) => e.type === 'purchase_order.updated');
  assert.equal(po.data.entity, 'purchase_order');
  assert.equal(po.data.source, 'accounting_system');
  assert.equal(po.data.changedBy, 'JSMITH');
  assert.equal(typeof po.data.record.recordNumber, 'number');

  // Nothing new: the cursor gives an empty page and itself again (stable).
  const last = await readAll({}, 2);
  const again = await query({ after: last.cursor });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body.data, []);
  assert.equal(again.body.page.totalCount, 0);
  assert.equal(again.body.page.nextCursor, last.cursor);
  // A kind nobody subscribes to is not kept.
  await changeAndDetect([['srvinv', await firstRecnums('srvinv', 2)]]);
  assert.equal((await query({ after: last.cursor })).body.data.length, 0);
});

test('filters and select are the query language of every /query; bad input is a 400 naming the field', async () => {
  await feed(['payable_invoice.updated', 'purchase_order.updated']);
  await changeAndDetect([['acpinv', await firstRecnums('acpinv', 3)]], 'JSMITH');
  const before = h.clock.now.toISOString();
  await changeAndDetect([['pchord', await firstRecnums('pchord', 2)]], 'api:importer');

  const pos = await query({ filters: { match: { field: 'type', operator: '=', value: 'purchase_order.updated' } } });
  assert.equal(pos.status, 200, pos.text);
  assert.deepEqual(pos.body.data.map((e: any) => e.data.entity), ['purchase_order', 'purchase_order']);
  assert.equal(pos.body.data[0].data.source, 'api');
  // The cursor of a filtered read is past the events that did not match too.
  assert.equal((await query({ after: pos.body.page.nextCursor })).body.data.length, 0);

  const cases: Array<[unknown, number]> = [
    [{ match: { field: 'entity', operator: 'IN', values: ['payable_invoice'] } }, 3],
    [{ match: { field: 'changedAt', operator: '>=', value: before } }, 2],
    [{ match: { field: 'timestamp', operator: '<', value: before } }, 0],
    [{ or: [{ match: { field: 'changedBy', operator: 'LIKE', value: 'api:%' } }, { match: { field: 'entity', operator: '=', value: 'payable_invoice' } }] }, 5],
    [{ and: [{ match: { field: 'source', operator: '=', value: 'accounting_system' } }, { match: { field: 'type', operator: '!=', value: 'payable_invoice.updated' } }] }, 0],
  ];
  for (const [filters, n] of cases) {
    const res = await query({ filters });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.length, n, JSON.stringify(filters));
    assert.equal(res.body.page.totalCount, n);
  }
  // changedAt, not before the detection: the detection ran after the stamp (timestamp >= changedAt).
  const all = await query({});
  for (const e of all.body.data) assert.ok(e.timestamp >= e.data.changedAt);

  const picked = await query({ select: ['id', 'data.record', 'data.changedAt'], page: { pageSize: 1 } });
  assert.equal(picked.status, 200, picked.text);
  assert.deepEqual(Object.keys(picked.body.data[0]).sort(), ['data', 'id']);
  assert.deepEqual(Object.keys(picked.body.data[0].data).sort(), ['changedAt', 'record']);

  const bad: Array<[unknown, string, string]> = [
    [{ select: ['recordNumber'] }, 'UNKNOWN_FIELD', 'select[0]'],
    [{ filters: { match: { field: 'invoiceNumber', operator: '=', value: 'x' } } }, 'UNKNOWN_FIELD', 'filters.match.field'],
    [{ filters: { match: { field: 'changedAt', operator: '>', value: 'yesterday' } } }, 'VALIDATION_FAILED', 'filters.match.value'],
    [{ page: { pageSize: 0 } }, 'VALIDATION_FAILED', 'page.pageSize'],
    [{ page: { pageNumber: 2 } }, 'VALIDATION_FAILED', 'page.pageNumber'],
    [{ waitSeconds: 31 }, 'VALIDATION_FAILED', 'waitSeconds'],
    [{ after: '' }, 'VALIDATION_FAILED', 'after'],
    [{ offset: 3 }, 'V2_FIELD_REJECTED', 'offset'],
  ];
  for (const [body, code, field] of bad) {
    const res = await query(body);
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    assert.equal(res.headers['x-error-code'], code, `${JSON.stringify(body)}: ${res.text}`);
    if (res.body.errors) assert.ok(res.body.errors.some((e: any) => e.field === field || e.field.startsWith(field)), `${JSON.stringify(body)} names ${field}: ${res.text}`);
  }
});

test('who reads what: the reading key\'s scopes, personal fields only with pii, no payroll, a switched-off key 503 / 401', async () => {
  await feed(['payable_invoice.updated']);
  await changeAndDetect([['acpinv', await firstRecnums('acpinv', 2)]]);

  const noRead = (await t.services.keys.create('feed no read', 'integration', undefined, ['events:manage'])).key;
  const refused = await query({}, noRead);
  assert.equal(refused.status, 403);
  assert.equal(refused.headers['x-error-code'], 'SCOPE_MISSING');
  assert.equal(refused.body.requiredScope, 'read');

  // None of today's event kinds has personal fields; the rule is the delivery rule all the same:
  // were an invoice field personal data, a key without `pii` would not read it in an event.
  const readOnly = (await t.services.keys.create('feed read', 'integration', undefined, ['read'])).key;
  const withPii = (await t.services.keys.create('feed read pii', 'integration', undefined, ['read', 'pii'])).key;
  const pii = PII_FIELDS as Record<string, readonly string[]>;
  pii['ap-invoices'] = ['invoiceNumber', 'vendorNumber'];
  try {
    const without = await query({}, readOnly);
    assert.equal(without.status, 200, without.text);
    assert.equal(without.body.data.length, 2);
    for (const e of without.body.data) {
      assert.equal('invoiceNumber' in e.data.record, false);
      assert.equal('vendorNumber' in e.data.record, false);
      assert.equal(typeof e.data.record.recordNumber, 'number');
    }
    for (const key of [withPii, t.apiKey]) {
      const full = await query({}, key);
      for (const e of full.body.data) assert.equal(typeof e.data.record.invoiceNumber, 'string');
    }
    // The log keeps the record whole: what is removed depends on who reads.
    const stored = JSON.parse((await t.knex('evtlog').first('document')).document);
    assert.equal(typeof stored.data.record.invoiceNumber, 'string');
  } finally {
    delete pii['ap-invoices'];
  }

  // Payroll is no event kind: it cannot be subscribed to, and payroll changes are never listed.
  const payroll = await t.post('/api/v3/event-feeds', { eventTypes: ['payroll_record.created'] }, t.adminKey);
  assert.equal(payroll.status, 400);
  const cursor = (await readAll()).cursor;
  await changeAndDetect([['payrec', await firstRecnums('payrec', 3)], ['employ', await firstRecnums('employ', 3)]]);
  assert.deepEqual((await query({ after: cursor })).body.data, []);
  const entities = (await t.knex('evtlog').distinct('entity')).map((r: any) => r.entity);
  assert.deepEqual(entities, ['payable_invoice']);

  const off = await t.services.keys.create('feed reader', 'integration');
  assert.equal((await query({}, off.key)).status, 200);
  await t.services.keys.setState(off.key, 'disabled', 'contract ended');
  const disabled = await query({}, off.key);
  assert.equal(disabled.status, 503);
  assert.equal(disabled.headers['x-error-code'], 'SERVICE_DISABLED');
  await t.services.keys.setState(off.key, 'revoked', 'contract ended');
  assert.equal((await query({}, off.key)).status, 401);
});

test('a feed whose owner key is switched off is paused at the next detection, and its kinds are no longer detected for it', async () => {
  const owner = await t.services.keys.create('feed owner', 'admin');
  const f = await feed(['inventory_allocation.updated'], owner.key);
  const allocations = await firstRecnums('invalc', 2);
  await changeAndDetect([['invalc', allocations.slice(0, 1)]]);
  assert.equal(await t.knex('evtlog').count({ n: '*' }).then((r: any) => Number(r[0].n)), 1);

  await t.services.keys.setState(owner.key, 'disabled', 'left the company');
  const cycle = await changeAndDetect([['invalc', allocations.slice(1)]]);
  assert.deepEqual(cycle.kinds, [], 'no kind is detected for a paused feed');
  assert.equal(await t.knex('evtlog').count({ n: '*' }).then((r: any) => Number(r[0].n)), 1, 'nothing more is kept');
  const row = (await t.post('/api/v3/event-feeds/query', {}, t.adminKey)).body.data.find((x: any) => x.id === f.id);
  assert.equal(row.status, 'paused');
  assert.equal(row.statusReason, 'owner key disabled');
  await t.services.audit.flush();
  assert.deepEqual((await auditEntriesFor(t.knex, 'event-feed', f.id)).map((a) => [a.action, a.actorKeyId]), [
    ['event-feed.created', owner.record.id],
    ['event-feed.paused', null],
  ]);
});

test('cursors: another key\'s is 404; an unknown one and one older than the events kept are 410 naming the oldest cursor', async () => {
  await feed(['payable_invoice.updated']);
  const start = h.clock.now.getTime();
  await changeAndDetect([['acpinv', await firstRecnums('acpinv', 2)]]);
  const early = await readAll({}, 1);
  assert.equal(early.events.length, 2);
  const firstCursor = (await query({ page: { pageSize: 1 } })).body.page.nextCursor;

  const foreign = await query({ after: early.cursor }, t.adminKey);
  assert.equal(foreign.status, 404);
  assert.equal(foreign.headers['x-error-code'], 'EVENT_CURSOR_NOT_FOUND');
  assert.equal(foreign.headers['content-type'], 'application/problem+json; charset=utf-8');

  for (const after of ['not-a-cursor', encodeCursor((await t.services.keys.findByKey(t.apiKey))!.id, 999_999)]) {
    const unknown = await query({ after });
    assert.equal(unknown.status, 410, unknown.text);
    assert.equal(unknown.headers['x-error-code'], 'EVENT_CURSOR_EXPIRED');
    assert.equal(typeof unknown.body.oldestCursor, 'string');
    assert.equal((await query({ after: unknown.body.oldestCursor })).body.data.length, 2);
  }

  // Twenty days later more changes; thirty-one days after the first ones retention removes those.
  h.clock.set(new Date(start + 20 * DAY));
  await changeAndDetect([['acpinv', await firstRecnums('acpinv', 1)]]);
  h.clock.set(new Date(start + 31 * DAY));
  assert.equal(await h.events.feed.purge(), 2);
  assert.equal(await t.knex('evtlog').count({ n: '*' }).then((r: any) => Number(r[0].n)), 1);

  const expired = await query({ after: firstCursor });
  assert.equal(expired.status, 410);
  assert.equal(expired.headers['x-error-code'], 'EVENT_CURSOR_EXPIRED');
  assert.match(expired.body.detail, /oldest event still kept/);
  const resumed = await query({ after: expired.body.oldestCursor });
  assert.equal(resumed.status, 200);
  assert.equal(resumed.body.data.length, 1, 'the oldest cursor gives the events still kept');
  // A consumer that had read everything before the purge lost nothing: its cursor still works.
  const onTime = await query({ after: early.cursor });
  assert.equal(onTime.status, 200, onTime.text);
  assert.deepEqual(onTime.body.data.map((e: any) => e.id), resumed.body.data.map((e: any) => e.id));
  // Without a cursor: from the oldest kept.
  assert.equal((await query({})).body.data.length, 1);
});

test('long polling: an empty answer waits for the next event and returns as soon as it is detected', async () => {
  await feed(['payable_invoice.updated']);
  const { cursor } = await readAll();
  const started = Date.now();
  const waiting = query({ after: cursor, waitSeconds: 20 });
  const sent = waiting.then((r) => r); // start the request now
  // Wait until the request is parked on the watch, then detect a change.
  for (let i = 0; i < 200 && h.events.feed.watch.waiting === 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(h.events.feed.watch.waiting, 1, 'the request waits');
  await changeAndDetect([['acpinv', await firstRecnums('acpinv', 1)]]);
  const res = await sent;
  const elapsed = Date.now() - started;
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.length, 1);
  assert.ok(elapsed < 10_000, `answered ${elapsed} ms after it was sent, well before 20 s`);
  assert.equal(h.events.feed.watch.waiting, 0);

  // Nothing arrives: the answer comes when the time is up, empty, with the cursor to go on from.
  const quiet = Date.now();
  const empty = await query({ after: res.body.page.nextCursor, waitSeconds: 1 });
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.body.data, []);
  assert.equal(empty.body.page.nextCursor, res.body.page.nextCursor);
  assert.ok(Date.now() - quiet >= 900, 'held for the time asked');
  // The watch reads the database only while a request waits.
  const polls = h.events.feed.watch.polls;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(h.events.feed.watch.polls, polls);

  // A client that goes away stops its wait at once (no timer or waiter left behind).
  const server = await serveOnLoopback(t.app);
  try {
    const payload = JSON.stringify({ after: res.body.page.nextCursor, waitSeconds: 20 });
    const req = http.request({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/api/v3/events/query', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), 'x-api-key': t.apiKey } });
    req.on('error', () => undefined);
    req.end(payload);
    await until(() => h.events.feed.watch.waiting === 1, 'the request waits');
    req.destroy();
    await until(() => h.events.feed.watch.waiting === 0, 'the wait ends with the connection');
  } finally {
    await server.close();
  }

  // A stopping process (Events.stop at shutdown) answers its waiting requests, empty, at once.
  const stopping = query({ after: res.body.page.nextCursor, waitSeconds: 20 }).then((r) => r);
  await until(() => h.events.feed.watch.waiting === 1, 'the request waits');
  const stoppedAt = Date.now();
  h.events.feed.stop();
  const answered = await stopping;
  assert.equal(answered.status, 200);
  assert.deepEqual(answered.body.data, []);
  assert.ok(Date.now() - stoppedAt < 5_000);
});

/** Polls `cond` every 20 ms for up to 10 s. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(cond(), what);
}

test('a long poll is one request for the rate limit', async () => {
  const limited = await startTestApp({ config: { rateLimitPerMinute: 3 } });
  try {
    installEvents(limited, { feedPollMs: 50 });
    const started = Date.now();
    const poll = await limited.post('/api/v3/events/query', { waitSeconds: 2 }, limited.apiKey);
    assert.equal(poll.status, 200, poll.text);
    assert.ok(Date.now() - started >= 1_900, 'it waited (and polled the database many times)');
    assert.equal((await limited.post('/api/v3/events/query', {}, limited.apiKey)).status, 200);
    assert.equal((await limited.post('/api/v3/events/query', {}, limited.apiKey)).status, 200);
    const over = await limited.post('/api/v3/events/query', {}, limited.apiKey);
    assert.equal(over.status, 429, 'the fourth request of a bucket of three');
  } finally {
    await limited.close();
  }
});

test('a feed nobody reads for 30 days is paused; a read of its types keeps it active', async () => {
  const start = h.clock.now.getTime();
  const unread = await feed(['purchase_order.updated']);
  const read = await feed(['payable_invoice.updated']);
  h.clock.set(new Date(start + 20 * DAY));
  // A read whose filter names AP invoice types only: it counts for the AP feed, not the PO one.
  assert.equal((await query({ filters: { match: { field: 'type', operator: 'IN', values: ['payable_invoice.updated'] } } })).status, 200);
  h.clock.set(new Date(start + 30 * DAY + 60_000));
  const cycle = await h.events.detectNow();
  assert.deepEqual(cycle.kinds, ['payable_invoice']);
  const feeds = (await t.post('/api/v3/event-feeds/query', {}, t.adminKey)).body.data;
  assert.equal(feeds.find((x: any) => x.id === unread.id).status, 'paused');
  assert.equal(feeds.find((x: any) => x.id === unread.id).statusReason, 'not read for 30 days');
  assert.equal(feeds.find((x: any) => x.id === read.id).status, 'active');
  assert.equal(feeds.find((x: any) => x.id === read.id).lastReadAt, new Date(start + 20 * DAY).toISOString());
});

test('positions become visible in commit order: a second appender waits until the first commits', async () => {
  const store = h.events.feed.store;
  const event = (n: number) => ({
    id: `evt_order_${n}`,
    kind: 'payable_invoice' as const,
    document: { type: 'payable_invoice.updated', timestamp: new Date().toISOString(), data: { entity: 'payable_invoice' as const, source: 'api', changedAt: new Date().toISOString(), changedBy: 'api:test', record: { id: String(n) } } },
  });
  const before = await store.position();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let appended!: () => void;
  const firstAppended = new Promise<void>((r) => (appended = r));
  const first = t.knex.transaction(async (trx) => {
    await store.append(trx, [event(1)]);
    appended();
    await held;
  });
  await firstAppended;
  // Another connection (another process, another instance): it does not see the uncommitted position ...
  const other = openDatabase(parseDatabaseUrl(t.services.config.databaseUrl, { min: 0, max: 2 }));
  try {
    const otherStore = new FeedStore(other, t.engine);
    assert.deepEqual(await otherStore.position(), before);
    // ... and its own append waits for the first transaction (the counter row) instead of taking a position past it.
    let settled = false;
    const second = other.transaction((trx) => otherStore.append(trx, [event(2)])).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(settled, false, 'the second appender waits');
    release();
    await first;
    await second;
    const rows = await t.knex('evtlog').whereIn('event_id', ['evt_order_1', 'evt_order_2']).orderBy('seq').select('event_id', 'seq');
    assert.deepEqual(rows.map((r: any) => r.event_id), ['evt_order_1', 'evt_order_2']);
    assert.deepEqual(await otherStore.position(), { seq: before.seq + 2, purgedThrough: before.purgedThrough });
    // The same event appended again keeps its first position and takes none (a window detected
    // twice adds nothing; positions stay contiguous, so an unfiltered page needs no count).
    await t.knex.transaction((trx) => store.append(trx, [event(1), event(3), event(3)]));
    assert.equal(await t.knex('evtlog').where({ event_id: 'evt_order_1' }).count({ n: '*' }).then((r: any) => Number(r[0].n)), 1);
    assert.deepEqual(await store.position(), { seq: before.seq + 3, purgedThrough: before.purgedThrough });
    assert.equal(await t.knex('evtlog').where('seq', '>', before.seq).count({ n: '*' }).then((r: any) => Number(r[0].n)), 3);
  } finally {
    release();
    await other.destroy();
  }
});

test('SQL Server: the page and count statements compile to T-SQL (TOP, no LIMIT)', async () => {
  const mssql = knexFactory({ client: 'mssql' });
  try {
    const store = new FeedStore(mssql, 'mssql');
    const sql: string[] = [];
    const reader: SnapshotReader = {
      db: mssql,
      async all(q) {
        sql.push(q.toSQL().toNative().sql);
        return sql.length === 1 ? [{ seq: '10', purged_through: '2' }] : sql.length === 2 ? [{ seq: '4', event_id: 'evt_x', document: '{}' }, { seq: '6', event_id: 'evt_y', document: '{}' }] : [{ n: 5 }];
      },
      async column() {
        return [];
      },
      async changeToken() {
        return undefined;
      },
    };
    const issues = new Issues();
    const where = resolveFilter(EVENT_LOG, { and: [{ match: { field: 'type', operator: 'IN', values: ['payable_invoice.updated'] } }, { match: { field: 'changedAt', operator: '>=', value: '2026-01-01T00:00:00Z' } }] }, issues);
    assert.ok(issues.empty);
    // A page of one: the second row says there is more, so the count runs.
    const page = await store.page(reader, 3, where, 1);
    assert.equal(page.next, 4);
    assert.equal(page.totalCount, 5);
    assert.match(sql[1]!, /^select top \(@p\d+\) \[e\]\.\[seq\], \[e\]\.\[event_id\], \[e\]\.\[document\] from \[evtlog\] as \[e\] where .* order by \[e\]\.\[seq\] asc$/);
    assert.match(sql[2]!, /^select count\(\*\) as \[n\] from \[evtlog\] as \[e\] where \[e\]\.\[seq\] > @p0 and \[e\]\.\[seq\] <= @p1/);
    assert.doesNotMatch(sql.join('\n'), /\blimit\b/i);
  } finally {
    await mssql.destroy();
  }
});
