/**
 * Change detection over a record holding a stored value the contract cannot publish
 * (docs/decisions/0370): another program wrote the date 'infinity' into an AP invoice (both
 * SQLite and PostgreSQL store it; the write itself is the change detection finds). The events of
 * the kind keep flowing: the record's event is sent, its unreadable field left out of
 * `data.record` and named in `data.unreadableFields` (webhook and feed alike, both valid against
 * the contract), the cursor moves on, and the operator's log names the record.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { startTestApp, type TestApp } from '../support/app';
import { installEvents, type EventsHarness } from '../support/events';

const DOC = YAML.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.public.yaml'), 'utf8'));
const ajv = new Ajv2020({ strict: false, validateFormats: true });
addFormats(ajv);
ajv.addSchema({ ...DOC, $id: 'contract' });

/** The body matches the webhooks section of the contract (the payload schema of its type). */
function assertContractPayload(body: any): void {
  const ref: string = DOC.webhooks[body.type].post.requestBody.content['application/json'].schema.$ref;
  const validate = ajv.getSchema(`contract${ref}`)!;
  assert.ok(validate(body), `${body.type}: ${ajv.errorsText(validate.errors)}`);
}

let t: TestApp;
let h: EventsHarness;
const sent: any[] = [];

before(async () => {
  t = await startTestApp();
  h = installEvents(t, {
    start: new Date(Date.now() - 5_000),
    sender: async (_url, _headers, body) => {
      sent.push(JSON.parse(body));
      return { status: 204, headers: {} };
    },
  });
  h.dns.set('hooks.example.com', ['93.184.215.14']);
});
after(async () => {
  await t.close();
});

test('an AP invoice whose invoice date cannot be read is still sent, the field left out and named; the next invoice is sent whole; the cursor moves on', async () => {
  const endpoint = await t.post('/api/v3/webhook-endpoints', { url: 'https://hooks.example.com/accounting', eventTypes: ['payable_invoice.updated'] }, t.adminKey);
  assert.equal(endpoint.status, 200, endpoint.text);
  const feed = await t.post('/api/v3/event-feeds', { eventTypes: ['payable_invoice.updated'] }, t.adminKey);
  assert.equal(feed.status, 200, feed.text);
  // The cursors start at the first cycle.
  assert.equal((await h.events.detectNow()).ran, true);

  const [bad, good] = (await t.knex('acpinv').orderBy('recnum').limit(2).select('_idnum', 'invdte')) as Array<{ _idnum: string; invdte: unknown }>;
  const badId = String(bad!._idnum).toLowerCase();
  const goodId = String(good!._idnum).toLowerCase();
  // Another program writes the date 'infinity' (the triggers stamp the rows: the change detection finds).
  await t.knex.raw("UPDATE acpinv SET invdte = 'infinity', updusr = 'JSMITH' WHERE _idnum = ?", [bad!._idnum]);
  await t.knex('acpinv').where({ _idnum: good!._idnum }).update({ dscrpt: 'changed at the desk', updusr: 'JSMITH' });
  h.clock.set(new Date(Date.now() + 2_000));

  const d = await h.events.detectNow();
  assert.equal(d.ran, true);
  assert.equal(d.queued, 2, 'both invoices: the unreadable value stops nothing');
  const outbox = (await t.knex('whkdlv').orderBy('created_at').select('payload')).map((r: any) => JSON.parse(r.payload));
  const byId = new Map(outbox.map((e: any) => [e.data.record.id, e]));
  const badEvent = byId.get(badId);
  const goodEvent = byId.get(goodId);
  assert.ok(badEvent && goodEvent, JSON.stringify(outbox));
  assert.equal('invoiceDate' in badEvent.data.record, false, 'no value is made up for it');
  assert.deepEqual(badEvent.data.unreadableFields, ['invoiceDate']);
  assert.equal(typeof badEvent.data.record.invoiceTotal, 'number', 'the rest of the record is there');
  assert.equal(goodEvent.data.unreadableFields, undefined);
  assert.match(goodEvent.data.record.invoiceDate, /^\d{4}-\d{2}-\d{2}$/);
  for (const e of outbox) assertContractPayload(e);

  // The operator's log names the record and the field.
  const warned = t.logs.find((l) => l.code === 'STORED_VALUE_UNREADABLE' && l.recordId === badId);
  assert.ok(warned, 'a warning names the record');
  assert.deepEqual(warned.fields, ['invoiceDate']);
  assert.equal(warned.entity, 'ap-invoices');

  // Delivered as queued; the next cycle finds nothing new (the cursor moved past both).
  h.clock.advance(1_000);
  assert.equal((await h.events.detectNow()).queued, 0);
  await h.events.deliverNow();
  assert.deepEqual(sent.map((b) => b.data.record.id).sort(), [badId, goodId].sort());

  // The feed: the same event, the field named (response validation on: the contract declares it),
  // also when only the record is selected.
  const all = await t.post('/api/v3/events/query', {});
  assert.equal(all.status, 200, all.text);
  const fed = all.body.data.find((e: any) => e.data.record.id === badId);
  assert.deepEqual(fed.data.unreadableFields, ['invoiceDate']);
  const recordOnly = await t.post('/api/v3/events/query', { select: ['id', 'data.record'] });
  assert.equal(recordOnly.status, 200, recordOnly.text);
  assert.deepEqual(recordOnly.body.data.find((e: any) => e.data.record.id === badId).data.unreadableFields, ['invoiceDate']);
  assert.equal(recordOnly.body.data.find((e: any) => e.data.record.id === goodId).data.unreadableFields, undefined);

  // A query of the invoice names the same record and field.
  const read = await t.post('/api/v3/ap-invoices/query', { filters: { match: { field: 'id', operator: '=', value: badId } } });
  assert.equal(read.status, 502, read.text);
  assert.deepEqual(read.body.unreadableValue, { entity: 'ap-invoices', field: 'invoiceDate', recordId: badId });

  await t.knex('acpinv').where({ _idnum: bad!._idnum }).update({ invdte: bad!.invdte });
});
