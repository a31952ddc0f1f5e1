/**
 * What change detection finds and what it leaves out (the spec's Events table and rules 1 and 5):
 * a payroll batch sends nothing, a line changed in the accounting system counts for its document.
 * Each test runs on a database of its own (a copy of the seeded demo company), so the changes of one
 * test never fall in another's detection window; detection and delivery are driven cycle by cycle
 * under a settable clock, deliveries go to a stub sender.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { freshEventsApps, exampleBody, type FreshEvents } from '../support/events';
import { EVENT_TYPES } from '../../src/events';
import { EVENT_KINDS, type EventKind } from '../../src/events/kinds';
import { CATALOG } from '../../generated/catalog';
import { EVENT_LINE_TABLES } from '../../db/migrations/20261127000240_event_line_indexes';


type Fresh = FreshEvents;
const startFresh = freshEventsApps();
const fresh = (): Promise<Fresh> => startFresh({ start: new Date(Date.now() - 5_000) });

async function subscribe(f: Fresh, eventTypes: readonly string[]): Promise<void> {
  const res = await f.t.post('/api/v3/webhook-endpoints', { url: 'https://hooks.example.com/accounting', eventTypes }, f.t.adminKey);
  assert.equal(res.status, 200, res.text);
}

/** Moves the clock past now, so detection's window covers what was just written. */
function catchUp(f: Fresh): void {
  f.h.clock.set(new Date(Date.now() + 2_000));
}

const outbox = async (f: Fresh) => (await f.t.knex('whkdlv').orderBy('created_at').select('event_type', 'payload')).map((r: any) => ({ type: r.event_type as string, body: JSON.parse(r.payload) }));

test('payroll is never sent: a posted payroll batch queues no event of any type, its journal neither created nor updated', async () => {
  const f = await fresh();
  await subscribe(f, EVENT_TYPES);
  const payroll = await f.t.post('/api/v3/payroll-records/post', exampleBody('postPayrollBatch'));
  assert.equal(payroll.status, 200, payroll.text);
  assert.equal(payroll.body.ledgerTransaction.sourceNumber, 16);
  // A journal of another source in the same window is sent: detection did read the payroll's window.
  const journal = await f.t.post('/api/v3/ledger-transactions', exampleBody('postLedgerTransaction'));
  assert.equal(journal.status, 200, journal.text);
  catchUp(f);
  const d = await f.h.events.detectNow();
  assert.ok(d.kinds.includes('ledger_transaction'));
  assert.equal(d.queued, 1, 'the journal, nothing of the payroll batch');
  const queued = await outbox(f);
  assert.deepEqual(queued.map((e) => e.type), ['ledger_transaction.created']);
  assert.equal(queued[0]!.body.data.record.recordNumber, journal.body.ledgerTransaction.recordNumber);

  // The payroll journal and one of its lines changed in the accounting system afterwards: still nothing.
  const payrollJournal = await f.t.knex('lgrtrn').where({ recnum: payroll.body.ledgerTransaction.recordNumber }).first();
  const later = f.h.events.store.t(new Date(f.h.clock.now.getTime() + 500));
  await f.t.knex('lgrtrn').where({ _idnum: payrollJournal._idnum }).update({ dscrpt: 'payroll edited', updusr: 'JSMITH', upddte: later });
  await f.t.knex('lgtnln').where({ _idref: payrollJournal._idnum, linnum: 1 }).update({ dscrpt: 'line edited', updusr: 'JSMITH', upddte: later });
  f.h.clock.advance(1_000);
  assert.equal((await f.h.events.detectNow()).queued, 0);
  assert.equal((await outbox(f)).length, 1, 'nothing more in the outbox');
  await f.h.events.deliverNow();
  assert.deepEqual(f.sent.map((b) => b.type), ['ledger_transaction.created']);
  assert.notEqual(f.sent[0].data.record.sourceNumber, 16);
});

test('an AP invoice line re-coded in the accounting system sends payable_invoice.updated for its invoice, once', async () => {
  const f = await fresh();
  await subscribe(f, ['payable_invoice.created', 'payable_invoice.updated']);
  const line = await f.t.knex('apivln').orderBy('_idnum').first();
  const account = await f.t.knex('lgract').whereNot({ recnum: line.lgract }).orderBy('recnum').first();
  const before = await f.t.knex('acpinv').where({ _idnum: line._idref }).first();
  // An outside UPDATE of the line only: the trigger moves the line's upddte, the header is untouched.
  await f.t.knex('apivln').where({ _idnum: line._idnum }).update({ lgract: account.recnum, updusr: 'JSMITH' });
  const changed = await f.t.knex('apivln').where({ _idnum: line._idnum }).first();
  assert.notEqual(String(changed.upddte), String(line.upddte), 'the trigger moved the line stamp');
  assert.equal(String((await f.t.knex('acpinv').where({ _idnum: line._idref }).first()).upddte), String(before.upddte), 'the header stamp did not move');
  catchUp(f);
  const d = await f.h.events.detectNow();
  assert.equal(d.queued, 1);
  const [event] = await outbox(f);
  assert.equal(event!.type, 'payable_invoice.updated');
  assert.equal(event!.body.data.record.id, String(line._idref).toLowerCase());
  assert.equal(event!.body.data.changedBy, 'JSMITH');
  assert.equal(event!.body.data.source, 'accounting_system');
  // Not again on the next cycle.
  f.h.clock.advance(300_000);
  assert.equal((await f.h.events.detectNow()).queued, 0);
  await f.h.events.deliverNow();
  assert.deepEqual(f.sent.map((b) => [b.type, b.data.record.id]), [['payable_invoice.updated', String(line._idref).toLowerCase()]]);
});

test('for every kind with lines: a changed line counts for its document; the header and a line changed together send one event', async () => {
  const f = await fresh();
  await subscribe(f, EVENT_TYPES);
  const expected: string[] = [];
  for (const [kind, def] of Object.entries(EVENT_KINDS) as Array<[EventKind, (typeof EVENT_KINDS)[EventKind]]>) {
    const entity = CATALOG[def.entity]!;
    const children = Object.values(entity.children);
    assert.ok(children.length > 0, `${kind} has lines`);
    for (const child of children) {
      // Documents of this kind that are sent (not payroll journals), the first two with lines.
      const headers = f.t.knex(entity.table).select('_idnum').orderBy('_idnum');
      if (def.never) headers.whereNotIn(entity.fields[def.never.field]!.column, def.never.values);
      const parents = await f.t.knex(child.table).distinct(child.parentColumn).whereIn(child.parentColumn, headers).orderBy(child.parentColumn).limit(2);
      assert.equal(parents.length, 2, `${kind}: two documents with ${child.name}`);
      const [lineOnly, both] = parents.map((p: any) => String(p[child.parentColumn]));
      // A line only.
      await f.t.knex(child.table).where({ [child.parentColumn]: lineOnly, [child.orderColumn]: f.t.knex(child.table).min(child.orderColumn).where({ [child.parentColumn]: lineOnly }) }).update({ updusr: 'JSMITH' });
      // The header and a line of another document.
      await f.t.knex(entity.table).where({ _idnum: both }).update({ updusr: 'MARY' });
      await f.t.knex(child.table).where({ [child.parentColumn]: both }).update({ updusr: 'MARY' });
      expected.push(`${kind}.updated ${lineOnly!.toLowerCase()}`, `${kind}.updated ${both!.toLowerCase()}`);
    }
  }
  catchUp(f);
  const d = await f.h.events.detectNow();
  const queued = await outbox(f);
  assert.deepEqual(queued.map((e) => `${e.type} ${e.body.data.record.id}`).sort(), expected.sort());
  assert.equal(d.queued, expected.length);
  f.h.clock.advance(300_000);
  assert.equal((await f.h.events.detectNow()).queued, 0, 'not again on the next cycle');
});

test('every line table detection reads has its (upddte, _idref) index', async () => {
  const tables = Object.values(EVENT_KINDS).flatMap((k) => Object.values(CATALOG[k.entity]!.children).map((c) => c.table));
  assert.deepEqual([...EVENT_LINE_TABLES].sort(), [...new Set(tables)].sort());
});

test('no history for a kind nobody subscribed to for a while: a change made meanwhile is not sent to its next subscriber (endpoint created, feed resumed)', async () => {
  const f = await fresh();
  const first = await f.t.post('/api/v3/webhook-endpoints', { url: 'https://hooks.example.com/accounting', eventTypes: ['purchase_order.updated', 'payable_invoice.updated'] }, f.t.adminKey);
  assert.equal(first.status, 200, first.text);
  const feedRes = await f.t.post('/api/v3/event-feeds', { eventTypes: ['purchase_order.updated'] }, f.t.adminKey);
  assert.equal(feedRes.status, 200, feedRes.text);
  catchUp(f);
  await f.h.events.detectNow();
  // Nobody subscribes to purchase orders any more: the endpoint drops the type, the feed is paused.
  assert.equal((await f.t.post(`/api/v3/webhook-endpoints/${first.body.id}/update`, { eventTypes: ['payable_invoice.updated'] }, f.t.adminKey)).status, 200);
  assert.equal((await f.t.post(`/api/v3/event-feeds/${feedRes.body.id}/update`, { paused: true }, f.t.adminKey)).status, 200);
  const stale = (await f.h.events.store.cursors()).get('purchase_order')!;
  const [before, after] = await f.t.knex('pchord').orderBy('recnum').limit(2).select('_idnum', 'recnum');
  // Changed in the accounting system while unsubscribed (stamped on the test's clock), then a cycle (purchase orders are not read).
  const meanwhile = new Date(f.h.clock.now.getTime() + 1_000);
  await f.t.knex('pchord').where({ _idnum: before._idnum }).update({ dscrpt: 'changed while unsubscribed', updusr: 'JSMITH', upddte: f.h.events.store.t(meanwhile) });
  f.h.clock.set(new Date(meanwhile.getTime() + 1_000));
  await f.h.events.detectNow();
  f.h.clock.advance(60_000);
  // A new endpoint subscribes: detection of the kind starts now, past the change.
  const second = await f.t.post('/api/v3/webhook-endpoints', { url: 'https://hooks.example.com/orders', eventTypes: ['purchase_order.updated'] }, f.t.adminKey);
  assert.equal(second.status, 200, second.text);
  const moved = (await f.h.events.store.cursors()).get('purchase_order')!;
  assert.ok(moved > stale, 'the kind\'s cursor moved forward');
  assert.equal((await f.h.events.detectNow()).queued, 0, 'nothing of before the subscription');
  // The feed resumed: no kind gained (the endpoint has it), the cursor stays; a change from now on reaches both.
  assert.equal((await f.t.post(`/api/v3/event-feeds/${feedRes.body.id}/update`, { paused: false }, f.t.adminKey)).status, 200);
  assert.deepEqual((await f.h.events.store.cursors()).get('purchase_order'), moved);
  // Stamped on the test's clock (ahead of the real one since the advance).
  const later = new Date(f.h.clock.now.getTime() + 1_000);
  await f.t.knex('pchord').where({ _idnum: after._idnum }).update({ dscrpt: 'changed once subscribed', updusr: 'MARY', upddte: f.h.events.store.t(later) });
  f.h.clock.set(new Date(later.getTime() + 1_000));
  assert.equal((await f.h.events.detectNow()).queued, 1);
  const queued = await outbox(f);
  assert.deepEqual(queued.map((e) => [e.type, e.body.data.record.recordNumber]), [['purchase_order.updated', Number(after.recnum)]]);
  const events = (await f.t.post('/api/v3/events/query', { page: { pageSize: 100 } })).body.data;
  assert.deepEqual(events.map((e: any) => [e.type, e.data.record.recordNumber]), [['purchase_order.updated', Number(after.recnum)]]);
});

test('no history for a feed that is the first to subscribe again (resumed after a pause), nor for an endpoint resumed', async () => {
  const f = await fresh();
  const feedRes = await f.t.post('/api/v3/event-feeds', { eventTypes: ['service_invoice.updated'] }, f.t.adminKey);
  const endpoint = await f.t.post('/api/v3/webhook-endpoints', { url: 'https://hooks.example.com/accounting', eventTypes: ['inventory_allocation.updated'] }, f.t.adminKey);
  assert.equal(endpoint.status, 200, endpoint.text);
  catchUp(f);
  await f.h.events.detectNow();
  assert.equal((await f.t.post(`/api/v3/event-feeds/${feedRes.body.id}/update`, { paused: true }, f.t.adminKey)).status, 200);
  assert.equal((await f.t.post(`/api/v3/webhook-endpoints/${endpoint.body.id}/update`, { paused: true }, f.t.adminKey)).status, 200);
  const invoice = await f.t.knex('srvinv').orderBy('recnum').first('_idnum');
  const allocation = await f.t.knex('invalc').orderBy('recnum').first('_idnum');
  // Changed while paused (stamped on the test's clock), then a cycle (neither kind is read).
  const meanwhile = new Date(f.h.clock.now.getTime() + 1_000);
  await f.t.knex('srvinv').where({ _idnum: invoice._idnum }).update({ dscrpt: 'changed while paused', updusr: 'JSMITH', upddte: f.h.events.store.t(meanwhile) });
  await f.t.knex('invalc').where({ _idnum: allocation._idnum }).update({ dscrpt: 'changed while paused', updusr: 'JSMITH', upddte: f.h.events.store.t(meanwhile) });
  f.h.clock.set(new Date(meanwhile.getTime() + 1_000));
  await f.h.events.detectNow();
  f.h.clock.advance(60_000);
  assert.equal((await f.t.post(`/api/v3/event-feeds/${feedRes.body.id}/update`, { paused: false }, f.t.adminKey)).status, 200);
  assert.equal((await f.t.post(`/api/v3/webhook-endpoints/${endpoint.body.id}/update`, { paused: false }, f.t.adminKey)).status, 200);
  const d = await f.h.events.detectNow();
  assert.equal(d.changes, 0, 'nothing of before the resume');
  assert.equal(Number((await f.t.knex('whkdlv').count({ n: '*' }))[0]!.n), 0);
  assert.deepEqual((await f.t.post('/api/v3/events/query', {})).body.data, []);
});

test('a cycle that read a cursor a first subscriber moved meanwhile rolls its window back: the move wins, nothing of before it is queued', async () => {
  const f = await fresh();
  await subscribe(f, ['purchase_order.updated']);
  catchUp(f);
  await f.h.events.detectNow();
  const read = await f.h.events.store.cursors();
  const po = await f.t.knex('pchord').orderBy('recnum').first('_idnum');
  const stamp = new Date(f.h.clock.now.getTime() + 1_000);
  await f.t.knex('pchord').where({ _idnum: po._idnum }).update({ updusr: 'JSMITH', upddte: f.h.events.store.t(stamp) });
  // The cursor moves (as a first subscriber's would) after this cycle has read it.
  const movedTo = new Date(stamp.getTime() + 500);
  await f.t.knex('whkcur').where({ kind: 'purchase_order' }).update({ cursor: f.h.events.store.t(movedTo) });
  const store = f.h.events.store;
  const cursors = store.cursors.bind(store);
  store.cursors = async () => read;
  try {
    f.h.clock.set(new Date(stamp.getTime() + 2_000));
    const d = await f.h.events.detectNow();
    assert.equal(d.queued, 0);
  } finally {
    store.cursors = cursors;
  }
  assert.equal(Number((await f.t.knex('whkdlv').count({ n: '*' }))[0]!.n), 0, 'the window was rolled back');
  assert.deepEqual((await store.cursors()).get('purchase_order'), movedTo, 'the cursor stays where it was moved');
  assert.ok(f.t.logs.some((l) => /the cursor moved during the cycle/.test(String(l.msg))));
});
