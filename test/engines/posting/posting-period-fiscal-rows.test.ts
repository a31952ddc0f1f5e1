/**
 * Writes rule 8 on a company that keeps fiscal periods (the seeded demo company: rows for 2025
 * and 2026): a posting period derived from the document's date must be a period of the ledger,
 * exactly as an explicit period + year pair must. A date in a year the ledger has no fiscal
 * periods for (2019, 1900, 0001) is 422 PERIOD_INVALID naming the date field it was derived
 * from, on every write that resolves a period (one rule: src/engines/posting/ledger/period.ts),
 * and nothing is written. Earlier periods that exist are still accepted and the entry lands
 * there; ledger-setup policy 1 still posts to the open period whatever the date; a company that
 * keeps no fiscal periods derives the period from its fiscal calendar (docs/decisions/0435).
 */
import { randomUUID } from 'node:crypto';
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { FX, bookFootprint, countRows, journal } from '../../support/posting-fixture';

let t: TestApp;
usePostingApp((app) => (t = app));

/** Every table a refused write could have touched: none may move (the data change token neither). */
const WRITTEN = ['lgrtrn', 'lgtnln', 'lgrbal', 'jobcst', 'eqpcst', 'acpinv', 'apivln', 'invalc', 'invhst'] as const;
const footprint = () => bookFootprint(t.knex, WRITTEN);

/** A year the seeded ledger has no fiscal periods for (it has 2025 and 2026). */
const OLD_DATE = '2019-05-01';

function fields(problem: Record<string, any>): Array<[string, string]> {
  return (problem.errors ?? []).map((e: { field: string; code: string }) => [e.field, e.code]);
}

/**
 * Posts `body`, expects 422 PERIOD_INVALID naming `dateField` only, its detail naming `dateLabel`
 * (default: the field) and the date, and that nothing was written.
 */
async function refusedNaming(path: string, body: Record<string, unknown>, dateField: string, date: string, dateLabel = dateField): Promise<void> {
  const before = await footprint();
  const res = await t.post(path, body).set('Idempotency-Key', `period-${randomUUID()}`);
  assert.equal(res.headers['x-error-code'], 'PERIOD_INVALID', res.text);
  const problem = assertProblem(res, 'PERIOD_INVALID');
  assert.deepEqual(fields(problem), [[dateField, 'period_invalid']], res.text);
  assert.ok(problem.detail.includes(`${dateLabel} ${date}`), `the detail names ${dateLabel} ${date}: ${problem.detail}`);
  assert.match(problem.detail, /no such fiscal period/);
  assert.deepEqual(await footprint(), before, `${path}: nothing written`);
}

test('a journal dated in a year without fiscal periods is 422 PERIOD_INVALID naming transactionDate, as the explicit pair is; nothing is written', async () => {
  for (const date of [OLD_DATE, '1900-01-01', '0001-01-01']) {
    await refusedNaming('/api/v3/ledger-transactions', journal(`JPF-${date}`, { transactionDate: date }), 'transactionDate', date);
  }
  // The same period sent explicitly: refused with the same code (naming the pair).
  const explicit = assertProblem(await t.post('/api/v3/ledger-transactions', journal('JPF-EXPLICIT', { transactionDate: OLD_DATE, period: 5, year: 2019 })), 'PERIOD_INVALID');
  assert.deepEqual(fields(explicit).map(([f]) => f).sort(), ['period', 'year']);
  assert.equal(await countRows(t.knex, 'lgrbal', { postyr: 2019 }), 0, 'no balance of 2019');
  assert.equal(await countRows(t.knex, 'lgrtrn', { postyr: 2019 }), 0, 'no journal in 2019');
  // A dry run answers exactly like the real thing.
  const dry = assertProblem(await t.post('/api/v3/ledger-transactions?dryRun=true', journal('JPF-DRY', { transactionDate: OLD_DATE })), 'PERIOD_INVALID');
  assert.deepEqual(fields(dry), [['transactionDate', 'period_invalid']]);
});

test('earlier periods that exist are still accepted and the entry lands there (derived, and explicit period 0)', async () => {
  const derived = await t.post('/api/v3/ledger-transactions', journal('JPF-2025', { transactionDate: '2025-05-01' }));
  assert.equal(derived.status, 200, derived.text);
  assert.deepEqual([derived.body.period, derived.body.year], [5, 2025]);
  const row = await t.knex('lgrtrn').where({ recnum: derived.body.document.recordNumber }).first('actprd', 'postyr');
  assert.deepEqual([Number(row.actprd), Number(row.postyr)], [5, 2025]);
  assert.ok((await countRows(t.knex, 'lgrbal', { postyr: 2025, actprd: 5, lgract: FX.accounts.overhead })) > 0, 'the balance of period 5 of 2025 moved');

  const adjustment = await t.post('/api/v3/ledger-transactions', journal('JPF-P0', { transactionDate: '2026-01-05', period: 0, year: 2026 }));
  assert.equal(adjustment.status, 200, adjustment.text);
  assert.deepEqual([adjustment.body.period, adjustment.body.year], [0, 2026]);
});

test('ledger-setup policy 1 posts to the open period whatever the date, also a date in a year without fiscal periods', async () => {
  await t.knex('lgrstp').update({ prdplc: 1 });
  try {
    const res = await t.post('/api/v3/ledger-transactions', journal('JPF-POLICY1', { transactionDate: OLD_DATE }));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.period, res.body.year], [FX.openPeriod, FX.year]);
  } finally {
    await t.knex('lgrstp').update({ prdplc: 2 });
  }
});

test('an AP invoice dated in a year without fiscal periods is 422 PERIOD_INVALID naming invoiceDate', async () => {
  const invoice = {
    vendorNumber: 8,
    invoiceNumber: `PF-${randomUUID().slice(0, 8)}`,
    invoiceDate: OLD_DATE,
    description: 'Toner and copy paper',
    status: 1,
    invoiceTotal: 240,
    lines: [{ lineNumber: 1, ledgerAccount: 7060, description: 'Toner and copy paper', extendedTotal: 240 }],
  };
  await refusedNaming('/api/v3/ap-invoices', invoice, 'invoiceDate', OLD_DATE);
  assert.equal(await countRows(t.knex, 'acpinv', { invnum: invoice.invoiceNumber }), 0);
});

test('an inventory allocation dated in a year without fiscal periods is 422 PERIOD_INVALID naming allocationDate', async () => {
  const allocation = {
    allocationNumber: `IA-PF-${randomUUID().slice(0, 8)}`,
    allocationDate: OLD_DATE,
    status: 4,
    purpose: 1,
    fromLocation: 1,
    toLocation: 3,
    lines: [{ lineNumber: 1, partNumber: 187, quantity: 1 }],
  };
  const stock = await t.knex('invqty').whereIn('locnum', [1, 3]).where({ prtnum: 187 }).orderBy('locnum').select('locnum', 'qtyohn', 'qtyavl');
  await refusedNaming('/api/v3/inventory-allocations', allocation, 'allocationDate', OLD_DATE);
  assert.deepEqual(await t.knex('invqty').whereIn('locnum', [1, 3]).where({ prtnum: 187 }).orderBy('locnum').select('locnum', 'qtyohn', 'qtyavl'), stock, 'stock unchanged');
});

test('a purchase order receipt dated in a year without fiscal periods is 422 PERIOD_INVALID naming receiptDate', async () => {
  const lines = () => t.knex('pcorln').whereIn('_idref', t.knex('pchord').where({ ordnum: 'PO26-000065' }).select('_idnum')).orderBy('linnum').select('linnum', 'rcvdte');
  const before = await lines();
  await refusedNaming(
    '/api/v3/purchase-order-receipts',
    { orderNumber: 'PO26-000065', receiptDate: OLD_DATE, vendorInvoiceNumber: `INV-PF-${randomUUID().slice(0, 6)}`, lines: [{ lineNumber: 1, updateQuantity: 2 }] },
    'receiptDate',
    OLD_DATE,
  );
  assert.deepEqual(await lines(), before, 'received to date unchanged');
});

test('a service work order invoiced on a date without fiscal periods is 422 PERIOD_INVALID naming invoiceDate', async () => {
  const header = () => t.knex('srvinv').where({ recnum: 317 }).first('lgrrec', 'wrksts', 'status', 'actprd', 'postyr');
  const before = await header();
  await refusedNaming('/api/v3/service-invoices/post', { recordNumber: 317, invoiceDate: '1900-01-01' }, 'invoiceDate', '1900-01-01');
  assert.deepEqual(await header(), before, 'the work order is not invoiced');
});

test("a payroll batch whose records' check date has no fiscal period is 422 PERIOD_INVALID naming the request field that chose them (periodEndDate), its detail the records' checkDate", async () => {
  const PERIOD_END = '2026-11-22';
  const records = await t.knex('payrec').where({ prdend: PERIOD_END, status: 2 }).orderBy('recnum').select('recnum', 'chkdte', 'status');
  assert.ok(records.length > 0, 'the seed leaves the batch ending 2026-11-22 Computed');
  await t.knex('payrec').where({ prdend: PERIOD_END, status: 2 }).update({ chkdte: OLD_DATE });
  try {
    await refusedNaming('/api/v3/payroll-records/post', { periodEndDate: PERIOD_END, bankAccountNumber: 2 }, 'periodEndDate', OLD_DATE, "the records' checkDate");
    const statuses = await t.knex('payrec').whereIn('recnum', records.map((r) => r.recnum)).orderBy('recnum').select('recnum', 'status');
    assert.deepEqual(statuses.map((r) => Number(r.status)), records.map(() => 2), 'the records stay Computed');
  } finally {
    for (const r of records) await t.knex('payrec').where({ recnum: r.recnum }).update({ chkdte: r.chkdte });
  }
});

test('a company that keeps no fiscal periods derives the period from its fiscal calendar (fiscal year end month)', async () => {
  // Set aside as stored (a copy in SQL: no value passes through a driver) and put back after.
  const count = await countRows(t.knex, 'fscprd');
  await t.knex.raw('create table fscprd_set_aside as select * from fscprd');
  await t.knex('fscprd').delete();
  try {
    const res = await t.post('/api/v3/ledger-transactions', journal('JPF-NOFISCAL', { transactionDate: '2026-03-10' }));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.period, res.body.year], [3, 2026]);
  } finally {
    await t.knex.raw('insert into fscprd select * from fscprd_set_aside');
    await t.knex.schema.dropTable('fscprd_set_aside');
  }
  assert.equal(await countRows(t.knex, 'fscprd'), count);
});
