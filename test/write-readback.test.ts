/**
 * One mapping for read-back: a write result's `document` and `ledgerTransaction` are the records
 * POST /{entity}/query returns for the same id (with children lines), field by field, on the
 * journal and the AP invoice (including the replayed duplicate, read back by the duplicate check).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './support/app';
import { FX, apInvoice, installPostingFixture, journal } from './support/posting-fixture';

let t: TestApp;

before(async () => {
  t = await startTestApp();
  await installPostingFixture(t.knex);
});
after(async () => {
  await t?.close();
});

async function queried(entity: string, id: string): Promise<Record<string, unknown>> {
  const res = await t.post(`/api/v3/${entity}/query`, { filters: { match: { field: 'id', operator: '=', value: id } }, children: ['lines'] });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.length, 1, `${entity} ${id} found by the query`);
  return res.body.data[0];
}

/** Field by field (and no field on one side only), lines included, so a failure names the field. */
function assertSameRecord(written: Record<string, any>, read: Record<string, any>, what: string): void {
  assert.deepEqual(Object.keys(written).sort(), Object.keys(read).sort(), `${what}: the same fields`);
  for (const [field, value] of Object.entries(read)) {
    if (field === 'lines') continue;
    assert.deepStrictEqual(written[field], value, `${what}.${field}`);
  }
  assert.equal(written.lines.length, read.lines.length, `${what}.lines`);
  read.lines.forEach((line: Record<string, unknown>, i: number) => {
    assert.deepEqual(Object.keys(written.lines[i]).sort(), Object.keys(line).sort(), `${what}.lines[${i}]: the same fields`);
    for (const [field, value] of Object.entries(line)) assert.deepStrictEqual(written.lines[i][field], value, `${what}.lines[${i}].${field}`);
  });
}

test('a journal: document and ledgerTransaction equal the ledger-transactions query record', async () => {
  const res = await t.post('/api/v3/ledger-transactions', journal('RB-J-1', { description: 'Read back' }));
  assert.equal(res.status, 200, res.text);
  const { document, ledgerTransaction } = res.body;
  const read = await queried('ledger-transactions', document.id);
  assertSameRecord(document, read, 'document');
  assertSameRecord(ledgerTransaction, read, 'ledgerTransaction');
  assert.equal(document.debitTotal, 120.15);
  assert.equal(document.lines[0].debitAmount, 100.1);
});

test('an AP invoice: document equals the ap-invoices query record, ledgerTransaction the ledger-transactions one', async () => {
  const body = apInvoice('RB-I-1', 3, { orderNumber: 'PO-77', retainage: 2.5 });
  const res = await t.post('/api/v3/ap-invoices', body);
  assert.equal(res.status, 200, res.text);
  const { document, ledgerTransaction } = res.body;
  assertSameRecord(document, await queried('ap-invoices', document.id), 'document');
  assertSameRecord(ledgerTransaction, await queried('ledger-transactions', ledgerTransaction.id), 'ledgerTransaction');
  assert.equal(document.orderNumber, 'PO-77');
  assert.equal(document.retainage, 2.5);
  assert.equal(document.lines[0].costCode, Number(FX.costCode));

  // The same invoice again: the duplicate check reads the existing one back the same way.
  const again = await t.post('/api/v3/ap-invoices', body);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepStrictEqual(again.body.document, document);
  assert.deepStrictEqual(again.body.ledgerTransaction, ledgerTransaction);
});

test('an AP invoice in Review: the document equals the query record and there is no ledgerTransaction', async () => {
  const res = await t.post('/api/v3/ap-invoices', apInvoice('RB-I-2', 1, { status: 2 }));
  assert.equal(res.status, 200, res.text);
  assert.equal('ledgerTransaction' in res.body, false);
  assertSameRecord(res.body.document, await queried('ap-invoices', res.body.document.id), 'document');
});
