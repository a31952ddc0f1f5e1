/**
 * POST /ap-invoices: the invoice, its cascade (journal on source 11, job costs, ledger balances),
 * the status that does not post, totals, defaults, account rules, references, duplicates and dry
 * run, checked over HTTP and in the database.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { FX, apInvoice, balanceOf, bookFootprint, booksBalance, countRows } from '../../support/posting-fixture';
import { Dec } from '../../../src/storage/decimal';

let t: TestApp;
const PATH = '/api/v3/ap-invoices';
const A = FX.accounts;

usePostingApp((app) => (t = app));

test('an Open invoice posts: invoice + lines, a balanced source-11 journal, a job cost per job line, balances', async () => {
  const expense = await balanceOf(t.knex, A.directExpense, FX.year, FX.openPeriod);
  const ap = await balanceOf(t.knex, A.apControl, FX.year, FX.openPeriod);
  const res = await t.post(PATH, apInvoice('API-1', 3));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied');
  const { document, ledgerTransaction, jobCosts, inventory } = res.body;
  assert.equal(res.body.dryRun, false);
  assert.equal(res.body.period, FX.openPeriod);
  assert.equal(res.body.year, FX.year);
  assert.deepEqual(inventory, []);
  // 10.01 + 10.02 + 10.03 + tax 1.00
  assert.equal(document.invoiceTotal, 31.06);
  assert.equal(document.invoiceBalance, 31.06);
  assert.equal(document.amountPaid, 0);
  assert.equal(document.salesTax, 1);
  assert.equal(document.status, 1);
  assert.equal(document.dueDate, '2026-12-14', 'invoice date + the vendor terms (30 days)');
  assert.equal(document.ledgerRecordNumber, ledgerTransaction.recordNumber);
  assert.equal(document.lines.length, 3);
  assert.ok(document.lines.every((l: any) => l.ledgerAccount === A.directExpense), 'account defaulted from the vendor');
  assert.ok(document.lines.every((l: any) => l.jobNumber === FX.job.open && l.phaseNumber === FX.phase), 'job and phase from the header');

  assert.equal(ledgerTransaction.sourceNumber, 11);
  assert.equal(ledgerTransaction.transactionNumber, 'API-1');
  assert.equal(ledgerTransaction.debitTotal, 31.06);
  assert.equal(ledgerTransaction.creditTotal, 31.06);
  const credits = ledgerTransaction.lines.filter((l: any) => l.creditAmount > 0);
  assert.deepEqual(
    credits.map((l: any) => [l.ledgerAccount, l.creditAmount]),
    [[A.apControl, 31.06]],
  );
  assert.deepEqual(
    ledgerTransaction.lines.filter((l: any) => l.debitAmount > 0).map((l: any) => l.debitAmount),
    [11.01, 10.02, 10.03],
    'each line debited with its extended total and its tax',
  );

  assert.equal(jobCosts.length, 3);
  assert.deepEqual(
    jobCosts.map((c: any) => [c.jobNumber, c.phaseNumber, c.costCode, c.costType, c.costAmount, c.sourceNumber, c.documentNumber, c.sourceRecordNumber, c.sourceLineNumber]),
    [
      [FX.job.open, 1, 99.1, 1, 11.01, 11, 'API-1', document.recordNumber, 1],
      [FX.job.open, 1, 99.1, 1, 10.02, 11, 'API-1', document.recordNumber, 2],
      [FX.job.open, 1, 99.1, 1, 10.03, 11, 'API-1', document.recordNumber, 3],
    ],
  );
  const jobCostTotal = jobCosts.reduce((s: Dec, c: any) => s.plus(c.costAmount), new Dec(0));
  const expensed = ledgerTransaction.lines.filter((l: any) => l.ledgerAccount === A.directExpense).reduce((s: Dec, l: any) => s.plus(l.debitAmount), new Dec(0));
  assert.equal(jobCostTotal.toFixed(2), expensed.toFixed(2), 'job costs equal what the ledger posts to direct expense');

  // In the database.
  const header = await t.knex('acpinv').where({ recnum: document.recordNumber }).first();
  assert.equal(header.invnum, 'API-1');
  assert.equal(Number(header.lgrrec), ledgerTransaction.recordNumber);
  assert.equal(await countRows(t.knex, 'apivln', { _idref: header._idnum }), 3);
  assert.equal(await countRows(t.knex, 'jobcst', { srcnum: 11, srcrec: document.recordNumber }), 3);
  assert.equal(await countRows(t.knex, 'lgrtrn', { recnum: ledgerTransaction.recordNumber, srcnum: 11 }), 1);
  const expenseAfter = await balanceOf(t.knex, A.directExpense, FX.year, FX.openPeriod);
  const apAfter = await balanceOf(t.knex, A.apControl, FX.year, FX.openPeriod);
  assert.equal(new Dec(expenseAfter.debit).minus(expense.debit).toFixed(2), '31.06');
  assert.equal(new Dec(apAfter.credit).minus(ap.credit).toFixed(2), '31.06');
  const books = await booksBalance(t.knex);
  assert.equal(books.debit, books.credit);
});

test('retainage is credited to the retainage payable account of the ledger setup', async () => {
  const res = await t.post(PATH, apInvoice('API-2', 2, { retainage: 2.5 }));
  assert.equal(res.status, 200, res.text);
  const credits = res.body.ledgerTransaction.lines.filter((l: any) => l.creditAmount > 0).map((l: any) => [l.ledgerAccount, l.creditAmount]);
  assert.deepEqual(credits, [
    [A.apControl, 18.53],
    [A.retainagePayable, 2.5],
  ]);
  assert.equal(res.body.document.retainage, 2.5);
  assert.equal(res.body.document.invoiceBalance, 21.03, 'the balance still includes retainage');
});

test('status 2 (Review) stores the invoice only: no ledgerTransaction key, no job costs, balances untouched', async () => {
  const expense = await balanceOf(t.knex, A.directExpense, FX.year, FX.openPeriod);
  const jobCosts = await countRows(t.knex, 'jobcst');
  const journals = await countRows(t.knex, 'lgrtrn');
  const res = await t.post(PATH, apInvoice('API-3', 2, { status: 2 }));
  assert.equal(res.status, 200, res.text);
  assert.equal('ledgerTransaction' in res.body, false, 'absent, not null');
  assert.deepEqual(res.body.jobCosts, []);
  assert.equal(res.body.document.status, 2);
  assert.equal(res.body.document.ledgerRecordNumber, null);
  assert.equal(res.body.period, FX.openPeriod);
  const header = await t.knex('acpinv').where({ recnum: res.body.document.recordNumber }).first();
  assert.equal(Number(header.status), 2);
  assert.equal(header.lgrrec, null);
  assert.equal(await countRows(t.knex, 'jobcst'), jobCosts);
  assert.equal(await countRows(t.knex, 'lgrtrn'), journals);
  assert.deepEqual(await balanceOf(t.knex, A.directExpense, FX.year, FX.openPeriod), expense);
});

test('totals that disagree with the lines are 422 TOTALS_DISAGREE naming the field', async () => {
  let res = await t.post(PATH, apInvoice('API-4', 2, { invoiceTotal: 99 }));
  let body = assertProblem(res, 'TOTALS_DISAGREE');
  assert.deepEqual(body.errors.map((e: any) => e.field), ['invoiceTotal']);
  res = await t.post(PATH, apInvoice('API-4', 2, { salesTax: 2 }));
  body = assertProblem(res, 'TOTALS_DISAGREE');
  assert.ok(body.errors.some((e: any) => e.field === 'salesTax'));
  const inv = apInvoice('API-4', 2) as any;
  inv.lines[1].unitPrice = 6;
  res = await t.post(PATH, inv);
  body = assertProblem(res, 'TOTALS_DISAGREE');
  assert.deepEqual(body.errors.map((e: any) => e.field), ['lines[1].extendedTotal']);
  res = await t.post(PATH, apInvoice('API-4', 2, { retainage: 100 }));
  body = assertProblem(res, 'BUSINESS_RULE_VIOLATED');
  assert.equal(body.errors[0].field, 'retainage');
  assert.equal(await countRows(t.knex, 'acpinv', { invnum: 'API-4' }), 0);
});

test('references: vendor, job, phase, cost code, cost type, account, equipment must exist (404 naming each)', async () => {
  let res = await t.post(PATH, apInvoice('API-5', 1, { vendorNumber: 8888888 }));
  let body = assertProblem(res, 'REFERENCE_NOT_FOUND');
  assert.deepEqual(body.errors.map((e: any) => e.field), ['vendorNumber']);
  const inv = apInvoice('API-5', 3) as any;
  inv.lines[0].jobNumber = 7777777;
  inv.lines[1].costCode = 12345.678;
  inv.lines[2].costType = 999;
  inv.lines[2].ledgerAccount = 6666666;
  inv.lines[1].equipmentNumber = 5555555;
  res = await t.post(PATH, inv);
  body = assertProblem(res, 'REFERENCE_NOT_FOUND');
  assert.deepEqual(body.errors.map((e: any) => e.field).sort(), [
    'lines[0].jobNumber',
    'lines[1].costCode',
    'lines[1].equipmentNumber',
    'lines[2].costType',
    'lines[2].ledgerAccount',
  ]);
  res = await t.post(PATH, apInvoice('API-5', 1, { phaseNumber: 42 }));
  body = assertProblem(res, 'REFERENCE_NOT_FOUND');
  assert.equal(body.errors[0].field, 'phaseNumber');
});

test('account rules: a job line needs a direct expense / WIP account; such an account needs a job; closed jobs and inactive vendors refuse', async () => {
  let inv = apInvoice('API-6', 1) as any;
  inv.lines[0].ledgerAccount = A.overhead;
  let body = assertProblem(await t.post(PATH, inv), 'BUSINESS_RULE_VIOLATED');
  assert.equal(body.errors[0].field, 'lines[0].ledgerAccount');

  inv = apInvoice('API-6', 1) as any;
  delete inv.jobNumber;
  delete inv.phaseNumber;
  body = assertProblem(await t.post(PATH, inv), 'BUSINESS_RULE_VIOLATED');
  assert.equal(body.errors[0].field, 'lines[0].jobNumber');

  body = assertProblem(await t.post(PATH, apInvoice('API-6', 1, { jobNumber: FX.job.closed, phaseNumber: undefined })), 'BUSINESS_RULE_VIOLATED');
  assert.equal(body.errors[0].field, 'jobNumber');

  body = assertProblem(await t.post(PATH, apInvoice('API-6', 1, { vendorNumber: FX.vendor.inactive })), 'BUSINESS_RULE_VIOLATED');
  assert.ok(body.errors.some((e: any) => e.field === 'vendorNumber'));

  inv = apInvoice('API-6', 1, { vendorNumber: FX.vendor.noDefaults }) as any;
  delete inv.lines[0].costCode;
  body = assertProblem(await t.post(PATH, inv), 'BUSINESS_RULE_VIOLATED');
  assert.ok(body.errors.some((e: any) => e.field === 'lines[0].costCode'));
});

test('an overhead invoice without a job posts without job costs (account from the vendor default)', async () => {
  const res = await t.post(PATH, {
    vendorNumber: FX.vendor.overheadDefault,
    invoiceNumber: 'API-7',
    invoiceDate: FX.earlierDate,
    invoiceTotal: 240,
    lines: [{ lineNumber: 1, description: 'Office supplies', extendedTotal: 240 }],
  });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body.jobCosts, []);
  assert.equal(res.body.period, 10, 'invoiceDate drives the period; an earlier period is accepted');
  assert.equal(res.body.document.lines[0].ledgerAccount, A.overhead);
  assert.equal(res.body.document.dueDate, '2026-10-15');
  assert.deepEqual(
    res.body.ledgerTransaction.lines.map((l: any) => [l.ledgerAccount, l.debitAmount, l.creditAmount]),
    [
      [A.overhead, 240, 0],
      [A.apControl, 0, 240],
    ],
  );
});

test('posting period: a later invoice date is 422 PERIOD_CLOSED; explicit invalid pair 422 PERIOD_INVALID', async () => {
  let body = assertProblem(await t.post(PATH, apInvoice('API-8', 1, { invoiceDate: FX.laterDate })), 'PERIOD_CLOSED');
  assert.equal(body.errors[0].field, 'invoiceDate');
  body = assertProblem(await t.post(PATH, apInvoice('API-8', 1, { period: 14, year: FX.year })), 'PERIOD_INVALID');
  const res = await t.post(PATH, apInvoice('API-8', 1, { period: 9, year: FX.year }));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.period, 9);
  assert.equal(res.body.jobCosts[0].period, 9);
  assert.equal(res.body.ledgerTransaction.period, 9);
});

test('the same vendor invoice number: identical content returns the existing invoice, different content is 409', async () => {
  const first = await t.post(PATH, apInvoice('API-9', 2));
  assert.equal(first.status, 200);
  const again = await t.post(PATH, apInvoice('API-9', 2));
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.equal(again.body.document.recordNumber, first.body.document.recordNumber);
  assert.equal(again.body.ledgerTransaction.recordNumber, first.body.ledgerTransaction.recordNumber);
  assert.equal(again.body.jobCosts.length, 2);
  assert.equal(await countRows(t.knex, 'acpinv', { invnum: 'API-9' }), 1);
  const body = assertProblem(await t.post(PATH, apInvoice('API-9', 3)), 'DOCUMENT_NUMBER_CONFLICT');
  assert.match(body.detail, /API-9/);
  // Another vendor may use the same invoice number.
  const other = apInvoice('API-9', 1, { vendorNumber: FX.vendor.noDefaults }) as any;
  other.lines[0].ledgerAccount = A.directExpense;
  const ok = await t.post(PATH, other);
  assert.equal(ok.status, 200, ok.text);
});

test('dry run: the full result with dryRun true and nothing left behind but consumed numbers', async () => {
  const counts = async () => [await countRows(t.knex, 'acpinv'), await countRows(t.knex, 'apivln'), await countRows(t.knex, 'lgrtrn'), await countRows(t.knex, 'jobcst'), await countRows(t.knex, 'lgrbal')];
  const before = await counts();
  const balance = await balanceOf(t.knex, A.directExpense, FX.year, FX.openPeriod);
  const dry = await t.post(`${PATH}?dryRun=true`, apInvoice('API-10', 10));
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.body.dryRun, true);
  assert.equal(dry.body.jobCosts.length, 10);
  assert.ok(dry.body.ledgerTransaction);
  assert.deepEqual(await counts(), before);
  assert.deepEqual(await balanceOf(t.knex, A.directExpense, FX.year, FX.openPeriod), balance);
  assert.equal(await countRows(t.knex, 'acpinv', { recnum: dry.body.document.recordNumber }), 0);
  const real = await t.post(PATH, apInvoice('API-10', 10));
  assert.equal(real.status, 200);
  assert.ok(real.body.document.recordNumber > dry.body.document.recordNumber, 'invoice record number consumed by the dry run');
  assert.ok(real.body.ledgerTransaction.recordNumber > dry.body.ledgerTransaction.recordNumber, 'journal record number consumed');
  assert.ok(real.body.jobCosts[0].recordNumber > dry.body.jobCosts[9].recordNumber, 'job cost record numbers consumed');
});

test('the posted invoice reads back through the query API with its lines', async (ctx) => {
  const posted = await t.post(PATH, apInvoice('API-11', 2));
  assert.equal(posted.status, 200);
  const res = await t.post('/api/v3/ap-invoices/query', {
    filters: { match: { field: 'invoiceNumber', operator: '=', value: 'API-11' } },
    children: ['lines'],
  });
  if (res.status === 501 || res.status === 404) {
    ctx.skip('query engine not wired yet');
    return;
  }
  assert.equal(res.status, 200, res.text);
  const record = res.body.data[0];
  const { lines: postedLines, ...postedHeader } = posted.body.document;
  const { lines: readLines, ...readHeader } = record;
  assert.deepEqual(readHeader, postedHeader);
  assert.deepEqual(readLines, postedLines);
  const costs = await t.post('/api/v3/job-costs/query', { filters: { match: { field: 'documentNumber', operator: '=', value: 'API-11' } }, orderBy: ['sourceLineNumber ASC'] });
  assert.equal(costs.status, 200, costs.text);
  assert.deepEqual(costs.body.data, posted.body.jobCosts);
});

test('concurrent postings over the same accounts neither deadlock nor lose an update', async () => {
  const expense = await balanceOf(t.knex, A.directExpense, FX.year, FX.openPeriod);
  const ap = await balanceOf(t.knex, A.apControl, FX.year, FX.openPeriod);
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => t.post(PATH, apInvoice(`API-C-${i}`, 1 + (i % 4)))));
  for (const r of results) assert.equal(r.status, 200, r.text);
  const total = results.reduce((s, r) => s.plus(r.body.document.invoiceTotal), new Dec(0));
  const expenseAfter = await balanceOf(t.knex, A.directExpense, FX.year, FX.openPeriod);
  const apAfter = await balanceOf(t.knex, A.apControl, FX.year, FX.openPeriod);
  assert.equal(new Dec(expenseAfter.debit).minus(expense.debit).toFixed(2), total.toFixed(2));
  assert.equal(new Dec(apAfter.credit).minus(ap.credit).toFixed(2), total.toFixed(2));
});

/** Tables an AP invoice writes (and the data change counter): a refused one moves none of them. */
const AP_TABLES = ['acpinv', 'apivln', 'lgrtrn', 'lgtnln', 'jobcst', 'eqpcst', 'lgrbal'] as const;

/** An Open invoice with a line on the equipment-expense account and a job line, 10% retainage (the audit's reproduction on the fixture). */
function equipmentInvoice(invoiceNumber: string, equipmentLine: Record<string, unknown> = { equipmentNumber: FX.equipment }): Record<string, unknown> {
  return {
    vendorNumber: FX.vendor.withDefaults,
    invoiceNumber,
    invoiceDate: FX.openDate,
    invoiceTotal: 1000,
    retainage: 100,
    lines: [
      { lineNumber: 1, ledgerAccount: A.equipmentExpense, description: 'Hydraulic hose repair', extendedTotal: 400, ...equipmentLine },
      { lineNumber: 2, ledgerAccount: A.directExpense, jobNumber: FX.job.open, costCode: Number(FX.costCode), costType: FX.costType.material, extendedTotal: 600 },
    ],
  };
}

test('a line on an equipment-expense account writes an equipment cost of the whole line amount (source 11), beside the journal and the job costs', async () => {
  const res = await t.post(PATH, equipmentInvoice('API-EQ-1'));
  assert.equal(res.status, 200, res.text);
  const { document, ledgerTransaction, jobCosts, equipmentCosts } = res.body;
  assert.deepEqual(
    ledgerTransaction.lines.filter((l: any) => l.debitAmount > 0).map((l: any) => [l.ledgerAccount, l.debitAmount, l.equipmentNumber]),
    [
      [A.equipmentExpense, 400, FX.equipment],
      [A.directExpense, 600, null],
    ],
  );
  assert.deepEqual(jobCosts.map((c: any) => [c.jobNumber, c.costAmount, c.sourceLineNumber]), [[FX.job.open, 600, 2]]);
  assert.equal(equipmentCosts.length, 1);
  const [cost] = equipmentCosts;
  assert.deepEqual(
    [cost.equipmentNumber, cost.ledgerAccount, cost.costAmount, cost.costHours, cost.costCategory, cost.sourceNumber, cost.documentNumber, cost.sourceRecordNumber, cost.sourceLineNumber],
    [FX.equipment, A.equipmentExpense, 400, 0, 6, 11, 'API-EQ-1', document.recordNumber, 1],
    'the line amount, retainage not deducted (the whole amount is expensed)',
  );
  assert.deepEqual(
    [cost.vendorNumber, cost.transactionDate, cost.description, cost.status, cost.period, cost.year],
    [FX.vendor.withDefaults, FX.openDate, 'Hydraulic hose repair', 1, ledgerTransaction.period, ledgerTransaction.year],
  );

  // In the database, and through the query API exactly as the result shows it.
  const stored = await t.knex('eqpcst').where({ docnum: 'API-EQ-1', srcnum: 11 });
  assert.equal(stored.length, 1);
  assert.equal(Number(stored[0].eqpnum), FX.equipment);
  assert.equal(Number(stored[0].lgract), A.equipmentExpense);
  assert.equal(Number(stored[0].recnum), cost.recordNumber);
  const read = await t.post('/api/v3/equipment-costs/query', { filters: { match: { field: 'documentNumber', operator: '=', value: 'API-EQ-1' } } });
  assert.equal(read.status, 200, read.text);
  assert.deepEqual(read.body.data, equipmentCosts);
});

test('an equipment-expense line: without equipmentNumber 422 naming it, unknown equipment 404; nothing written', async () => {
  const before = await bookFootprint(t.knex, AP_TABLES);
  let body = assertProblem(await t.post(PATH, equipmentInvoice('API-EQ-2', {})), 'BUSINESS_RULE_VIOLATED');
  assert.deepEqual(body.errors.map((e: any) => [e.field, e.code]), [['lines[0].equipmentNumber', 'required']]);
  // Review stores only, yet goes through the same checks.
  body = assertProblem(await t.post(PATH, { ...equipmentInvoice('API-EQ-2', {}), status: 2 }), 'BUSINESS_RULE_VIOLATED');
  assert.deepEqual(body.errors.map((e: any) => e.field), ['lines[0].equipmentNumber']);
  body = assertProblem(await t.post(PATH, equipmentInvoice('API-EQ-2', { equipmentNumber: 5555555 })), 'REFERENCE_NOT_FOUND');
  assert.deepEqual(body.errors.map((e: any) => e.field), ['lines[0].equipmentNumber']);
  assert.deepEqual(await bookFootprint(t.knex, AP_TABLES), before);
});

test('an invoice sent again with another equipmentNumber (or none) on a line is 409; identical replays its equipment costs', async () => {
  const first = await t.post(PATH, equipmentInvoice('API-EQ-3'));
  assert.equal(first.status, 200, first.text);
  const again = await t.post(PATH, equipmentInvoice('API-EQ-3'));
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(again.body.equipmentCosts, first.body.equipmentCosts);
  const before = await bookFootprint(t.knex, AP_TABLES);
  for (const equipmentLine of [{ equipmentNumber: 5555555 }, {}]) {
    const body = assertProblem(await t.post(PATH, equipmentInvoice('API-EQ-3', equipmentLine)), 'DOCUMENT_NUMBER_CONFLICT');
    assert.deepEqual(body.errors.map((e: any) => [e.field, e.code]), [
      ['invoiceNumber', 'already_entered'],
      ['lines[0]', 'differs'],
    ]);
  }
  assert.deepEqual(await bookFootprint(t.knex, AP_TABLES), before);
});

test('dry run of an equipment-expense line: the equipment cost in the result, none written, its record number consumed', async () => {
  const before = await bookFootprint(t.knex, AP_TABLES);
  const dry = await t.post(`${PATH}?dryRun=true`, equipmentInvoice('API-EQ-4'));
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.body.dryRun, true);
  assert.deepEqual(dry.body.equipmentCosts.map((c: any) => [c.equipmentNumber, c.costAmount]), [[FX.equipment, 400]]);
  assert.deepEqual(await bookFootprint(t.knex, AP_TABLES), before);
  const real = await t.post(PATH, equipmentInvoice('API-EQ-4'));
  assert.equal(real.status, 200, real.text);
  assert.ok(real.body.equipmentCosts[0].recordNumber > dry.body.equipmentCosts[0].recordNumber, 'equipment cost record number consumed by the dry run');
});

test('results without equipment-expense lines carry equipmentCosts empty (Open and Review)', async () => {
  const open = await t.post(PATH, apInvoice('API-EQ-5', 1));
  assert.equal(open.status, 200, open.text);
  assert.deepEqual(open.body.equipmentCosts, []);
  const review = await t.post(PATH, apInvoice('API-EQ-6', 1, { status: 2 }));
  assert.equal(review.status, 200, review.text);
  assert.deepEqual(review.body.equipmentCosts, []);
});
