/**
 * Values a write DERIVES from valid request values (a journal's totals, quantity x cost, a due
 * date = a date + the terms days) may exceed the column that stores them: SQLite stored them and
 * the read-back answered 502 STORED_VALUE_UNREADABLE (a 502 asks for retries, and is replayed
 * under the key), PostgreSQL refused them as 400 VALUE_OUT_OF_RANGE without a field. Every engine
 * now answers 400 VALUE_OUT_OF_RANGE naming the request field behind the value, before any of the
 * write's SQL; what the body alone decides is decided before dispatch (the Idempotency-Key is not
 * consumed), what needs a record of the books (a vendor's terms, an order line's cost) is stored
 * under the key as every answer of the engine is (docs/decisions/0440).
 */
import { randomUUID } from 'node:crypto';
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { FX, apInvoice, bookFootprint, journal } from '../../support/posting-fixture';

let t: TestApp;
usePostingApp((app) => (t = app));

/** decimal(14, 2): the largest amount a money column stores. */
const MAX_MONEY = 999999999999.99;
/** An Open stock order of the seed: location 1, parts on every line, nothing received (line 3 costs 486.6147). */
const STOCK_PO = 'PO26-000065';
/** What a posting writes: none may move when it is refused (bookFootprint also reads the data change counter). */
const BOOK_TABLES = ['lgrtrn', 'lgtnln', 'lgrbal', 'acpinv', 'jobcst', 'invhst', 'idmkey'] as const;

function post(path: string, body: unknown, key: string) {
  return t.http.post(path).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

function fieldsOf(body: Record<string, any>): Array<[string, string]> {
  return (body.errors ?? []).map((e: any) => [e.field, e.code]);
}

test('(a) a journal whose lines are each within their bound but whose totals are not: 400 VALUE_OUT_OF_RANGE naming lines, nothing written, the key not consumed', async () => {
  const A = FX.accounts;
  const body = journal('DL-JT-1', {
    lines: [
      { lineNumber: 1, ledgerAccount: A.overhead, description: 'Debit', debitAmount: MAX_MONEY },
      { lineNumber: 2, ledgerAccount: A.directExpense, description: 'Debit', debitAmount: MAX_MONEY },
      { lineNumber: 3, ledgerAccount: A.cash, description: 'Credit', creditAmount: MAX_MONEY },
      { lineNumber: 4, ledgerAccount: A.wip, description: 'Credit', creditAmount: MAX_MONEY },
    ],
  });
  const before = await bookFootprint(t.knex, BOOK_TABLES);
  const key = `dl-${randomUUID()}`;
  const res = await post('/api/v3/ledger-transactions', body, key);
  const problem = assertProblem(res, 'VALUE_OUT_OF_RANGE');
  assert.deepEqual(fieldsOf(problem), [
    ['lines', 'range'],
    ['lines', 'range'],
  ]);
  assert.match(problem.detail, /1999999999999\.98/);
  assert.equal(res.headers['idempotency-status'], undefined, 'decided before dispatch: nothing happened under the key');
  // A dry run is refused the same way.
  const dry = await post('/api/v3/ledger-transactions?dryRun=true', body, `dl-${randomUUID()}`);
  assertProblem(dry, 'VALUE_OUT_OF_RANGE');
  assert.deepEqual(await bookFootprint(t.knex, BOOK_TABLES), before, 'nothing written, no key recorded');
  // The key was not consumed: a corrected journal under it posts.
  const ok = await post('/api/v3/ledger-transactions', journal('DL-JT-1'), key);
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.headers['idempotency-status'], 'applied');
});

test('(b) a receipt line whose quantity x unit cost exceeds the invoice line it makes: 400 naming lines[i].updateQuantity, nothing written, the key not consumed', async () => {
  const body = { orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 9999999999, unitCost: 99999999.9999 }] };
  const before = await bookFootprint(t.knex, [...BOOK_TABLES, 'pcorln', 'invqty']);
  const key = `dl-${randomUUID()}`;
  const res = await post('/api/v3/purchase-order-receipts', body, key);
  const problem = assertProblem(res, 'VALUE_OUT_OF_RANGE');
  assert.deepEqual(fieldsOf(problem), [
    ['lines[0].updateQuantity', 'range'],
    ['lines', 'range'],
  ]);
  assert.equal(res.headers['idempotency-status'], undefined);
  assert.deepEqual(await bookFootprint(t.knex, [...BOOK_TABLES, 'pcorln', 'invqty']), before, 'nothing written, no key recorded');
  const ok = await post('/api/v3/purchase-order-receipts', { orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 1 }] }, key);
  assert.equal(ok.status, 200, `the key was not consumed: ${ok.text}`);
});

test('(b) the same with the unit cost the order gives the line: 400 naming lines[i].updateQuantity, decided once the order is read (recorded under the key), nothing written', async () => {
  // Line 3 costs 486.6147: 9999999999 of it is 4866146999513.39, past decimal(14, 2).
  const body = { orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 3, updateQuantity: 9999999999 }] };
  const before = await bookFootprint(t.knex, ['lgrtrn', 'lgtnln', 'lgrbal', 'acpinv', 'invhst', 'pcorln', 'invqty']);
  const key = `dl-${randomUUID()}`;
  const res = await post('/api/v3/purchase-order-receipts', body, key);
  const problem = assertProblem(res, 'VALUE_OUT_OF_RANGE');
  assert.deepEqual(fieldsOf(problem), [
    ['lines[0].updateQuantity', 'range'],
    ['lines', 'range'],
  ]);
  assert.equal(res.headers['idempotency-status'], 'applied');
  assert.deepEqual(await bookFootprint(t.knex, ['lgrtrn', 'lgtnln', 'lgrbal', 'acpinv', 'invhst', 'pcorln', 'invqty']), before, 'nothing written');
  const again = await post('/api/v3/purchase-order-receipts', body, key);
  assert.equal(again.status, 400);
  assert.equal(again.headers['idempotency-status'], 'replayed');
});

test('(c) an AP invoice dated 9999-12-31 whose due date (+ the vendor terms) passes 9999-12-31: 400 naming invoiceDate, nothing written', async () => {
  const body = apInvoice('DL-AP-1', 2, { invoiceDate: '9999-12-31', period: FX.openPeriod, year: FX.year });
  const before = await bookFootprint(t.knex, ['lgrtrn', 'lgtnln', 'lgrbal', 'acpinv', 'jobcst']);
  const key = `dl-${randomUUID()}`;
  const res = await post('/api/v3/ap-invoices', body, key);
  const problem = assertProblem(res, 'VALUE_OUT_OF_RANGE');
  assert.deepEqual(fieldsOf(problem), [['invoiceDate', 'range']]);
  assert.match(problem.detail, /9999-12-31 \+ 30 days/);
  assert.deepEqual(await bookFootprint(t.knex, ['lgrtrn', 'lgtnln', 'lgrbal', 'acpinv', 'jobcst']), before, 'nothing written');
  // Decided once the vendor was read: recorded under the key and replayed, as every answer of the engine.
  const again = await post('/api/v3/ap-invoices', body, key);
  assert.equal(again.status, 400);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  // An explicit due date within range posts (the invoice date itself is storable).
  const ok = await post('/api/v3/ap-invoices', { ...body, invoiceNumber: 'DL-AP-2', dueDate: '9999-12-31' }, `dl-${randomUUID()}`);
  assert.equal(ok.status, 200, ok.text);
});

test('(c) a receipt dated 9999-12-31 whose payable invoice falls due past 9999-12-31: 400 naming receiptDate, nothing written', async () => {
  const body = { orderNumber: STOCK_PO, receiptDate: '9999-12-31', period: FX.openPeriod, year: FX.year, lines: [{ lineNumber: 2, updateQuantity: 1 }] };
  const before = await bookFootprint(t.knex, ['lgrtrn', 'lgtnln', 'lgrbal', 'acpinv', 'invhst', 'pcorln', 'invqty']);
  const res = await post('/api/v3/purchase-order-receipts', body, `dl-${randomUUID()}`);
  const problem = assertProblem(res, 'VALUE_OUT_OF_RANGE');
  assert.deepEqual(fieldsOf(problem), [['receiptDate', 'range']]);
  assert.deepEqual(await bookFootprint(t.knex, ['lgrtrn', 'lgtnln', 'lgrbal', 'acpinv', 'invhst', 'pcorln', 'invqty']), before, 'nothing written');
});
