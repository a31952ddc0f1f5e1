/**
 * What change detection finds and what it leaves out (the spec's Events table and rules 1 and 5):
 * a payroll batch sends nothing, a line changed in the accounting system counts for its document.
 * Each test runs on a database of its own (a copy of the seeded demo company), so the changes of one
 * test never fall in another's detection window; detection and delivery are driven cycle by cycle
 * under a settable clock, deliveries go to a stub sender.
 */
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { startTestApp, type TestApp } from './support/app';
import { installEvents, type EventsHarness } from './support/events';
import { EVENT_TYPES } from '../src/events';

const DOC = YAML.parse(fs.readFileSync(path.join(__dirname, '..', 'generated', 'openapi.public.yaml'), 'utf8'));

function exampleBody(operationId: string): any {
  for (const item of Object.values<any>(DOC.paths)) {
    const op = item.post;
    if (op?.operationId === operationId) return Object.values<any>(op.requestBody.content['application/json'].examples)[0].value;
  }
  throw new Error(operationId);
}

interface Fresh {
  t: TestApp;
  h: EventsHarness;
  /** Bodies the stub sender was given, parsed. */
  sent: any[];
}

const apps: TestApp[] = [];
after(async () => {
  for (const t of apps) await t.close();
});

async function fresh(): Promise<Fresh> {
  const t = await startTestApp();
  apps.push(t);
  const sent: any[] = [];
  const h = installEvents(t, {
    start: new Date(Date.now() - 5_000),
    sender: async (_url, _headers, body) => {
      sent.push(JSON.parse(body));
      return { status: 204, headers: {} };
    },
  });
  h.dns.set('hooks.example.com', ['93.184.215.14']);
  return { t, h, sent };
}

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
