/**
 * One mapping for read-back: every record in a write result (`document`, `ledgerTransaction`,
 * `jobCosts[]`, `inventory[]`, and the purchase order and payable invoice of a receipt) is the
 * record POST /{entity}/query returns for the same id (with its lines), field by field: on the
 * journal, the AP invoice (including the replayed duplicate, read back by the duplicate check),
 * inventory allocations (consumption on a job, transfer, replay), PO receipts (job and stock orders),
 * service work order posting, service inventory items and payroll batches (records, equipment costs).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { randomUUID } from 'node:crypto';
import { FX, apInvoice, journal, openSeedJobOrder, seedAllocationToJob } from '../../support/posting-fixture';

let t: TestApp;

usePostingApp((app) => (t = app), { invariants: false });

/** Entities whose records are read with their `lines`. */
const WITH_LINES = new Set(['ledger-transactions', 'ap-invoices', 'inventory-allocations', 'purchase-orders', 'service-invoices']);

async function queried(entity: string, id: string): Promise<Record<string, unknown>> {
  const body: Record<string, unknown> = { filters: { match: { field: 'id', operator: '=', value: id } } };
  if (WITH_LINES.has(entity)) body.children = ['lines'];
  const res = await t.post(`/api/v3/${entity}/query`, body);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.length, 1, `${entity} ${id} found by the query`);
  return res.body.data[0];
}

/** Field by field (and no field on one side only), lines included, so a failure names the field. */
function assertSameRecord(written: Record<string, any>, read: Record<string, any>, what: string): void {
  assert.equal(typeof written, 'object', `${what}: present in the result`);
  assert.deepEqual(Object.keys(written).sort(), Object.keys(read).sort(), `${what}: the same fields`);
  for (const [field, value] of Object.entries(read)) {
    if (field === 'lines') continue;
    assert.deepStrictEqual(written[field], value, `${what}.${field}`);
  }
  if (!('lines' in read)) return;
  assert.equal(written.lines.length, read.lines.length, `${what}.lines`);
  read.lines.forEach((line: Record<string, unknown>, i: number) => {
    assert.deepEqual(Object.keys(written.lines[i]).sort(), Object.keys(line).sort(), `${what}.lines[${i}]: the same fields`);
    for (const [field, value] of Object.entries(line)) assert.deepStrictEqual(written.lines[i][field], value, `${what}.lines[${i}].${field}`);
  });
}

/** Each record of a result array equals the query record of its id, in the order of the result. */
async function assertSameRecords(written: Array<Record<string, any>>, entity: string, what: string): Promise<void> {
  for (const [i, record] of written.entries()) assertSameRecord(record, await queried(entity, record.id), `${what}[${i}]`);
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

// Inventory allocations and PO receipts run on the seeded demo company's stock, jobs and orders.
const ALLOCATION_DATE = '2026-11-20';
const PART = { concrete: 72, drywall: 187 } as const;

function allocation(number: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return seedAllocationToJob(number, [3, 2.5], { allocationDate: ALLOCATION_DATE, description: 'Read back', ...overrides });
}

test('an inventory allocation consumed on a job: document, jobCosts, inventory and ledgerTransaction equal their query records', async () => {
  const body = allocation('RB-A-1');
  const res = await t.post('/api/v3/inventory-allocations', body);
  assert.equal(res.status, 200, res.text);
  const { document, jobCosts, inventory, ledgerTransaction } = res.body;
  assertSameRecord(document, await queried('inventory-allocations', document.id), 'document');
  assertSameRecord(ledgerTransaction, await queried('ledger-transactions', ledgerTransaction.id), 'ledgerTransaction');
  assert.equal(jobCosts.length, 2, 'a job cost per line');
  await assertSameRecords(jobCosts, 'job-costs', 'jobCosts');
  assert.equal(inventory.length, 2, 'a movement per line');
  await assertSameRecords(inventory, 'inventory-histories', 'inventory');
  // The records are the document's: its lines, its source and record number.
  assert.deepEqual(document.lines.map((l: any) => [l.partNumber, l.quantity]), [[PART.concrete, 3], [PART.drywall, 2.5]]);
  assert.deepEqual(jobCosts.map((c: any) => [c.sourceNumber, c.sourceRecordNumber, c.sourceLineNumber, c.costAmount]), document.lines.map((l: any) => [23, document.recordNumber, l.lineNumber, l.extendedCost]));
  assert.deepEqual(inventory.map((m: any) => [m.sourceNumber, m.sourceRecordNumber, m.partNumber, m.quantity]), [[23, document.recordNumber, PART.concrete, -3], [23, document.recordNumber, PART.drywall, -2.5]]);

  // The identical allocation again: the duplicate check reads every record back the same way.
  const again = await t.post('/api/v3/inventory-allocations', body);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  for (const part of ['document', 'jobCosts', 'inventory', 'ledgerTransaction'] as const) assert.deepStrictEqual(again.body[part], res.body[part], `replayed ${part}`);
});

test('an inventory allocation transfer: both movements equal their inventory-histories records; a stored-only one has none', async () => {
  const res = await t.post('/api/v3/inventory-allocations', allocation('RB-A-2', { purpose: 1, toLocation: 2, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 1.25 }] }));
  assert.equal(res.status, 200, res.text);
  assertSameRecord(res.body.document, await queried('inventory-allocations', res.body.document.id), 'document');
  assert.deepEqual(res.body.inventory.map((m: any) => [m.locationNumber, m.quantity]), [[1, -1.25], [2, 1.25]]);
  await assertSameRecords(res.body.inventory, 'inventory-histories', 'inventory');
  assert.deepEqual(res.body.jobCosts, []);

  const open = await t.post('/api/v3/inventory-allocations', allocation('RB-A-3', { status: 1 }));
  assert.equal(open.status, 200, open.text);
  assertSameRecord(open.body.document, await queried('inventory-allocations', open.body.document.id), 'document');
  assert.deepEqual([open.body.inventory, open.body.jobCosts, 'ledgerTransaction' in open.body], [[], [], false]);
});

function receive(body: Record<string, unknown>, key = `rb-${randomUUID()}`) {
  return t.http.post('/api/v3/purchase-order-receipts').set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body);
}

/** A receipt's order, invoice, journal, job costs and movements equal their query records. */
async function assertReceiptRecords(result: Record<string, any>): Promise<void> {
  const { document, ledgerTransaction } = result;
  assertSameRecord(document.purchaseOrder, await queried('purchase-orders', document.purchaseOrder.id), 'document.purchaseOrder');
  assertSameRecord(document.payableInvoice, await queried('ap-invoices', document.payableInvoice.id), 'document.payableInvoice');
  assertSameRecord(ledgerTransaction, await queried('ledger-transactions', ledgerTransaction.id), 'ledgerTransaction');
  await assertSameRecords(result.jobCosts, 'job-costs', 'jobCosts');
  await assertSameRecords(result.inventory, 'inventory-histories', 'inventory');
}

/** The receipt's own lines are its order's lines and its invoice's lines, joined by line number. */
function assertReceiptLines(document: Record<string, any>, sent: Array<{ lineNumber: number; updateQuantity: number }>): void {
  assert.deepEqual(document.lines.map((l: any) => [l.lineNumber, l.updateQuantity]), sent.map((l) => [l.lineNumber, l.updateQuantity]));
  for (const line of document.lines) {
    const orderLine = document.purchaseOrder.lines.find((l: any) => l.lineNumber === line.lineNumber);
    const invoiceLine = document.payableInvoice.lines.find((l: any) => l.lineNumber === line.lineNumber);
    assert.deepEqual([line.partNumber, line.receivedToDate], [orderLine.partNumber, orderLine.receivedToDate], `line ${line.lineNumber}: the order line`);
    assert.deepEqual([line.updateQuantity, line.unitCost, line.extendedTotal], [invoiceLine.quantity, invoiceLine.unitPrice, invoiceLine.extendedTotal], `line ${line.lineNumber}: the invoice line`);
  }
  assert.deepEqual([document.invoiceRecordNumber, document.invoiceNumber, document.receivedTotal], [document.payableInvoice.recordNumber, document.payableInvoice.invoiceNumber, document.payableInvoice.invoiceTotal]);
}

test('a PO receipt of a job order: purchaseOrder, payableInvoice, jobCosts and ledgerTransaction equal their query records', async () => {
  await openSeedJobOrder(t.knex, 'RB-PO-1');
  const sent = [
    { lineNumber: 1, updateQuantity: 4 },
    { lineNumber: 2, updateQuantity: 2.5 },
  ];
  const key = `rb-${randomUUID()}`;
  const res = await receive({ orderNumber: 'RB-PO-1', receiptDate: ALLOCATION_DATE, lines: sent }, key);
  assert.equal(res.status, 200, res.text);
  const { document, jobCosts, inventory } = res.body;
  await assertReceiptRecords(res.body);
  assert.equal(jobCosts.length, 2, 'a job cost per job line');
  assert.deepEqual(inventory, []);
  assertReceiptLines(document, sent);
  assert.deepEqual(document.purchaseOrder.lines.slice(0, 2).map((l: any) => l.receivedToDate), [4, 2.5]);
  assert.deepEqual(jobCosts.map((c: any) => [c.sourceNumber, c.sourceRecordNumber, c.costAmount]), [[13, document.invoiceRecordNumber, 50], [13, document.invoiceRecordNumber, 31.25]]);

  // The same key replays the same records.
  const again = await receive({ orderNumber: 'RB-PO-1', receiptDate: ALLOCATION_DATE, lines: sent }, key);
  assert.equal(again.status, 200, again.text);
  assert.deepStrictEqual(again.body.document, document);
  assert.deepStrictEqual(again.body.jobCosts, jobCosts);
});

test('a PO receipt of a stock order: inventory movements, purchaseOrder and payableInvoice equal their query records', async () => {
  const sent = [{ lineNumber: 1, updateQuantity: 2 }];
  const res = await receive({ orderNumber: 'PO26-000065', receiptDate: ALLOCATION_DATE, lines: sent });
  assert.equal(res.status, 200, res.text);
  const { document, jobCosts, inventory } = res.body;
  await assertReceiptRecords(res.body);
  assert.equal(inventory.length, 1, 'one movement into the location');
  assert.deepEqual([inventory[0].sourceNumber, inventory[0].sourceRecordNumber, inventory[0].quantity, inventory[0].locationNumber], [13, document.invoiceRecordNumber, 2, 1]);
  assert.deepEqual(jobCosts, []);
  assertReceiptLines(document, sent);
});

// Service: the seeded demo company's Open work orders (db/seed/ar.ts), parts from the truck location.
const SERVICE = { truck: 3, receivable: 1120, costOfGoods: 5200, client: 12, site: 9 } as const;

/** An Open (status 1), not yet posted service work order with a part line (the seed leaves some). */
async function openWorkOrderWithParts(): Promise<number> {
  const row = await t
    .knex('srvinv')
    .where({ status: 1 })
    .whereNull('lgrrec')
    .whereExists(t.knex('srvlin').whereRaw('srvlin._idref = srvinv._idnum').where({ lintyp: 2 }))
    .orderBy('recnum')
    .first('recnum');
  assert.ok(row, 'the seed leaves an Open, unposted work order with parts');
  return Number(row.recnum);
}

test('a service work order posted: document, ledgerTransaction and inventory equal their query records', async () => {
  const recordNumber = await openWorkOrderWithParts();
  const res = await t.post('/api/v3/service-invoices/post', { recordNumber, partsLocation: SERVICE.truck, receivableAccount: SERVICE.receivable, costOfGoodsAccount: SERVICE.costOfGoods });
  assert.equal(res.status, 200, res.text);
  const { document, ledgerTransaction, inventory, jobCosts } = res.body;
  assertSameRecord(document, await queried('service-invoices', document.id), 'document');
  assertSameRecord(ledgerTransaction, await queried('ledger-transactions', ledgerTransaction.id), 'ledgerTransaction');
  assert.ok(inventory.length > 0, 'the parts moved');
  await assertSameRecords(inventory, 'inventory-histories', 'inventory');
  assert.deepEqual(jobCosts, []);
  assert.deepEqual([document.recordNumber, document.ledgerRecordNumber, document.workStatus], [recordNumber, ledgerTransaction.recordNumber, 5]);
  assert.ok(document.lines.some((l: any) => l.lineType === 2 && l.unitCost > 0), 'a part line carries its cost');
});

test('a service inventory item: document equals the service-inventories query record', async () => {
  const res = await t.post('/api/v3/service-inventories', { clientNumber: SERVICE.client, serviceLocation: SERVICE.site, description: 'Read back unit', manufacturer: 'Rheem', serialNumber: 'RB-SN-1', installDate: '2026-03-01', warrantyEnds: '2028-03-01' });
  assert.equal(res.status, 200, res.text);
  assertSameRecord(res.body.document, await queried('service-inventories', res.body.document.id), 'document');
  assert.deepEqual([res.body.document.serialNumber, res.body.document.warrantyEnds], ['RB-SN-1', '2028-03-01']);
});

test('a payroll batch: records, equipment costs, jobCosts and ledgerTransaction equal their query records', async () => {
  const computed = await t.knex('payrec').where({ status: 2 }).orderBy('recnum').first('prdend');
  assert.ok(computed, 'the seed leaves Computed payroll records');
  const periodEndDate = typeof computed.prdend === 'string' ? computed.prdend.slice(0, 10) : new Date(computed.prdend).toISOString().slice(0, 10);
  const res = await t.post('/api/v3/payroll-records/post', { periodEndDate });
  assert.equal(res.status, 200, res.text);
  const { document, ledgerTransaction, jobCosts } = res.body;
  assert.ok(document.records.length > 0 && document.equipmentCosts.length > 0 && jobCosts.length > 0, 'records, shop and job lines');
  await assertSameRecords(document.records, 'payroll-records', 'document.records');
  await assertSameRecords(document.equipmentCosts, 'equipment-costs', 'document.equipmentCosts');
  await assertSameRecords(jobCosts, 'job-costs', 'jobCosts');
  assertSameRecord(ledgerTransaction, await queried('ledger-transactions', ledgerTransaction.id), 'ledgerTransaction');
  assert.ok(document.records.every((r: any) => r.status === 3 && r.ledgerRecordNumber === ledgerTransaction.recordNumber));
  // The batch totals stay the sums of its records.
  const sum = (field: string) => document.records.reduce((s: number, r: any) => s + Math.round(r[field] * 100), 0) / 100;
  assert.deepEqual([document.grossPay, document.deductions, document.netPay], [sum('grossPay'), sum('deductions'), sum('netPay')]);
});
