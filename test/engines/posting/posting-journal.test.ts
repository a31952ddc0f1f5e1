/**
 * POST /ledger-transactions: the journal rules, the posting period (rule 8) and dry run, checked
 * over HTTP and read back from the database (lgrtrn, lgtnln, lgrbal, numseq).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { FX, balanceOf, booksBalance, countRows, journal } from '../../support/posting-fixture';

let t: TestApp;
const PATH = '/api/v3/ledger-transactions';

usePostingApp((app) => (t = app));

const A = FX.accounts;

test('a balanced journal posts: 200, Idempotency-Status applied, the write result, lines and balances in the database', async () => {
  const before11 = await balanceOf(t.knex, A.overhead, FX.year, FX.openPeriod);
  const cash11 = await balanceOf(t.knex, A.cash, FX.year, FX.openPeriod);
  const res = await t.post(PATH, journal('JT-100'));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied');
  const body = res.body;
  assert.equal(body.dryRun, false);
  assert.equal(body.period, FX.openPeriod);
  assert.equal(body.year, FX.year);
  assert.deepEqual(body.jobCosts, []);
  assert.deepEqual(body.inventory, []);
  assert.equal(body.document.transactionNumber, 'JT-100');
  assert.deepEqual(body.ledgerTransaction, body.document);
  assert.equal(body.document.debitTotal, 120.15);
  assert.equal(body.document.creditTotal, 120.15);
  assert.equal(body.document.lines.length, 3);
  assert.equal(body.document.lines[0].debitAmount, 100.1);
  assert.equal(body.document.lines[2].creditAmount, 120.15);

  const header = await t.knex('lgrtrn').where({ recnum: body.document.recordNumber }).first();
  assert.ok(header, 'the ledger transaction exists');
  assert.equal(header.trnnum, 'JT-100');
  assert.equal(Number(header.actprd), FX.openPeriod);
  assert.equal(await countRows(t.knex, 'lgtnln', { _idref: header._idnum }), 3);
  const after11 = await balanceOf(t.knex, A.overhead, FX.year, FX.openPeriod);
  assert.equal(Number(after11.debit) - Number(before11.debit), 100.1);
  const cashAfter = await balanceOf(t.knex, A.cash, FX.year, FX.openPeriod);
  assert.equal((Number(cashAfter.credit) - Number(cash11.credit)).toFixed(2), '120.15');
  const books = await booksBalance(t.knex);
  assert.equal(books.debit, books.credit, 'the books balance');
});

test('an unbalanced journal is 422 JOURNAL_UNBALANCED and writes nothing', async () => {
  const n = await countRows(t.knex, 'lgrtrn');
  const res = await t.post(
    PATH,
    journal('JT-101', {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, debitAmount: 10 },
        { lineNumber: 2, ledgerAccount: A.cash, creditAmount: 9.99 },
      ],
    }),
  );
  const body = assertProblem(res, 'JOURNAL_UNBALANCED', PATH);
  assert.match(body.detail, /10\.00.*9\.99/);
  assert.equal(await countRows(t.knex, 'lgrtrn'), n);
});

test('a line with both a debit and a credit, or neither, is 422 JOURNAL_LINE_INVALID naming the field', async () => {
  let res = await t.post(
    PATH,
    journal('JT-102', {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, debitAmount: 10, creditAmount: 10 },
        { lineNumber: 2, ledgerAccount: A.cash, creditAmount: 0.01 },
        { lineNumber: 3, ledgerAccount: A.cash, debitAmount: 0.01 },
      ],
    }),
  );
  let body = assertProblem(res, 'JOURNAL_LINE_INVALID');
  assert.deepEqual(
    body.errors.map((e: any) => e.field),
    ['lines[0].creditAmount'],
  );
  res = await t.post(
    PATH,
    journal('JT-102', {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, debitAmount: 10 },
        { lineNumber: 2, ledgerAccount: A.cash, creditAmount: 10 },
        { lineNumber: 3, ledgerAccount: A.cash },
      ],
    }),
  );
  body = assertProblem(res, 'JOURNAL_LINE_INVALID');
  assert.ok(body.errors.some((e: any) => e.field === 'lines[2].creditAmount'));
});

test('amounts: more than 2 decimals is 400 naming the field; negative is 400; not consumed', async () => {
  let res = await t.post(
    PATH,
    journal('JT-103', {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, debitAmount: 10.005 },
        { lineNumber: 2, ledgerAccount: A.cash, creditAmount: 10.005 },
      ],
    }),
  );
  let body = assertProblem(res, 'VALIDATION_FAILED');
  assert.deepEqual(
    body.errors.map((e: any) => e.field),
    ['lines[0].debitAmount', 'lines[1].creditAmount'],
  );
  res = await t.post(
    PATH,
    journal('JT-103', {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, debitAmount: -10 },
        { lineNumber: 2, ledgerAccount: A.cash, creditAmount: -10 },
      ],
    }),
  );
  body = assertProblem(res, 'VALIDATION_FAILED');
  assert.ok(body.errors.some((e: any) => e.field === 'lines[0].debitAmount'));
  // exact decimals: 0.1 + 0.2 balances 0.3 (no binary floating point)
  res = await t.post(
    PATH,
    journal('JT-103', {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, debitAmount: 0.1 },
        { lineNumber: 2, ledgerAccount: A.overhead, debitAmount: 0.2 },
        { lineNumber: 3, ledgerAccount: A.cash, creditAmount: 0.3 },
      ],
    }),
  );
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.document.debitTotal, 0.3);
});

test('repeated line numbers and unknown fields are 400', async () => {
  let res = await t.post(
    PATH,
    journal('JT-104', {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, debitAmount: 1 },
        { lineNumber: 1, ledgerAccount: A.cash, creditAmount: 1 },
      ],
    }),
  );
  assertProblem(res, 'VALIDATION_FAILED');
  res = await t.post(PATH, journal('JT-104', { bogus: 1 }));
  const body = assertProblem(res, 'VALIDATION_FAILED');
  assert.equal(body.errors[0].field, 'bogus');
});

test('referenced accounts and source must exist (404 naming them) and be active (422)', async () => {
  let res = await t.post(
    PATH,
    journal('JT-105', {
      sourceNumber: 987654,
      lines: [
        { lineNumber: 1, ledgerAccount: 1234567, debitAmount: 5 },
        { lineNumber: 2, ledgerAccount: A.cash, creditAmount: 5 },
      ],
    }),
  );
  let body = assertProblem(res, 'REFERENCE_NOT_FOUND');
  assert.deepEqual(body.errors.map((e: any) => e.field).sort(), ['lines[0].ledgerAccount', 'sourceNumber']);
  res = await t.post(
    PATH,
    journal('JT-105', {
      lines: [
        { lineNumber: 1, ledgerAccount: A.inactive, debitAmount: 5 },
        { lineNumber: 2, ledgerAccount: A.cash, creditAmount: 5 },
      ],
    }),
  );
  body = assertProblem(res, 'BUSINESS_RULE_VIOLATED');
  assert.equal(body.errors[0].field, 'lines[0].ledgerAccount');
  res = await t.post(PATH, journal('JT-105', { sourceNumber: FX.source.inactive }));
  body = assertProblem(res, 'BUSINESS_RULE_VIOLATED');
  assert.equal(body.errors[0].field, 'sourceNumber');
});

test('transaction number: identical content returns the existing posting (replayed); different content is 409', async () => {
  const first = await t.post(PATH, journal('JT-106'));
  assert.equal(first.status, 200);
  const balance = await balanceOf(t.knex, A.overhead, FX.year, FX.openPeriod);
  // Same lines, keys in another order: the existing posting, nothing written.
  const again = await t.post(PATH, { ...journal('JT-106'), description: 'Test journal' });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.equal(again.body.document.recordNumber, first.body.document.recordNumber);
  assert.deepEqual(again.body.document.lines, first.body.document.lines);
  assert.deepEqual(await balanceOf(t.knex, A.overhead, FX.year, FX.openPeriod), balance);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JT-106' }), 1);

  const changed = journal('JT-106') as any;
  changed.lines[0].debitAmount = 100.11;
  changed.lines[2].creditAmount = 120.16;
  const conflict = await t.post(PATH, changed);
  const body = assertProblem(conflict, 'TRANSACTION_NUMBER_CONFLICT');
  assert.match(body.detail, /JT-106/);
  assert.ok(body.errors.some((e: any) => e.field === 'lines[0]'));
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JT-106' }), 1);
});

test('posting period: later than the open period is 422 PERIOD_CLOSED naming both; an earlier one lands there', async () => {
  let res = await t.post(PATH, journal('JT-107', { transactionDate: FX.laterDate }));
  let body = assertProblem(res, 'PERIOD_CLOSED');
  assert.match(body.detail, /period 12 of 2026/);
  assert.match(body.detail, /period 11 of 2026/);
  assert.equal(body.resolvedPeriod, 12);
  assert.equal(body.openPeriod, 11);
  assert.equal(body.errors[0].field, 'transactionDate');

  const before10 = await balanceOf(t.knex, A.overhead, FX.year, 10);
  res = await t.post(PATH, journal('JT-108', { transactionDate: FX.earlierDate }));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.period, 10);
  assert.equal(res.body.year, FX.year);
  const after10 = await balanceOf(t.knex, A.overhead, FX.year, 10);
  assert.equal((Number(after10.debit) - Number(before10.debit)).toFixed(2), '100.10');
});

test('explicit period + year: honoured when valid, 422 PERIOD_INVALID when not, PERIOD_CLOSED when later', async () => {
  let res = await t.post(PATH, journal('JT-109', { period: 3, year: FX.year }));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.period, 3);
  assert.equal(res.body.document.period, 3);
  const row = await t.knex('lgrtrn').where({ recnum: res.body.document.recordNumber }).first();
  assert.equal(Number(row.actprd), 3);

  for (const [extra, field] of [
    [{ period: 13, year: FX.year }, 'period'],
    [{ period: -1, year: FX.year }, 'period'],
    [{ period: 5 }, 'year'],
    [{ year: FX.year }, 'period'],
    [{ period: 4, year: 1990 }, 'period'],
  ] as const) {
    res = await t.post(PATH, journal('JT-110', extra));
    const body = assertProblem(res, 'PERIOD_INVALID');
    assert.ok(body.errors.some((e: any) => e.field === field), `${JSON.stringify(extra)} names ${field}: ${res.text}`);
  }
  res = await t.post(PATH, journal('JT-110', { period: 12, year: FX.year }));
  assertProblem(res, 'PERIOD_CLOSED');
  res = await t.post(PATH, journal('JT-110', { period: 1, year: FX.year + 1 }));
  assertProblem(res, 'PERIOD_CLOSED');
});

test('an administrator-locked earlier period refuses postings (PERIOD_CLOSED)', async () => {
  await t.knex('fscprd').where({ postyr: FX.year, actprd: 2 }).update({ status: 3 });
  try {
    const res = await t.post(PATH, journal('JT-111', { transactionDate: '2026-02-10' }));
    const body = assertProblem(res, 'PERIOD_CLOSED');
    assert.match(body.detail, /locked/);
  } finally {
    await t.knex('fscprd').where({ postyr: FX.year, actprd: 2 }).update({ status: 1 });
  }
});

test('ledger-setup policy 1 posts to the current period whatever the date', async () => {
  await t.knex('lgrstp').update({ prdplc: 1 });
  try {
    const res = await t.post(PATH, journal('JT-112', { transactionDate: '2026-12-20' }));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.period, FX.openPeriod);
  } finally {
    await t.knex('lgrstp').update({ prdplc: 2 });
  }
});

test('dry run: the same result with dryRun true, nothing stays in the database, the record number is consumed', async () => {
  const n = await countRows(t.knex, 'lgrtrn');
  const lines = await countRows(t.knex, 'lgtnln');
  const balance = await balanceOf(t.knex, A.overhead, FX.year, FX.openPeriod);
  const dry = await t.post(`${PATH}?dryRun=true`, journal('JT-113'));
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.body.dryRun, true);
  assert.equal(dry.body.period, FX.openPeriod);
  assert.equal(dry.body.document.lines.length, 3);
  assert.equal(await countRows(t.knex, 'lgrtrn'), n);
  assert.equal(await countRows(t.knex, 'lgtnln'), lines);
  assert.equal(await countRows(t.knex, 'lgrtrn', { recnum: dry.body.document.recordNumber }), 0, 'the provisional record number never exists');
  assert.equal(await countRows(t.knex, 'lgrtrn', { _idnum: dry.body.document.id }), 0, 'the provisional id never exists');
  assert.deepEqual(await balanceOf(t.knex, A.overhead, FX.year, FX.openPeriod), balance);

  const real = await t.post(PATH, journal('JT-113'));
  assert.equal(real.status, 200);
  assert.equal(real.body.dryRun, false);
  assert.ok(real.body.document.recordNumber > dry.body.document.recordNumber, 'the dry run left a gap');

  // A dry run of a bad journal answers exactly like the real thing.
  const bad = await t.post(`${PATH}?dryRun=true`, journal('JT-114', { transactionDate: FX.laterDate }));
  assertProblem(bad, 'PERIOD_CLOSED');
});

test('dryRun query parameter: false posts, a non-boolean is 400, an unknown parameter is 400', async () => {
  const res = await t.post(`${PATH}?dryRun=false`, journal('JT-115'));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.dryRun, false);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JT-115' }), 1);
  const bad = await t.post(`${PATH}?dryRun=yes`, journal('JT-116'));
  const body = assertProblem(bad, 'VALIDATION_FAILED');
  assert.ok(body.errors.some((e: any) => /dryRun/.test(e.field)), bad.text);
  assertProblem(await t.post(`${PATH}?dryrun=true`, journal('JT-116')), 'VALIDATION_FAILED');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JT-116' }), 0);
});

test('the posting is readable through the query API with its lines', async (ctx) => {
  const posted = await t.post(PATH, journal('JT-117'));
  assert.equal(posted.status, 200);
  const res = await t.post('/api/v3/ledger-transactions/query', {
    filters: { match: { field: 'transactionNumber', operator: '=', value: 'JT-117' } },
    children: ['lines'],
  });
  if (res.status === 501 || res.status === 404) {
    ctx.skip('query engine not wired yet');
    return;
  }
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.length, 1);
  const record = res.body.data[0];
  assert.equal(record.recordNumber, posted.body.document.recordNumber);
  assert.deepEqual(
    record.lines.map((l: any) => [l.lineNumber, l.ledgerAccount, l.debitAmount, l.creditAmount]),
    posted.body.document.lines.map((l: any) => [l.lineNumber, l.ledgerAccount, l.debitAmount, l.creditAmount]),
  );
});

test('concurrent posts of one transaction number (no key) post once; the others get the existing posting', async () => {
  const results = await Promise.all(Array.from({ length: 10 }, () => t.post(PATH, journal('JT-118'))));
  for (const r of results) assert.equal(r.status, 200, r.text);
  assert.equal(results.filter((r) => r.headers['idempotency-status'] === 'applied').length, 1);
  assert.equal(new Set(results.map((r) => r.body.document.recordNumber)).size, 1);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JT-118' }), 1);
});
