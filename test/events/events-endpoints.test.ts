/**
 * Webhook endpoint management and the delivery log through HTTP (tag Events): admin keys only,
 * the secret shown once, every change in the audit log, problem documents with their codes,
 * and the registration-time target check (each refused class of address).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';
import { installEvents, type EventsHarness } from '../support/events';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { columnTypes } from '../../scripts/lib/column-types';
import { DELIVERY_LIST, ENDPOINT_LIST } from '../../src/events/lists';

let t: TestApp;
let h: EventsHarness;

before(async () => {
  t = await startTestApp();
  h = installEvents(t);
  h.dns.set('hooks.example.com', ['93.184.215.14']);
});
after(async () => t.close());

const create = (body: unknown, key = t.adminKey) => t.post('/api/v3/webhook-endpoints', body, key);

test('an integration key may not manage webhooks (403 FORBIDDEN)', async () => {
  const res = await create({ url: 'https://hooks.example.com/a', eventTypes: ['payable_invoice.created'] }, t.apiKey);
  assert.equal(res.status, 403);
  assert.equal(res.headers['x-error-code'], 'FORBIDDEN');
  const list = await t.post('/api/v3/webhook-deliveries/query', {}, t.apiKey);
  assert.equal(list.status, 403);
});

test('create returns the id and a whsec_ secret once; query never shows it; the change is logged', async () => {
  const res = await create({ url: 'https://hooks.example.com/a', eventTypes: ['payable_invoice.created', 'payable_invoice.updated'], description: 'AP' });
  assert.equal(res.status, 200, res.text);
  assert.match(res.body.secret, /^whsec_[A-Za-z0-9+/=]{32}$/);
  assert.equal(res.body.status, 'active');
  assert.deepEqual(res.body.eventTypes, ['payable_invoice.created', 'payable_invoice.updated']);
  const row = await t.knex('whkept').where({ id: res.body.id }).first();
  // Stored encrypted (test/events/webhook-secrets.test.ts has the rest): it opens to the secret shown once.
  assert.match(row.secret, /^enc1:/);
  assert.equal(t.services.secrets.open(row.secret, `whkept:${res.body.id}`), res.body.secret);
  const adminId = (await t.services.keys.findByKey(t.adminKey))!.id;
  assert.equal(row.owner_key_id, adminId);

  const list = await t.post('/api/v3/webhook-endpoints/query', {}, t.adminKey);
  assert.equal(list.status, 200, list.text);
  const listed = list.body.data.find((e: any) => e.id === res.body.id);
  assert.ok(listed);
  assert.equal(listed.secret, undefined);

  const audit = await h.events.store.auditLog(res.body.id);
  assert.deepEqual(audit.map((a) => a.action), ['created']);
  assert.equal(audit[0]!.keyId, adminId);
  // Detection of the subscribed kind starts now.
  assert.ok((await h.events.store.cursors()).has('payable_invoice'));
});

test('a token in the target\'s query is kept by the subscription but not by the audit log or the log lines', async () => {
  const url = 'https://hooks.example.com/in?token=supersecret&team=ap#frag';
  const res = await create({ url, eventTypes: ['payable_invoice.created'] });
  assert.equal(res.status, 200, res.text);
  const updated = await t.post(`/api/v3/webhook-endpoints/${res.body.id}/update`, { url: 'https://hooks.example.com/in?token=othersecret' }, t.adminKey);
  assert.equal(updated.status, 200, updated.text);
  const row = await t.knex('whkept').where({ id: res.body.id }).first();
  assert.equal(row.url, 'https://hooks.example.com/in?token=othersecret', 'the subscription keeps its whole url');
  const stored = JSON.stringify(await t.knex('audlog').select('detail'));
  assert.ok(stored.includes('token=redacted'), stored);
  for (const secret of ['supersecret', 'othersecret']) {
    assert.ok(!stored.includes(secret), `the audit log keeps no ${secret}`);
    assert.ok(!JSON.stringify(t.logs).includes(secret), `no log line holds ${secret}`);
  }
});

test('update, pause, rotate, test, delete: each logged; unknown ids are 404 with their codes', async () => {
  const { body: e } = await create({ url: 'https://hooks.example.com/b', eventTypes: ['purchase_order.created'] });
  const up = await t.post(`/api/v3/webhook-endpoints/${e.id}/update`, { eventTypes: ['purchase_order.updated'], paused: true }, t.adminKey);
  assert.equal(up.status, 200, up.text);
  assert.equal(up.body.status, 'paused');
  assert.deepEqual(up.body.eventTypes, ['purchase_order.updated']);

  const stored = (await t.knex('whkept').where({ id: e.id }).first()).secret;
  const rot = await t.post(`/api/v3/webhook-endpoints/${e.id}/rotate-secret`, {}, t.adminKey);
  assert.equal(rot.status, 200, rot.text);
  assert.notEqual(rot.body.secret, e.secret);
  const row = await t.knex('whkept').where({ id: e.id }).first();
  assert.equal(row.previous_secret, stored, 'the current secret moves to previous as stored (encrypted)');
  assert.equal(t.services.secrets.open(row.secret, `whkept:${e.id}`), rot.body.secret);
  assert.equal(Date.parse(rot.body.previousSecretExpiresAt) - h.clock.now.getTime(), 24 * 3_600_000);

  const test1 = await t.post(`/api/v3/webhook-endpoints/${e.id}/test`, {}, t.adminKey);
  assert.equal(test1.status, 200, test1.text);
  assert.equal(test1.body.eventType, 'webhook.test');
  assert.equal(test1.body.status, 'pending');
  const log = await t.post('/api/v3/webhook-deliveries/query', { endpointId: e.id }, t.adminKey);
  assert.equal(log.status, 200, log.text);
  assert.deepEqual(log.body.data.map((d: any) => d.id), [test1.body.id]);

  const del = await t.post(`/api/v3/webhook-endpoints/${e.id}/delete`, {}, t.adminKey);
  assert.deepEqual(del.body, { id: e.id, deleted: true });
  const again = await t.post(`/api/v3/webhook-endpoints/${e.id}/update`, { paused: false }, t.adminKey);
  assert.equal(again.status, 404);
  assert.equal(again.headers['x-error-code'], 'WEBHOOK_ENDPOINT_NOT_FOUND');
  assert.equal(again.headers['content-type'], 'application/problem+json; charset=utf-8');
  const missing = await t.post('/api/v3/webhook-deliveries/00000000-0000-4000-8000-000000000000/resend', {}, t.adminKey);
  assert.equal(missing.status, 404);
  assert.equal(missing.headers['x-error-code'], 'WEBHOOK_DELIVERY_NOT_FOUND');

  const audit = await h.events.store.auditLog(e.id);
  assert.deepEqual(audit.map((a) => a.action), ['created', 'updated', 'secret-rotated', 'test-sent', 'deleted']);
});

test('bad input is a 400 naming the field (unknown event type, payroll, unknown field, not a uri)', async () => {
  for (const body of [
    { url: 'https://hooks.example.com/c', eventTypes: ['payroll_record.created'] },
    { url: 'https://hooks.example.com/c', eventTypes: [] },
    { url: 'https://hooks.example.com/c', eventTypes: ['payable_invoice.deleted'] },
    { url: 'https://hooks.example.com/c', eventTypes: ['payable_invoice.created'], secret: 'mine' },
    { url: 'not a url', eventTypes: ['payable_invoice.created'] },
  ]) {
    const res = await create(body);
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    assert.ok(res.body.errors?.length > 0, res.text);
  }
});

test('refused targets at registration: http, each non-public class, localhost, and a name resolving to one (422)', async () => {
  h.dns.set('internal.example.com', ['10.0.0.7']);
  h.dns.set('mixed.example.com', ['93.184.215.14', '127.0.0.1']);
  const refused: Array<[string, string]> = [
    ['http://hooks.example.com/a', 'scheme'],
    ['https://127.0.0.1/a', 'loopback'],
    ['https://[::1]/a', 'loopback'],
    ['https://localhost/a', 'loopback'],
    ['https://10.1.2.3/a', 'private'],
    ['https://172.16.0.1/a', 'private'],
    ['https://192.168.1.1/a', 'private'],
    ['https://169.254.169.254/latest/meta-data', 'linkLocal'],
    ['https://[fe80::1]/a', 'linkLocal'],
    ['https://[fd00:ec2::254]/a', 'uniqueLocal'],
    ['https://100.64.0.1/a', 'carrierGradeNat'],
    ['https://0.0.0.0/a', 'unspecified'],
    ['https://240.0.0.1/a', 'reserved'],
    ['https://[::ffff:127.0.0.1]/a', 'loopback'],
    ['https://internal.example.com/a', 'private'],
    ['https://mixed.example.com/a', 'loopback'],
    ['https://user:pw@hooks.example.com/a', 'credentials'],
  ];
  for (const [url, reason] of refused) {
    const res = await create({ url, eventTypes: ['payable_invoice.created'] });
    assert.equal(res.status, 422, `${url}: ${res.text}`);
    assert.equal(res.headers['x-error-code'], 'WEBHOOK_TARGET_REFUSED', url);
    assert.equal(res.body.reason, reason, url);
    assert.equal(res.body.errors[0].field, 'url');
  }
  const before = await t.knex('whkept').count<{ n: number }[]>({ n: '*' });
  const ok = await create({ url: 'https://93.184.215.14/a', eventTypes: ['payable_invoice.created'] });
  assert.equal(ok.status, 200, ok.text);
  const after = await t.knex('whkept').count<{ n: number }[]>({ n: '*' });
  assert.equal(Number(after[0]!.n), Number(before[0]!.n) + 1);
});

test('resend of every failed delivery since a time', async () => {
  const { body: e } = await create({ url: 'https://hooks.example.com/d', eventTypes: ['service_invoice.created'] });
  const d = (await t.post(`/api/v3/webhook-endpoints/${e.id}/test`, {}, t.adminKey)).body;
  await t.knex('whkdlv').where({ id: d.id }).update({ status: 'failed', next_attempt_at: null });
  const res = await t.post('/api/v3/webhook-deliveries/resend-failed', { since: new Date(h.clock.now.getTime() - 60_000).toISOString(), endpointId: e.id }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body, { resent: 1 });
  assert.equal((await t.knex('whkdlv').where({ id: d.id }).first()).status, 'pending');
  const failedOnly = await t.post('/api/v3/webhook-deliveries/query', { endpointId: e.id, status: 'failed' }, t.adminKey);
  assert.equal(failedOnly.body.page.totalCount, 0);
});

test('the endpoint list speaks the query language of every /query and answers the read envelope', async () => {
  // A fresh set: three endpoints on their own path, one deleted; created on whole seconds (`.000`
  // milliseconds: SQLite stores text, and a whole-second instant must still compare equal).
  h.clock.set(new Date(Math.floor(h.clock.now.getTime() / 1000) * 1000 + 1000));
  const made: any[] = [];
  for (const [i, types] of [['payable_invoice.created'], ['purchase_order.created', 'purchase_order.updated'], ['ledger_transaction.created']].entries()) {
    const res = await create({ url: `https://hooks.example.com/list-${i}`, eventTypes: types, description: `list ${i}` });
    assert.equal(res.status, 200, res.text);
    made.push(res.body);
    h.clock.advance(1_000);
  }
  await t.post(`/api/v3/webhook-endpoints/${made[2].id}/update`, { paused: true }, t.adminKey);
  const gone = (await create({ url: 'https://hooks.example.com/list-gone', eventTypes: ['payable_invoice.created'] })).body;
  await t.post(`/api/v3/webhook-endpoints/${gone.id}/delete`, {}, t.adminKey);
  const mine = { match: { field: 'url', operator: 'LIKE', value: 'https://hooks.example.com/list-%' } };
  const list = (body: unknown) => t.post('/api/v3/webhook-endpoints/query', body, t.adminKey);

  const all = await list({ filters: mine });
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(Object.keys(all.body).sort(), ['asOf', 'data', 'page']);
  assert.ok(Math.abs(Date.parse(all.body.asOf) - Date.now()) < 60_000);
  assert.deepEqual(all.body.page, { pageNumber: 1, pageSize: 100, totalCount: 3, returnedCount: 3 });
  assert.deepEqual(all.body.data.map((e: any) => e.id), made.map((e) => e.id), 'oldest first by default; the deleted one never listed');
  assert.deepEqual(Object.keys(all.body.data[0]).sort(), ['createdAt', 'description', 'eventTypes', 'id', 'ownerKeyId', 'previousSecretExpiresAt', 'status', 'statusReason', 'updatedAt', 'url']);

  // select (a list field included), orderBy, page.
  const page2 = await list({ select: ['id', 'eventTypes'], filters: mine, orderBy: ['createdAt DESC'], page: { pageNumber: 2, pageSize: 1 } });
  assert.equal(page2.status, 200, page2.text);
  assert.deepEqual(page2.body.page, { pageNumber: 2, pageSize: 1, totalCount: 3, returnedCount: 1 });
  assert.deepEqual(page2.body.data, [{ id: made[1].id, eventTypes: ['purchase_order.created', 'purchase_order.updated'] }]);

  // and / or / IN / timestamps (exact instants match, on every engine); the status shorthand AND-ed with filters.
  const exact = await list({ select: ['id'], filters: { and: [mine, { match: { field: 'createdAt', operator: '=', value: made[1].createdAt } }] } });
  assert.deepEqual(exact.body.data, [{ id: made[1].id }]);
  const later = await list({ select: ['id'], filters: { and: [mine, { or: [{ match: { field: 'createdAt', operator: '>', value: made[0].createdAt } }, { match: { field: 'description', operator: 'IN', values: ['list 0'] } }] }] } });
  assert.equal(later.body.page.totalCount, 3);
  const paused = await list({ select: ['id', 'status'], status: ['paused'], filters: mine });
  assert.deepEqual(paused.body.data, [{ id: made[2].id, status: 'paused' }]);
  const deleted = await list({ filters: { match: { field: 'status', operator: '=', value: 'deleted' } } });
  assert.equal(deleted.body.page.totalCount, 0, 'deleted endpoints are never listed');

  // Refusals name the field: unknown, a list field in filters or orderBy, a value of the wrong type, a v2 field.
  const refused = async (body: unknown, code: string, field: string) => {
    const res = await list(body);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.headers['x-error-code'], code);
    assert.ok(res.body.errors.some((e: any) => e.field === field), res.text);
  };
  await refused({ select: ['id', 'secret'] }, 'UNKNOWN_FIELD', 'select[1]');
  await refused({ filters: { match: { field: 'nope', operator: '=', value: 1 } } }, 'UNKNOWN_FIELD', 'filters.match.field');
  await refused({ filters: { match: { field: 'eventTypes', operator: 'LIKE', value: '%payable%' } } }, 'VALIDATION_FAILED', 'filters.match.field');
  await refused({ orderBy: ['eventTypes ASC'] }, 'VALIDATION_FAILED', 'orderBy[0]');
  await refused({ filters: { match: { field: 'createdAt', operator: '>', value: 'yesterday' } } }, 'VALIDATION_FAILED', 'filters.match.value');
  await refused({ page: { pageSize: 0 } }, 'VALIDATION_FAILED', 'page.pageSize');
  await refused({ withChildren: true }, 'V2_FIELD_REJECTED', 'withChildren');
});

test('the delivery log speaks the query language of every /query and answers the read envelope', async () => {
  const { body: e } = await create({ url: 'https://hooks.example.com/log', eventTypes: ['payable_invoice.created'] });
  const sent: any[] = [];
  for (let i = 0; i < 3; i++) {
    sent.push((await t.post(`/api/v3/webhook-endpoints/${e.id}/test`, {}, t.adminKey)).body);
    h.clock.advance(1_000);
  }
  await t.knex('whkdlv').where({ id: sent[0].id }).update({ status: 'failed', attempts: 10, next_attempt_at: null, last_status_code: 503 });
  const log = (body: Record<string, unknown>) => t.post('/api/v3/webhook-deliveries/query', { endpointId: e.id, ...body }, t.adminKey);

  const all = await log({});
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(Object.keys(all.body).sort(), ['asOf', 'data', 'page']);
  assert.deepEqual(all.body.page, { pageNumber: 1, pageSize: 100, totalCount: 3, returnedCount: 3 });
  assert.deepEqual(all.body.data.map((d: any) => d.id), [...sent].reverse().map((d) => d.id), 'newest first by default');
  assert.ok(Array.isArray(all.body.data[0].attemptLog));

  const failed = await log({ select: ['id', 'status', 'attempts', 'lastStatusCode'], filters: { and: [{ match: { field: 'status', operator: '!=', value: 'succeeded' } }, { match: { field: 'attempts', operator: '>=', value: 3 } }] } });
  assert.deepEqual(failed.body.data, [{ id: sent[0].id, status: 'failed', attempts: 10, lastStatusCode: 503 }]);
  const ordered = await log({ select: ['id'], orderBy: ['createdAt ASC'], page: { pageNumber: 1, pageSize: 2 } });
  assert.deepEqual(ordered.body.data, [{ id: sent[0].id }, { id: sent[1].id }]);
  assert.equal(ordered.body.page.totalCount, 3);
  // The shorthands AND with filters: since (inclusive) and until (exclusive) on createdAt.
  const window = await log({ select: ['id'], since: sent[1].createdAt, until: sent[2].createdAt, filters: { match: { field: 'eventType', operator: '=', value: 'webhook.test' } } });
  assert.deepEqual(window.body.data, [{ id: sent[1].id }]);
  const withLog = await log({ select: ['id', 'attemptLog'], filters: { match: { field: 'id', operator: '=', value: sent[2].id } } });
  assert.deepEqual(withLog.body.data, [{ id: sent[2].id, attemptLog: [] }]);

  for (const [body, code, field] of [
    [{ filters: { match: { field: 'attemptLog', operator: '=', value: 1 } } }, 'VALIDATION_FAILED', 'filters.match.field'],
    [{ orderBy: ['attemptLog DESC'] }, 'VALIDATION_FAILED', 'orderBy[0]'],
    [{ filters: { match: { field: 'attempts', operator: '>', value: 'three' } } }, 'VALIDATION_FAILED', 'filters.match.value'],
    [{ select: ['payload'] }, 'UNKNOWN_FIELD', 'select[0]'],
    [{ selectFields: ['id'] }, 'V2_FIELD_REJECTED', 'selectFields'],
  ] as const) {
    const res = await log(body);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.headers['x-error-code'], code);
    assert.ok(res.body.errors.some((x: any) => x.field === field), res.text);
  }
});

test('the lists describe their tables as the migrations made them, and publish the contract item fields', () => {
  const types = columnTypes();
  const doc = YAML.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.public.yaml'), 'utf8'));
  for (const list of [ENDPOINT_LIST, DELIVERY_LIST]) {
    for (const f of Object.values(list.entity.fields)) assert.equal(f.sqlType, types.get(`${list.entity.table}.${f.column}`), `${list.entity.table}.${f.column}`);
    const published = Object.keys(doc.components.schemas[list.entity.schema].properties).sort();
    assert.deepEqual([...Object.keys(list.entity.fields), ...list.selectOnly].sort(), published, list.entity.schema);
  }
});

test('localhost and loopback however written are refused at registration (422 naming url), whether or not the name resolves', async () => {
  // The test resolver knows none of these names: before, an unresolvable name was accepted, so
  // `localhost.` (a fully qualified localhost) registered. The spec, Events rule 7: localhost is refused.
  const refused: Array<[string, string]> = [
    ['https://localhost./x', 'loopback'],
    ['https://LOCALHOST./x', 'loopback'],
    ['https://foo.localhost./x', 'loopback'],
    ['https://Foo.LocalHost/x', 'loopback'],
    ['https://localhost../x', 'loopback'],
    ['https://localhost%2e/x', 'loopback'],
    ['https://%6c%6fcalhost/x', 'loopback'],
    ['https://localhost\u3002/x', 'loopback'],
    ['https://127.0.0.1./x', 'loopback'],
    ['https://2130706433/x', 'loopback'],
    ['https://0x7f.1/x', 'loopback'],
    ['https://0177.0.0.1/x', 'loopback'],
    ['https://127.1/x', 'loopback'],
    ['https://[::1]/x', 'loopback'],
    ['https://[0:0:0:0:0:0:0:1]/x', 'loopback'],
    ['https://[::ffff:7f00:1]/x', 'loopback'],
    ['https://[::127.0.0.1]/x', 'loopback'],
    ['https://[::a9fe:a9fe]/x', 'linkLocal'],
    ['https://0.0.0.0/x', 'unspecified'],
    ['https://0/x', 'unspecified'],
    ['https://0xa9.0xfe.0xa9.0xfe/latest/meta-data', 'linkLocal'],
  ];
  const before = await t.knex('whkept').count<{ n: number }[]>({ n: '*' });
  for (const [url, reason] of refused) {
    const res = await create({ url, eventTypes: ['payable_invoice.created'] });
    assert.equal(res.status, 422, `${url}: ${res.text}`);
    assert.equal(res.headers['x-error-code'], 'WEBHOOK_TARGET_REFUSED', url);
    assert.equal(res.body.reason, reason, url);
    assert.equal(res.body.errors[0].field, 'url', url);
  }
  const after = await t.knex('whkept').count<{ n: number }[]>({ n: '*' });
  assert.equal(Number(after[0]!.n), Number(before[0]!.n), 'nothing registered');
  // The same rule on an update of the url.
  const ok = await create({ url: 'https://hooks.example.com/loop', eventTypes: ['payable_invoice.created'] });
  assert.equal(ok.status, 200, ok.text);
  const moved = await t.post(`/api/v3/webhook-endpoints/${ok.body.id}/update`, { url: 'https://localhost./x' }, t.adminKey);
  assert.equal(moved.status, 422, moved.text);
  assert.equal(moved.headers['x-error-code'], 'WEBHOOK_TARGET_REFUSED');
  assert.equal(moved.body.errors[0].field, 'url');
  assert.equal((await t.knex('whkept').where({ id: ok.body.id }).first()).url, 'https://hooks.example.com/loop');
});
