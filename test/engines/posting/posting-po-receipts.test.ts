/**
 * POST /purchase-order-receipts (source 13) on the seeded demo company: the required
 * Idempotency-Key, received to date, the Review invoice that posts, its journal, job costs, stock
 * into the order's location, automatic close, over-receipt (accepted, reported per line), and the
 * refusals; over HTTP and in the database, with the books' invariants (test/support/invariants.ts)
 * checked after every write.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { assertProblem } from '../../support/http';
import { assertBooksInvariants } from '../../support/invariants';
import { bookFootprint, countRows, openSeedJobOrder } from '../../support/posting-fixture';
import { Dec } from '../../../src/storage/decimal';
import { dialectFor, type Dialect } from '../../../src/storage/dialect';

let t: TestApp;
let dialect: Dialect;
const PATH = '/api/v3/purchase-order-receipts';
/** An Open stock order of the seed: location 1 (Main warehouse, account 1210), parts on every line, nothing received. */
const STOCK_PO = 'PO26-000065';
const AP_CONTROL = 2010;

useTestApp((app) => {
  t = app;
  dialect = dialectFor(app.engine);
});

function receive(body: unknown, key: string | null = `po-${randomUUID()}`, query = '') {
  const req = t.http.post(PATH + query).set('x-api-key', t.apiKey).set('Content-Type', 'application/json');
  if (key !== null) req.set('Idempotency-Key', key);
  return req.send(body as object);
}

const dec = (raw: unknown, scale: number) => dialect.decodeDecimal(raw, scale) ?? new Dec(0);
async function rows<T = Record<string, any>>(sql: string, bindings: readonly unknown[] = []): Promise<T[]> {
  const result = await t.knex.raw(sql, bindings as Knex.RawBinding[]);
  return (Array.isArray(result) ? result : result.rows) as T[];
}

/**
 * The books' invariants over the whole database (support/invariants.ts: journals, balances, stock,
 * received to date, job costs...), and what holds for receipts in this file, where every invoice
 * of an order is a receipt: it posts under source 13 and credits its whole total to AP control.
 */
async function assertInvariants(): Promise<void> {
  await assertBooksInvariants(t.knex);
  const [wrongSource] = await rows<{ n: number }>('select count(*) as n from acpinv i join lgrtrn t on t.recnum = i.lgrrec where i.ordnum is not null and t.srcnum <> 13');
  assert.equal(Number(wrongSource!.n), 0, 'receipts post under source 13');
  const [setup] = await rows<{ apcact: number }>('select apcact from lgrstp');
  const apMismatch = await rows(
    `select i.recnum from acpinv i where i.lgrrec is not null
        and i.invttl <> (select sum(l.crdamt) from lgtnln l join lgrtrn t on t._idnum = l._idref where t.recnum = i.lgrrec and l.lgract = ?)`,
    [setup!.apcact],
  );
  assert.deepEqual(apMismatch.slice(0, 5), [], 'AP invoice total = credit to AP control');
}

async function poLine(orderNumber: string, lineNumber: number): Promise<{ received: string; status: number; receivedTotal: string }> {
  const order = await t.knex('pchord').where({ ordnum: orderNumber }).first();
  const line = await t.knex('pcorln').where({ _idref: order._idnum, linnum: lineNumber }).first();
  return { received: dec(line.rcvdte, 4).toFixed(), status: Number(order.status), receivedTotal: dec(order.rcvttl, 2).toFixed(2) };
}

/** The PO line's quantities as stored: ordered, received to date, cancelled (exact). */
async function poQuantities(orderNumber: string, lineNumber: number): Promise<{ ordered: Dec; received: Dec; cancelled: Dec }> {
  const order = await t.knex('pchord').where({ ordnum: orderNumber }).first();
  const line = await t.knex('pcorln').where({ _idref: order._idnum, linnum: lineNumber }).first();
  return { ordered: dec(line.linqty, 4), received: dec(line.rcvdte, 4), cancelled: dec(line.cancel, 4) };
}

/** The public contract (what /openapi.json serves and generated clients are built from). */
const CONTRACT = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'generated', 'openapi.public.json'), 'utf8'));
const RECEIPT_OPERATION = CONTRACT.paths['/purchase-order-receipts'].post;

/** A new Open job order modelled on the seed's job order (support/posting-fixture.ts). */
function openJobOrder(orderNumber: string, options: { orderType?: number; cancelLine2?: number } = {}): Promise<void> {
  return openSeedJobOrder(t.knex, orderNumber, options);
}

test('the Idempotency-Key is required: missing is 400 IDEMPOTENCY_KEY_INVALID and writes nothing; a dry run needs none and writes nothing', async () => {
  const before = await poLine(STOCK_PO, 1);
  const invoices = await countRows(t.knex, 'acpinv');
  const body = { orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 5 }] };
  const res = await receive(body, null);
  const problem = assertProblem(res, 'IDEMPOTENCY_KEY_INVALID', PATH);
  assert.deepEqual(problem.errors.map((e: any) => [e.field, e.code]), [['Idempotency-Key', 'required']], 'the write runner refuses it, not the request validator');
  assert.deepEqual(await poLine(STOCK_PO, 1), before);

  const dry = await receive(body, null, '?dryRun=true');
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.body.dryRun, true);
  assert.equal(dry.body.document.lines[0].receivedToDate, Number(before.received) + 5, 'the dry run shows what would be');
  assert.equal(dry.body.inventory.length, 1);
  assert.deepEqual(await poLine(STOCK_PO, 1), before, 'nothing received');
  assert.equal(await countRows(t.knex, 'acpinv'), invoices, 'no invoice');
  assert.equal(await countRows(t.knex, 'lgrtrn', { recnum: dry.body.ledgerTransaction.recordNumber }), 0, 'no journal');
  await assertInvariants();
});

test('the contract declares the Idempotency-Key required on /purchase-order-receipts (generated clients require it); a dry run may still omit it', () => {
  const parameter = RECEIPT_OPERATION.parameters
    .map((p: any) => (p.$ref ? p.$ref.split('/').reduce((at: any, k: string) => (k === '#' ? CONTRACT : at[k]), CONTRACT) : p))
    .find((p: any) => p.in === 'header' && p.name === 'Idempotency-Key');
  assert.ok(parameter, 'the operation declares the header');
  assert.equal(parameter.required, true);
  assert.match(parameter.description, /dry run/i, 'the description says the server is more lenient on dry runs');
  assert.ok(RECEIPT_OPERATION.responses['200'].content['application/json'].schema, 'the result is declared');
});

test('a job order receipt: adds to received to date, a Review invoice that posts on source 13, job costs, order Received', async () => {
  await openJobOrder('TPO-JOB-1');
  const ap = await rows<{ c: unknown }>('select sum(crdtot) as c from lgrbal where lgract = ?', [AP_CONTROL]);
  const res = await receive({ orderNumber: 'TPO-JOB-1', receiptDate: '2026-11-16', vendorInvoiceNumber: 'V-1001', lines: [{ lineNumber: 1, updateQuantity: 4 }, { lineNumber: 2, updateQuantity: 2.5, unitCost: 13.1 }] });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied');
  const { document, ledgerTransaction, jobCosts, inventory } = res.body;
  assert.equal(res.body.dryRun, false);
  assert.equal(res.body.period, 11);
  assert.equal(res.body.year, 2026);
  assert.deepEqual(inventory, [], 'a job order moves no stock');
  // 4 x 12.50 = 50.00; 2.5 x 13.10 = 32.75
  assert.deepEqual(document.lines.map((l: any) => [l.lineNumber, l.updateQuantity, l.unitCost, l.extendedTotal, l.receivedToDate, l.intoStock]), [
    [1, 4, 12.5, 50, 4, false],
    [2, 2.5, 13.1, 32.75, 2.5, false],
  ]);
  assert.equal(document.receivedTotal, 82.75);
  assert.equal(document.closedOrder, false);
  assert.equal(document.purchaseOrder.status, 3, 'Open becomes Received');
  assert.equal(document.purchaseOrder.receivedTotal, 82.75);
  const inv = document.payableInvoice;
  assert.equal(inv.status, 2, 'the invoice is in Review');
  assert.equal(inv.invoiceNumber, 'V-1001');
  assert.equal(inv.orderNumber, 'TPO-JOB-1');
  assert.equal(inv.invoiceTotal, 82.75);
  assert.equal(inv.ledgerRecordNumber, ledgerTransaction.recordNumber, 'yet it is posted');
  assert.equal(ledgerTransaction.sourceNumber, 13);
  assert.deepEqual(ledgerTransaction.lines.map((l: any) => [l.ledgerAccount, l.debitAmount, l.creditAmount, l.jobNumber]), [
    [5010, 50, 0, 2607],
    [5010, 32.75, 0, 2607],
    [AP_CONTROL, 0, 82.75, null],
  ]);
  assert.deepEqual(jobCosts.map((c: any) => [c.jobNumber, c.costCode, c.costType, c.costAmount, c.sourceNumber, c.sourceRecordNumber, c.sourceLineNumber, c.documentNumber]), [
    [2607, 5.2, 1, 50, 13, inv.recordNumber, 1, 'V-1001'],
    [2607, 2.5, 1, 32.75, 13, inv.recordNumber, 2, 'V-1001'],
  ]);
  // In the database.
  assert.deepEqual(await poLine('TPO-JOB-1', 1), { received: '4', status: 3, receivedTotal: '82.75' });
  assert.equal((await poLine('TPO-JOB-1', 2)).received, '2.5');
  const header = await t.knex('acpinv').where({ recnum: inv.recordNumber }).first();
  assert.equal(Number(header.status), 2);
  assert.equal(header.ordnum, 'TPO-JOB-1');
  assert.equal(Number(header.lgrrec), ledgerTransaction.recordNumber);
  assert.equal(await countRows(t.knex, 'lgrtrn', { recnum: ledgerTransaction.recordNumber, srcnum: 13 }), 1);
  assert.equal(await countRows(t.knex, 'jobcst', { srcnum: 13, srcrec: inv.recordNumber }), 2);
  const apAfter = await rows<{ c: unknown }>('select sum(crdtot) as c from lgrbal where lgract = ?', [AP_CONTROL]);
  assert.equal(dec(apAfter[0]!.c, 2).minus(dec(ap[0]!.c, 2)).toFixed(2), '82.75');
  await assertInvariants();
});

test('an identical second receipt under another key is received again; the same key replays without receiving twice', async () => {
  await openJobOrder('TPO-JOB-2');
  const body = { orderNumber: 'TPO-JOB-2', receiptDate: '2026-11-16', vendorInvoiceNumber: 'V-2002', lines: [{ lineNumber: 1, updateQuantity: 3 }] };
  const k1 = `po-${randomUUID()}`;
  const first = await receive(body, k1);
  assert.equal(first.status, 200, first.text);
  const second = await receive(body, `po-${randomUUID()}`);
  assert.equal(second.status, 200, second.text);
  assert.equal(second.headers['idempotency-status'], 'applied');
  assert.equal(second.body.document.lines[0].receivedToDate, 6, 'nothing refuses an identical second receipt');
  assert.notEqual(second.body.document.payableInvoice.recordNumber, first.body.document.payableInvoice.recordNumber);
  assert.equal((await poLine('TPO-JOB-2', 1)).received, '6');

  const invoices = await countRows(t.knex, 'acpinv', { ordnum: 'TPO-JOB-2' });
  const replay = await receive(body, k1);
  assert.equal(replay.status, 200);
  assert.equal(replay.headers['idempotency-status'], 'replayed');
  assert.deepEqual(replay.body, first.body, 'the recorded response');
  assert.equal((await poLine('TPO-JOB-2', 1)).received, '6', 'not received a third time');
  assert.equal(await countRows(t.knex, 'acpinv', { ordnum: 'TPO-JOB-2' }), invoices);
  assert.equal(invoices, 2);
  await assertInvariants();
});

test('a stock order receipt puts the parts into the order location at the receipt cost, debiting its inventory account', async () => {
  const cell = async (part: number) => {
    const r = await t.knex('invqty').where({ prtnum: part, locnum: 1 }).first();
    return { onHand: dec(r.qtyohn, 4), available: dec(r.qtyavl, 4), onOrder: dec(r.qtyord, 4) };
  };
  const before1 = await cell(247);
  const before3 = await cell(66);
  const res = await receive({ orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 20 }, { lineNumber: 3, updateQuantity: 1, unitCost: 485.25 }] });
  assert.equal(res.status, 200, res.text);
  const { document, ledgerTransaction, jobCosts, inventory } = res.body;
  assert.deepEqual(jobCosts, [], 'stock is not a job cost');
  assert.ok(document.lines.every((l: any) => l.intoStock));
  // line 1: 20 x 10.3376 = 206.752 -> 206.75; line 3: 1 x 485.25
  assert.deepEqual(document.lines.map((l: any) => l.extendedTotal), [206.75, 485.25]);
  assert.deepEqual(inventory.map((m: any) => [m.partNumber, m.locationNumber, m.movementType, m.quantity, m.extendedCost, m.sourceNumber, m.sourceRecordNumber]), [
    [247, 1, 1, 20, 206.75, 13, document.payableInvoice.recordNumber],
    [66, 1, 1, 1, 485.25, 13, document.payableInvoice.recordNumber],
  ]);
  assert.deepEqual(ledgerTransaction.lines.map((l: any) => [l.ledgerAccount, l.debitAmount, l.creditAmount]), [
    [1210, 206.75, 0],
    [1210, 485.25, 0],
    [AP_CONTROL, 0, 692],
  ]);
  assert.equal(document.invoiceNumber, `RCV${document.payableInvoice.recordNumber}`, 'the default invoice number');
  const after1 = await cell(247);
  const after3 = await cell(66);
  assert.equal(after1.onHand.minus(before1.onHand).toFixed(), '20');
  assert.equal(after1.available.minus(before1.available).toFixed(), '20');
  assert.equal(before1.onOrder.minus(after1.onOrder).toFixed(), '20', 'no longer on order');
  assert.equal(after3.onHand.minus(before3.onHand).toFixed(), '1');
  assert.equal((await poLine(STOCK_PO, 1)).received, '20');
  assert.equal((await poLine(STOCK_PO, 1)).status, 3);
  await assertInvariants();
});

test('automatic close: the order type closes it once received + cancelled = ordered on every line; a Closed order still receives and stays Closed; a Void order is 422 DOCUMENT_NOT_POSTABLE', async () => {
  await openJobOrder('TPO-JOB-3', { cancelLine2: 4 });
  const lineCount = await t.knex('pcorln').join('pchord', 'pchord._idnum', 'pcorln._idref').where('pchord.ordnum', 'TPO-JOB-3').count<{ n: number }[]>({ n: '*' });
  const n = Number(lineCount[0]!.n);
  const rest = Array.from({ length: n }, (_, i) => ({ lineNumber: i + 1, updateQuantity: i + 1 === 2 ? 6 : 10 }));
  const partial = await receive({ orderNumber: 'TPO-JOB-3', receiptDate: '2026-11-16', lines: rest.slice(0, 1) });
  assert.equal(partial.status, 200, partial.text);
  assert.equal(partial.body.document.closedOrder, false);
  const done = await receive({ orderNumber: 'TPO-JOB-3', receiptDate: '2026-11-16', lines: rest.slice(1) });
  assert.equal(done.status, 200, done.text);
  assert.equal(done.body.document.closedOrder, true);
  assert.equal(done.body.document.purchaseOrder.status, 4);
  assert.equal((await poLine('TPO-JOB-3', 1)).status, 4);
  await assertInvariants();

  // The identical second receipt of the one that closed the order: received again, the order stays Closed.
  const again = await receive({ orderNumber: 'TPO-JOB-3', receiptDate: '2026-11-16', lines: rest.slice(1) });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.body.document.closedOrder, false, 'this receipt did not close it: it was Closed already');
  assert.equal(again.body.document.purchaseOrder.status, 4);
  assert.deepEqual(
    again.body.document.lines.map((l: any) => [l.lineNumber, l.receivedToDate, l.overReceived]),
    rest.slice(1).map((l) => [l.lineNumber, 2 * l.updateQuantity, l.updateQuantity]),
  );
  assert.deepEqual(await poLine('TPO-JOB-3', 2), { received: '12', status: 4, receivedTotal: again.body.document.purchaseOrder.receivedTotal.toFixed(2) });
  await assertInvariants();

  // A Void order receives nothing.
  await openJobOrder('TPO-JOB-3V');
  await t.knex('pchord').where({ ordnum: 'TPO-JOB-3V' }).update({ status: 5 });
  const invoices = await countRows(t.knex, 'acpinv');
  const res = await receive({ orderNumber: 'TPO-JOB-3V', receiptDate: '2026-11-16', lines: [{ lineNumber: 1, updateQuantity: 1 }] });
  const problem = assertProblem(res, 'DOCUMENT_NOT_POSTABLE', PATH);
  assert.deepEqual(problem.errors.map((e: any) => e.field), ['orderNumber']);
  assert.match(problem.detail, /Void/);
  assert.equal(await countRows(t.knex, 'acpinv'), invoices);
  assert.equal((await poLine('TPO-JOB-3V', 1)).received, '0');

  // A type without automatic close: complete, but stays Received.
  await openJobOrder('TPO-JOB-4', { orderType: 3 });
  const all = await receive({ orderNumber: 'TPO-JOB-4', receiptDate: '2026-11-16', lines: Array.from({ length: n }, (_, i) => ({ lineNumber: i + 1, updateQuantity: 10 })) });
  assert.equal(all.status, 200, all.text);
  assert.equal(all.body.document.closedOrder, false);
  assert.equal(all.body.document.purchaseOrder.status, 3);
  await assertInvariants();
});

test('over-receipt is accepted: received to date goes beyond the order and each line reports its excess in overReceived', async () => {
  await openJobOrder('TPO-JOB-5', { cancelLine2: 3 });
  // Line 1: 10 ordered; line 2: 10 ordered, 3 cancelled, so 7 open.
  const res = await receive({ orderNumber: 'TPO-JOB-5', receiptDate: '2026-11-16', lines: [{ lineNumber: 1, updateQuantity: 10 }, { lineNumber: 2, updateQuantity: 7.5 }] });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body.document.lines.map((l: any) => [l.lineNumber, l.updateQuantity, l.receivedToDate, l.overReceived]), [
    [1, 10, 10, 0],
    [2, 7.5, 7.5, 0.5],
  ]);
  assert.equal((await poLine('TPO-JOB-5', 1)).received, '10');
  assert.equal((await poLine('TPO-JOB-5', 2)).received, '7.5');
  await assertInvariants();
  const more = await receive({ orderNumber: 'TPO-JOB-5', receiptDate: '2026-11-16', lines: [{ lineNumber: 1, updateQuantity: 4.25 }] });
  assert.equal(more.status, 200, more.text);
  assert.deepEqual(more.body.document.lines.map((l: any) => [l.lineNumber, l.receivedToDate, l.overReceived]), [[1, 14.25, 4.25]]);
  const orderLine = more.body.document.purchaseOrder.lines.find((l: any) => l.lineNumber === 1);
  assert.equal(orderLine.receivedToDate, 14.25);
  assert.equal(orderLine.quantity, 10);
  assert.equal((await poLine('TPO-JOB-5', 1)).received, '14.25');
  assert.equal(await countRows(t.knex, 'acpinv', { ordnum: 'TPO-JOB-5' }), 2);
  await assertInvariants();
});

test('unknown order or lines are 404 REFERENCE_NOT_FOUND naming each', async () => {
  let res = await receive({ orderNumber: 'NO-SUCH-PO', receiptDate: '2026-11-16', lines: [{ lineNumber: 1, updateQuantity: 1 }] });
  let problem = assertProblem(res, 'REFERENCE_NOT_FOUND', PATH);
  assert.deepEqual(problem.errors.map((e: any) => e.field), ['orderNumber']);
  const before = await poLine(STOCK_PO, 2);
  res = await receive({ orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 2, updateQuantity: 1 }, { lineNumber: 77, updateQuantity: 1 }, { lineNumber: 99, updateQuantity: 1 }] });
  problem = assertProblem(res, 'REFERENCE_NOT_FOUND', PATH);
  assert.deepEqual(problem.errors.map((e: any) => e.field), ['lines[1].lineNumber', 'lines[2].lineNumber']);
  assert.deepEqual(await poLine(STOCK_PO, 2), before);
});

test('a receipt dated after the open period is 422 PERIOD_CLOSED naming receiptDate', async () => {
  await openJobOrder('TPO-JOB-6');
  const res = await receive({ orderNumber: 'TPO-JOB-6', receiptDate: '2026-12-03', lines: [{ lineNumber: 1, updateQuantity: 1 }] });
  const problem = assertProblem(res, 'PERIOD_CLOSED', PATH);
  assert.deepEqual(problem.errors.map((e: any) => e.field), ['receiptDate']);
  assert.equal((await poLine('TPO-JOB-6', 1)).received, '0');
});

test('bad input is 400 naming the field, before anything is written (the key is not consumed)', async () => {
  const base = { orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 2, updateQuantity: 1 }] };
  const cases: Array<[unknown, string]> = [
    [{ ...base, receiptDate: undefined }, 'receiptDate'],
    [{ ...base, orderNumber: undefined }, 'orderNumber'],
    [{ ...base, lines: [] }, 'lines'],
    [{ ...base, lines: [{ lineNumber: 2, updateQuantity: 0 }] }, 'lines[0].updateQuantity'],
    [{ ...base, lines: [{ lineNumber: 2, updateQuantity: -1 }] }, 'lines[0].updateQuantity'],
    [{ ...base, lines: [{ lineNumber: 2, updateQuantity: 1.00001 }] }, 'lines[0].updateQuantity'],
    [{ ...base, lines: [{ lineNumber: 2, updateQuantity: 1, unitCost: 1.23456 }] }, 'lines[0].unitCost'],
    [{ ...base, lines: [{ lineNumber: 2, updateQuantity: 1 }, { lineNumber: 2, updateQuantity: 1 }] }, 'lines[1].lineNumber'],
    [{ ...base, lines: [{ lineNumber: 2, quantity: 1 }] }, 'lines[0]'],
    [{ ...base, receivedBy: 'x' }, 'receivedBy'],
  ];
  const before = await poLine(STOCK_PO, 2);
  const k = `po-${randomUUID()}`;
  for (const [body, field] of cases) {
    const res = await receive(body, k);
    assert.equal(res.status, 400, `${field}: ${res.text}`);
    const fields: string[] = (res.body.errors ?? []).map((e: any) => e.field);
    assert.ok(fields.some((f) => f === field || f.startsWith(field)), `${field} named in ${JSON.stringify(res.body.errors)}`);
  }
  assert.deepEqual(await poLine(STOCK_PO, 2), before);
  const ok = await receive(base, k);
  assert.equal(ok.status, 200, `the key was not consumed: ${ok.text}`);
  assert.equal(ok.headers['idempotency-status'], 'applied');
  await assertInvariants();
});

test('concurrent receipts of one order are serialised: each sees the others, so received to date and the excess add up', async () => {
  await openJobOrder('TPO-JOB-7');
  const body = { orderNumber: 'TPO-JOB-7', receiptDate: '2026-11-16', lines: [{ lineNumber: 1, updateQuantity: 6 }] };
  const answers = await Promise.all([receive(body), receive(body), receive(body)]);
  for (const r of answers) assert.equal(r.status, 200, r.text);
  const seen = answers.map((r) => [r.body.document.lines[0].receivedToDate, r.body.document.lines[0].overReceived]).sort((a, b) => a[0] - b[0]);
  assert.deepEqual(seen, [
    [6, 0],
    [12, 2],
    [18, 8],
  ]);
  assert.equal((await poLine('TPO-JOB-7', 1)).received, '18');
  assert.equal(await countRows(t.knex, 'acpinv', { ordnum: 'TPO-JOB-7' }), 3);
  await assertInvariants();
});

test('a receipt at zero cost is received, enters its invoice, and posts nothing (no ledgerTransaction key, no job cost)', async () => {
  await openJobOrder('TPO-JOB-8');
  const journals = await countRows(t.knex, 'lgrtrn');
  const res = await receive({ orderNumber: 'TPO-JOB-8', receiptDate: '2026-11-16', lines: [{ lineNumber: 1, updateQuantity: 2, unitCost: 0 }] });
  assert.equal(res.status, 200, res.text);
  assert.equal('ledgerTransaction' in res.body, false);
  assert.deepEqual(res.body.jobCosts, []);
  assert.equal(res.body.document.payableInvoice.ledgerRecordNumber, null);
  assert.equal((await poLine('TPO-JOB-8', 1)).received, '2');
  assert.equal(await countRows(t.knex, 'lgrtrn'), journals);
  await assertInvariants();
});

test('a PO line on an equipment-expense account is 422 naming the received line (a PO line names no equipment, and its cost would miss the equipment ledger); nothing written', async () => {
  await openJobOrder('TPO-EQ-1');
  // No job, no location: line 1 posts to the seed's equipment repairs account (type 10).
  const order = await t.knex('pchord').where({ ordnum: 'TPO-EQ-1' }).first();
  await t.knex('pchord').where({ _idnum: order._idnum }).update({ jobnum: null });
  await t.knex('pcorln').where({ _idref: order._idnum, linnum: 1 }).update({ lgract: 6020, prtnum: null });
  const tables = ['acpinv', 'apivln', 'lgrtrn', 'lgtnln', 'jobcst', 'eqpcst', 'lgrbal', 'pcorln'];
  const before = await bookFootprint(t.knex, tables);
  const res = await receive({ orderNumber: 'TPO-EQ-1', receiptDate: '2026-11-16', lines: [{ lineNumber: 1, updateQuantity: 2 }] });
  const problem = assertProblem(res, 'BUSINESS_RULE_VIOLATED', PATH);
  assert.deepEqual(problem.errors.map((e: any) => [e.field, e.code]), [['lines[0].lineNumber', 'equipment_account']]);
  assert.equal((await poLine('TPO-EQ-1', 1)).received, '0');
  assert.deepEqual(await bookFootprint(t.knex, tables), before);
});

// Last in the file: it receives the seed's stock order (STOCK_PO) beyond what the tests above expect of it.
test("the contract's own example posted three times under three keys answers 200 three times; received to date grows by updateQuantity each time; over-receipt reported", async () => {
  const example = RECEIPT_OPERATION.requestBody.content['application/json'].examples.partial.value as {
    orderNumber: string;
    lines: Array<{ lineNumber: number; updateQuantity: number }>;
  };
  const invoices = await countRows(t.knex, 'acpinv', { ordnum: example.orderNumber });
  for (let round = 1; round <= 3; round += 1) {
    const before = await Promise.all(example.lines.map((l) => poQuantities(example.orderNumber, l.lineNumber)));
    const res = await receive(example, `po-example-${round}-${randomUUID()}`);
    assert.equal(res.status, 200, `round ${round}: ${res.text}`);
    assert.equal(res.headers['idempotency-status'], 'applied');
    for (const [i, l] of example.lines.entries()) {
      const after = await poQuantities(example.orderNumber, l.lineNumber);
      const expected = before[i]!.received.plus(new Dec(String(l.updateQuantity)));
      assert.equal(after.received.toFixed(), expected.toFixed(), `round ${round}, line ${l.lineNumber}: received to date grows by updateQuantity (database)`);
      const line = res.body.document.lines.find((x: any) => x.lineNumber === l.lineNumber);
      assert.equal(line.receivedToDate, Number(expected.toFixed()), `round ${round}, line ${l.lineNumber}: receivedToDate in the result`);
      const excess = Dec.max(after.received.plus(after.cancelled).minus(after.ordered), 0);
      assert.equal(line.overReceived, Number(excess.toFixed()), `round ${round}, line ${l.lineNumber}: overReceived`);
    }
    assert.equal(await countRows(t.knex, 'acpinv', { ordnum: example.orderNumber }), invoices + round, 'one invoice per receipt');
    await assertInvariants();
  }
  // Line 1 of the example: 57 ordered, 20 a receipt: the third receipt at the latest goes beyond the order.
  const line1 = await poQuantities(example.orderNumber, example.lines[0]!.lineNumber);
  assert.ok(line1.received.greaterThan(line1.ordered), `received ${line1.received.toFixed()} of ${line1.ordered.toFixed()} ordered: over-receipt accepted`);
});
