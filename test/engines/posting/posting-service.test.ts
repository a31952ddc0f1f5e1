/**
 * POST /service-invoices/post (an Open service work order invoiced under source 22: journal,
 * parts out of stock at weighted-average cost, ledger balances, the document's new state) and
 * POST /service-inventories (stored only: no period, year or ledgerTransaction keys), on the
 * seeded demo company, over HTTP and in the database, with the books' invariants after every test.
 */
import { randomUUID } from 'node:crypto';
import test, { afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { assertProblem } from '../../support/http';
import { assertBooksInvariants } from '../../support/invariants';
import { balanceOf, bookFootprint, countRows } from '../../support/posting-fixture';
import { Dec } from '../../../src/storage/decimal';
import { dialectFor, type Dialect } from '../../../src/storage/dialect';

let t: TestApp;
let dialect: Dialect;
const POST = '/api/v3/service-invoices/post';
const INVENTORY = '/api/v3/service-inventories';
const YEAR = 2026;
const PERIOD = 11;
/** Seeded demo company (db/seed/ar.ts): Open work orders left in period 11, one in Review. */
const SEEDED = { openWithParts: 320, openLabor: 317, openLabor2: 319, review: 318, invoiced: 315 } as const;
const TRUCK = 3;
const ACCOUNT = { serviceReceivable: 1120, trucks: 1220, salesTax: 2200, taxableIncome: 4020, nonTaxableIncome: 4030, costOfGoods: 5200 } as const;
const CLIENT = 12;
const SITE = 9;
const OTHER_CLIENT_SITE = 1;
const PART = { paint: 28, rebar: 212 } as const;

useTestApp((app) => {
  t = app;
  dialect = dialectFor(app.engine);
});
afterEach(async () => {
  await assertBooksInvariants(t.knex);
});

const dec = (raw: unknown, scale: number): Dec => dialect.decodeDecimal(raw, scale) ?? new Dec(0);
const money = (v: string | number) => dialect.encodeDecimal(new Dec(v), 2);

function body(recordNumber: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { recordNumber, partsLocation: TRUCK, receivableAccount: ACCOUNT.serviceReceivable, costOfGoodsAccount: ACCOUNT.costOfGoods, ...overrides };
}

let nextWorkOrder = 90001;
interface LineSpec {
  type: number;
  part?: number;
  quantity: string;
  price: string;
  taxable?: boolean;
  account?: number | null;
}

/** An Open work order (status 1, not posted) written straight into the tables, as the accounting system would. */
async function workOrder(lines: LineSpec[], options: { tax?: string; date?: string; status?: number } = {}): Promise<number> {
  const recnum = nextWorkOrder++;
  const id = randomUUID();
  const ext = lines.map((l) => new Dec(l.quantity).times(l.price).toDecimalPlaces(2));
  const tax = new Dec(options.tax ?? 0);
  const total = ext.reduce((s, v) => s.plus(v), new Dec(0)).plus(tax);
  await t.knex('srvinv').insert({
    _idnum: id,
    recnum,
    invnum: `WO-${recnum}`,
    invdte: options.date ?? '2026-11-19',
    clnnum: CLIENT,
    srvloc: SITE,
    srvtyp: 2,
    dscrpt: `Test work order ${recnum}`,
    wrksts: 4,
    invttl: money(total.toFixed(2)),
    taxamt: money(tax.toFixed(2)),
    amtpad: money(0),
    invbal: money(total.toFixed(2)),
    status: options.status ?? 1,
    actprd: PERIOD,
    postyr: YEAR,
    usrnme: 'test',
  });
  await t.knex('srvlin').insert(
    lines.map((l, k) => ({
      _idnum: randomUUID(),
      _idref: id,
      linnum: k + 1,
      lintyp: l.type,
      prtnum: l.part ?? null,
      dscrpt: l.type === 1 ? 'Labor' : l.type === 2 ? `Part ${l.part}` : 'Trip charge',
      linqty: dialect.encodeDecimal(new Dec(l.quantity), 4),
      linprc: dialect.encodeDecimal(new Dec(l.price), 4),
      untcst: dialect.encodeDecimal(new Dec(0), 4),
      extttl: money(ext[k]!.toFixed(2)),
      taxabl: l.taxable ?? false,
      lgract: l.account === undefined ? (l.taxable ? ACCOUNT.taxableIncome : ACCOUNT.nonTaxableIncome) : l.account,
    })),
  );
  return recnum;
}

async function stockOf(part: number, location: number): Promise<{ onHand: Dec; available: Dec }> {
  const row = await t.knex('invqty').where({ prtnum: part, locnum: location }).first();
  return { onHand: dec(row?.qtyohn, 4), available: dec(row?.qtyavl, 4) };
}

/** What a refused or dry-run posting must leave untouched. */
async function snapshot(recnum: number): Promise<Record<string, unknown>> {
  const header = await t.knex('srvinv').where({ recnum }).first('lgrrec', 'wrksts', 'status', 'invttl', 'invbal');
  return {
    journals: await countRows(t.knex, 'lgrtrn'),
    journalLines: await countRows(t.knex, 'lgtnln'),
    histories: await countRows(t.knex, 'invhst'),
    averages: await countRows(t.knex, 'hstavg'),
    header: { ...header },
    stock: await t.knex('invqty').where({ locnum: TRUCK }).orderBy('prtnum').select('prtnum', 'qtyohn', 'qtyavl'),
    balances: await t.knex('lgrbal').where({ postyr: YEAR, actprd: PERIOD }).orderBy('lgract').select('lgract', 'dbttot', 'crdtot'),
  };
}

function fields(problem: Record<string, any>): Array<[string, string]> {
  return (problem.errors ?? []).map((e: { field: string; code: string }) => [e.field, e.code]);
}

test('an Open work order posts: source-22 journal, parts out of the truck at average cost, balances, the document invoiced', async () => {
  const recnum = SEEDED.openWithParts;
  const lines = await t.knex('srvlin').join('srvinv', 'srvinv._idnum', 'srvlin._idref').where('srvinv.recnum', recnum).orderBy('srvlin.linnum').select('srvlin.prtnum', 'srvlin.linqty', 'srvlin.lintyp');
  const partLines = lines.filter((l: any) => Number(l.lintyp) === 2 && l.prtnum !== null);
  assert.ok(partLines.length >= 2, 'the seeded work order uses parts');
  const stockBefore = new Map<number, { onHand: Dec; available: Dec }>();
  for (const l of partLines) stockBefore.set(Number(l.prtnum), await stockOf(Number(l.prtnum), TRUCK));
  const accounts = Object.values(ACCOUNT);
  const balancesBefore = new Map<number, { debit: string; credit: string }>();
  for (const a of accounts) balancesBefore.set(a, await balanceOf(t.knex, a, YEAR, PERIOD));

  const res = await t.post(POST, body(recnum));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied');
  const { document, ledgerTransaction, jobCosts, inventory } = res.body;
  assert.equal(res.body.dryRun, false);
  assert.equal(res.body.period, PERIOD);
  assert.equal(res.body.year, YEAR);
  assert.deepEqual(jobCosts, []);

  // The document: invoiced.
  assert.equal(document.recordNumber, recnum);
  assert.equal(document.status, 1, 'an invoiced work order stays Open: an open receivable');
  assert.equal(document.workStatus, 5, 'Complete');
  assert.equal(document.ledgerRecordNumber, ledgerTransaction.recordNumber);
  assert.equal(document.period, PERIOD);
  assert.equal(document.year, YEAR);
  const lineTotal = document.lines.reduce((s: Dec, l: any) => s.plus(l.extendedTotal), new Dec(0));
  assert.equal(new Dec(document.invoiceTotal).toFixed(2), lineTotal.plus(document.salesTax).toFixed(2));
  assert.equal(document.invoiceBalance, document.invoiceTotal);

  // The journal balances and says what the domain notes say.
  assert.equal(ledgerTransaction.sourceNumber, 22);
  assert.equal(ledgerTransaction.transactionNumber, document.invoiceNumber);
  assert.equal(ledgerTransaction.debitTotal, ledgerTransaction.creditTotal);
  const debits = ledgerTransaction.lines.reduce((s: Dec, l: any) => s.plus(l.debitAmount), new Dec(0));
  const credits = ledgerTransaction.lines.reduce((s: Dec, l: any) => s.plus(l.creditAmount), new Dec(0));
  assert.equal(debits.toFixed(2), credits.toFixed(2));
  const on = (account: number, side: 'debitAmount' | 'creditAmount') =>
    ledgerTransaction.lines.filter((l: any) => l.ledgerAccount === account).reduce((s: Dec, l: any) => s.plus(l[side]), new Dec(0));
  assert.equal(on(ACCOUNT.serviceReceivable, 'debitAmount').toFixed(2), new Dec(document.invoiceTotal).toFixed(2), 'receivable = invoice total');
  assert.match(ledgerTransaction.lines[0].description, new RegExp(`client ${CLIENT}`), 'the receivable line names the client');
  assert.equal(on(ACCOUNT.nonTaxableIncome, 'creditAmount').toFixed(2), lineTotal.toFixed(2), 'non-taxable income = the lines');

  // Stock: one consumption per part line, at average cost, from the truck.
  assert.equal(inventory.length, partLines.length);
  const cost = inventory.reduce((s: Dec, h: any) => s.plus(h.extendedCost), new Dec(0)).negated();
  assert.ok(cost.greaterThan(0));
  assert.equal(on(ACCOUNT.costOfGoods, 'debitAmount').toFixed(2), cost.toFixed(2), 'cost of goods = value of the parts');
  assert.equal(on(ACCOUNT.trucks, 'creditAmount').toFixed(2), cost.toFixed(2), 'truck inventory credited with the same value');
  for (const [k, h] of inventory.entries()) {
    assert.equal(h.movementType, 4);
    assert.equal(h.sourceNumber, 22);
    assert.equal(h.sourceRecordNumber, recnum);
    assert.equal(h.locationNumber, TRUCK);
    assert.equal(h.partNumber, Number(partLines[k].prtnum));
    const q = dec(partLines[k].linqty, 4);
    assert.equal(new Dec(h.quantity).toFixed(4), q.negated().toFixed(4));
    const before = stockBefore.get(h.partNumber)!;
    const now = await stockOf(h.partNumber, TRUCK);
    assert.equal(now.onHand.toFixed(4), before.onHand.minus(q).toFixed(4), `on hand of part ${h.partNumber}`);
    assert.equal(now.available.toFixed(4), before.available.minus(q).toFixed(4), `available of part ${h.partNumber}`);
    assert.equal(new Dec(h.quantityAfter).toFixed(4), now.onHand.toFixed(4));
  }
  const partCost = document.lines.filter((l: any) => l.lineType === 2).map((l: any) => l.unitCost);
  assert.deepEqual(partCost, inventory.map((h: any) => h.unitCost), 'each part line records its unit cost');

  // The database: header, journal rows, history rows, balances moved by exactly the lines.
  const header = await t.knex('srvinv').where({ recnum }).first();
  assert.equal(Number(header.lgrrec), ledgerTransaction.recordNumber);
  assert.equal(Number(header.wrksts), 5);
  assert.equal(Number(header.status), 1);
  const journal = await t.knex('lgrtrn').where({ recnum: ledgerTransaction.recordNumber }).first();
  assert.equal(Number(journal.srcnum), 22);
  assert.equal(await countRows(t.knex, 'lgtnln', { _idref: journal._idnum }), ledgerTransaction.lines.length);
  assert.equal(await countRows(t.knex, 'invhst', { srcnum: 22, srcrec: recnum }), partLines.length);
  for (const a of accounts) {
    const before = balancesBefore.get(a)!;
    const after = await balanceOf(t.knex, a, YEAR, PERIOD);
    assert.equal(new Dec(after.debit).minus(before.debit).toFixed(2), on(a, 'debitAmount').toFixed(2), `lgrbal debit of ${a}`);
    assert.equal(new Dec(after.credit).minus(before.credit).toFixed(2), on(a, 'creditAmount').toFixed(2), `lgrbal credit of ${a}`);
  }

  // Once invoiced it does not post again.
  const again = await t.post(POST, body(recnum));
  const problem = assertProblem(again, 'DOCUMENT_NOT_POSTABLE');
  assert.deepEqual(fields(problem), [['recordNumber', 'already_posted']]);
  assert.equal(problem.ledgerRecordNumber, ledgerTransaction.recordNumber);
  assert.equal(await countRows(t.knex, 'invhst', { srcnum: 22, srcrec: recnum }), partLines.length);
});

test('taxable and non-taxable income, sales tax, and the receivable defaulting to the AR control account', async () => {
  const before = await stockOf(PART.rebar, TRUCK);
  const recnum = await workOrder(
    [
      { type: 1, quantity: '2', price: '115' },
      { type: 2, part: PART.rebar, quantity: '1', price: '102.02', taxable: true },
      { type: 4, quantity: '1', price: '85' },
    ],
    { tax: '8.67' },
  );
  const setup = await t.knex('lgrstp').first('arcact', 'stxact');
  const res = await t.post(POST, { recordNumber: recnum, partsLocation: TRUCK, costOfGoodsAccount: ACCOUNT.costOfGoods });
  assert.equal(res.status, 200, res.text);
  const { document, ledgerTransaction } = res.body;
  assert.equal(document.invoiceTotal, 425.69);
  const lines = ledgerTransaction.lines.map((l: any) => [l.ledgerAccount, l.debitAmount, l.creditAmount]);
  const cost = -res.body.inventory[0].extendedCost;
  assert.deepEqual(lines, [
    [Number(setup.arcact), 425.69, 0],
    [ACCOUNT.nonTaxableIncome, 0, 315],
    [ACCOUNT.taxableIncome, 0, 102.02],
    [Number(setup.stxact), 0, 8.67],
    [ACCOUNT.costOfGoods, cost, 0],
    [ACCOUNT.trucks, 0, cost],
  ]);
  const now = await stockOf(PART.rebar, TRUCK);
  assert.equal(now.onHand.toFixed(4), before.onHand.minus(1).toFixed(4));
});

test('a work order that is not Open is 422 DOCUMENT_NOT_POSTABLE naming it; nothing is written', async () => {
  const before = await snapshot(SEEDED.review);
  const res = await t.post(POST, body(SEEDED.review));
  const problem = assertProblem(res, 'DOCUMENT_NOT_POSTABLE');
  assert.deepEqual(fields(problem), [['recordNumber', 'not_open']]);
  assert.match(problem.detail, new RegExp(`${SEEDED.review}.*Review`));
  assert.equal(problem.status, 422);
  assert.deepEqual(await snapshot(SEEDED.review), before);

  for (const status of [3, 4, 5]) {
    const recnum = await workOrder([{ type: 1, quantity: '1', price: '100' }], { status });
    assertProblem(await t.post(POST, body(recnum)), 'DOCUMENT_NOT_POSTABLE');
  }
  // An invoice the seed posted already.
  const invoiced = assertProblem(await t.post(POST, body(SEEDED.invoiced)), 'DOCUMENT_NOT_POSTABLE');
  assert.deepEqual(fields(invoiced), [['recordNumber', 'already_posted']]);
});

test('not enough stock on the truck is 422 INSUFFICIENT_STOCK naming the line; nothing is written', async () => {
  const stock = await stockOf(PART.paint, TRUCK);
  const recnum = await workOrder([
    { type: 1, quantity: '1', price: '115' },
    { type: 2, part: PART.paint, quantity: stock.available.plus(1).toFixed(), price: '36.95' },
  ]);
  const before = await snapshot(recnum);
  const res = await t.post(POST, body(recnum));
  const problem = assertProblem(res, 'INSUFFICIENT_STOCK');
  assert.deepEqual(fields(problem), [['lines[1].quantity', 'insufficient_stock']]);
  assert.deepEqual(await snapshot(recnum), before);
});

test('a dry run answers the whole result and writes nothing (the Idempotency-Key is ignored)', async () => {
  const recnum = SEEDED.openLabor;
  const before = await snapshot(recnum);
  const res = await t.post(`${POST}?dryRun=true`, body(recnum)).set('Idempotency-Key', 'svc-dry-1');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.dryRun, true);
  assert.equal(res.body.document.workStatus, 5);
  assert.equal(res.body.ledgerTransaction.sourceNumber, 22);
  assert.deepEqual(res.body.inventory, []);
  assert.deepEqual(await snapshot(recnum), before);
  assert.equal(await countRows(t.knex, 'lgrtrn', { recnum: res.body.ledgerTransaction.recordNumber }), 0);
  // The key was not consumed: the real posting under it applies.
  const real = await t.post(POST, body(recnum)).set('Idempotency-Key', 'svc-dry-1');
  assert.equal(real.status, 200, real.text);
  assert.equal(real.headers['idempotency-status'], 'applied');
  assert.equal(real.body.dryRun, false);
});

test('Idempotency-Key: the same request again is replayed, nothing posts twice; another body under it is 409', async () => {
  const recnum = SEEDED.openLabor2;
  const key = `svc-${randomUUID()}`;
  const journals = await countRows(t.knex, 'lgrtrn');
  const first = await t.post(POST, body(recnum)).set('Idempotency-Key', key);
  assert.equal(first.status, 200, first.text);
  assert.equal(first.headers['idempotency-status'], 'applied');
  const second = await t.post(POST, body(recnum)).set('Idempotency-Key', key);
  assert.equal(second.status, 200);
  assert.equal(second.headers['idempotency-status'], 'replayed');
  assert.deepEqual(second.body, first.body);
  assert.equal(await countRows(t.knex, 'lgrtrn'), journals + 1);
  assertProblem(await t.post(POST, body(recnum, { invoiceDate: '2026-11-18' })).set('Idempotency-Key', key), 'IDEMPOTENCY_KEY_REUSED');
});

test('two concurrent postings of one work order: one posts, the other is 422 already_posted; one journal, one stock movement', async () => {
  const recnum = await workOrder([
    { type: 1, quantity: '1', price: '115' },
    { type: 2, part: PART.rebar, quantity: '1', price: '102.02' },
  ]);
  const journals = await countRows(t.knex, 'lgrtrn');
  const stock = await stockOf(PART.rebar, TRUCK);
  const answers = await Promise.all([t.post(POST, body(recnum)), t.post(POST, body(recnum)), t.post(POST, body(recnum))]);
  const statuses = answers.map((r) => r.status).sort();
  assert.deepEqual(statuses, [200, 422, 422], answers.map((r) => r.text).join('\n'));
  for (const r of answers.filter((a) => a.status === 422)) assert.deepEqual(fields(r.body), [['recordNumber', 'already_posted']]);
  assert.equal(await countRows(t.knex, 'lgrtrn'), journals + 1);
  assert.equal(await countRows(t.knex, 'invhst', { srcnum: 22, srcrec: recnum }), 1);
  assert.equal((await stockOf(PART.rebar, TRUCK)).onHand.toFixed(4), stock.onHand.minus(1).toFixed(4));
});

test('an invoice date in an earlier period posts there (journal, stock history, document)', async () => {
  const recnum = await workOrder([{ type: 1, quantity: '1', price: '115' }]);
  const res = await t.post(POST, body(recnum, { invoiceDate: '2026-10-30' }));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.period, 10);
  assert.equal(res.body.ledgerTransaction.period, 10);
  assert.equal(res.body.document.invoiceDate, '2026-10-30');
  const header = await t.knex('srvinv').where({ recnum }).first('actprd', 'postyr');
  assert.deepEqual([Number(header.actprd), Number(header.postyr)], [10, YEAR]);
});

test('an invoice date after the open period is 422 PERIOD_CLOSED naming invoiceDate; nothing is written', async () => {
  const recnum = await workOrder([{ type: 1, quantity: '1', price: '115' }]);
  const before = await snapshot(recnum);
  const problem = assertProblem(await t.post(POST, body(recnum, { invoiceDate: '2026-12-03' })), 'PERIOD_CLOSED');
  assert.deepEqual(fields(problem), [['invoiceDate', 'period_closed']]);
  assert.equal(problem.openPeriod, PERIOD);
  const dated = await workOrder([{ type: 1, quantity: '1', price: '115' }], { date: '2026-12-01' });
  assertProblem(await t.post(POST, body(dated)), 'PERIOD_CLOSED');
  assert.deepEqual(await snapshot(recnum), before);
});

test('unknown references are 404 naming the field; missing parts location or cost of goods account is 422 naming it', async () => {
  const withParts = await workOrder([{ type: 2, part: PART.paint, quantity: '1', price: '36.95' }]);
  const cases: Array<[Record<string, unknown>, string]> = [
    [body(999999), 'recordNumber'],
    [body(withParts, { partsLocation: 9999 }), 'partsLocation'],
    [body(withParts, { receivableAccount: 99999999 }), 'receivableAccount'],
    [body(withParts, { costOfGoodsAccount: 99999998 }), 'costOfGoodsAccount'],
  ];
  const before = await snapshot(withParts);
  for (const [request, field] of cases) {
    const problem = assertProblem(await t.post(POST, request), 'REFERENCE_NOT_FOUND');
    assert.deepEqual(fields(problem), [[field, 'not_found']]);
  }
  const noLocation = assertProblem(await t.post(POST, { recordNumber: withParts, costOfGoodsAccount: ACCOUNT.costOfGoods }), 'BUSINESS_RULE_VIOLATED');
  assert.deepEqual(fields(noLocation), [['partsLocation', 'required']]);
  const noCogs = assertProblem(await t.post(POST, { recordNumber: withParts, partsLocation: TRUCK }), 'BUSINESS_RULE_VIOLATED');
  assert.deepEqual(fields(noCogs), [['costOfGoodsAccount', 'required']]);
  assert.deepEqual(await snapshot(withParts), before);
});

test('receivableAccount and costOfGoodsAccount must be accounts a work order can post to: 422 naming the field; nothing is written', async () => {
  // Seeded chart (db/seed/chart.ts): 5010 direct expense keeping the job subsidiary, 1400 WIP,
  // 1310 prepaid (a current asset without clients), 4030 income, 6020 equipment expense, 1510
  // equipment (other asset keeping the equipment subsidiary).
  const withParts = await workOrder([{ type: 2, part: PART.paint, quantity: '1', price: '36.95' }]);
  const labor = await workOrder([{ type: 1, quantity: '2', price: '115' }]);
  const R = 'not_receivable_account';
  const C = 'not_cost_of_goods_account';
  const cases: Array<[Record<string, unknown>, Array<[string, string]>]> = [
    [{ receivableAccount: 5010 }, [['receivableAccount', R]]],
    [{ receivableAccount: 1400 }, [['receivableAccount', R]]],
    [{ receivableAccount: 1510 }, [['receivableAccount', R]]],
    [{ receivableAccount: 1310 }, [['receivableAccount', R]]],
    [{ receivableAccount: 4030 }, [['receivableAccount', R]]],
    [{ costOfGoodsAccount: 1400 }, [['costOfGoodsAccount', C]]],
    [{ costOfGoodsAccount: 5010 }, [['costOfGoodsAccount', C]]],
    [{ costOfGoodsAccount: 6020 }, [['costOfGoodsAccount', C]]],
    [{ costOfGoodsAccount: ACCOUNT.serviceReceivable }, [['costOfGoodsAccount', C]]],
    [{ costOfGoodsAccount: ACCOUNT.taxableIncome }, [['costOfGoodsAccount', C]]],
    [{ receivableAccount: 5010, costOfGoodsAccount: 1400 }, [['receivableAccount', R], ['costOfGoodsAccount', C]]],
  ];
  const before = await snapshot(withParts);
  const laborBefore = await snapshot(labor);
  const footprint = await bookFootprint(t.knex, ['lgrtrn', 'lgtnln', 'lgrbal', 'jobcst', 'eqpcst', 'invhst']);
  for (const [overrides, expected] of cases) {
    for (const query of ['', '?dryRun=true']) {
      const res = await t.post(`${POST}${query}`, body(withParts, overrides));
      const problem = assertProblem(res, 'BUSINESS_RULE_VIOLATED');
      assert.deepEqual(fields(problem), expected, `${JSON.stringify(overrides)}${query}: ${res.text}`);
    }
  }
  // The audit's case: a labor-only work order with a job-subsidiary account as receivable.
  const problem = assertProblem(await t.post(POST, { recordNumber: labor, receivableAccount: 5010 }), 'BUSINESS_RULE_VIOLATED');
  assert.deepEqual(fields(problem), [['receivableAccount', R]]);
  assert.match(problem.detail, /5010.*job subsidiary ledger/);
  assert.deepEqual(await snapshot(withParts), before);
  assert.deepEqual(await snapshot(labor), laborBefore);
  assert.deepEqual(await bookFootprint(t.knex, ['lgrtrn', 'lgtnln', 'lgrbal', 'jobcst', 'eqpcst', 'invhst']), footprint, 'nothing written');

  // Accounts of the right kinds post: another client receivable (1110 AR) and an overhead expense (7080).
  const dry = await t.post(`${POST}?dryRun=true`, body(withParts, { receivableAccount: 1110, costOfGoodsAccount: 7080 }));
  assert.equal(dry.status, 200, dry.text);
  assert.deepEqual(
    dry.body.ledgerTransaction.lines.filter((l: any) => l.debitAmount > 0).map((l: any) => l.ledgerAccount).sort(),
    [1110, 7080],
  );
});

test('an income account of the work order that does not exist is 422 naming the work order, not a database error', async () => {
  const recnum = await workOrder([{ type: 1, quantity: '1', price: '115', account: 99999991 }]);
  const before = await snapshot(recnum);
  const problem = assertProblem(await t.post(POST, body(recnum)), 'BUSINESS_RULE_VIOLATED');
  assert.deepEqual(fields(problem), [['recordNumber', 'setup_incomplete']]);
  assert.match(problem.detail, /99999991/);
  assert.deepEqual(await snapshot(recnum), before);
});

test('bad bodies are 400 naming the field', async () => {
  const cases: Array<[unknown, string]> = [
    [{}, 'recordNumber'],
    [{ recordNumber: 'S26-000320' }, 'recordNumber'],
    [{ recordNumber: 0 }, 'recordNumber'],
    [{ recordNumber: 320, invoiceDate: '2026-13-01' }, 'invoiceDate'],
    [{ recordNumber: 320, bogus: 1 }, 'bogus'],
  ];
  for (const [request, field] of cases) {
    const problem = assertProblem(await t.post(POST, request), 'VALIDATION_FAILED');
    assert.ok(
      fields(problem).some(([f]) => f === field),
      `${JSON.stringify(request)} names ${field}: ${JSON.stringify(problem.errors)}`,
    );
  }
});

// ------------------------------------------------------------------ service inventory

const equipment = (overrides: Record<string, unknown> = {}) => ({
  clientNumber: CLIENT,
  serviceLocation: SITE,
  description: 'Water heater WH-2',
  manufacturer: 'Rheem',
  model: 'XE50T10',
  serialNumber: `Q${randomUUID().slice(0, 8)}`,
  partNumber: PART.paint,
  installDate: '2026-11-02',
  warrantyEnds: '2032-11-02',
  ...overrides,
});

test('a service inventory item is stored and posts nothing: no period, year or ledgerTransaction keys', async () => {
  const journals = await countRows(t.knex, 'lgrtrn');
  const histories = await countRows(t.knex, 'invhst');
  const request = equipment();
  const res = await t.post(INVENTORY, request).set('Idempotency-Key', `inv-${randomUUID()}`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied');
  assert.deepEqual(Object.keys(res.body).sort(), ['document', 'dryRun', 'inventory', 'jobCosts']);
  assert.ok(!('period' in res.body) && !('year' in res.body) && !('ledgerTransaction' in res.body));
  assert.deepEqual(res.body.jobCosts, []);
  assert.deepEqual(res.body.inventory, []);
  assert.equal(res.body.dryRun, false);
  const { document } = res.body;
  assert.equal(document.status, 1, 'Active by default');
  const row = await t.knex('srvivt').where({ recnum: document.recordNumber }).first();
  assert.ok(row, 'stored');
  assert.equal(String(row._idnum), document.id);
  assert.equal(Number(row.clnnum), CLIENT);
  assert.equal(Number(row.srvloc), SITE);
  assert.equal(row.serial, request.serialNumber);
  assert.equal(row.mannme, 'Rheem');
  assert.equal(Number(row.prtnum), PART.paint);
  assert.equal(Number(row.status), 1);
  assert.equal(await countRows(t.knex, 'lgrtrn'), journals);
  assert.equal(await countRows(t.knex, 'invhst'), histories);

  // It reads back through the read model with the same fields.
  const read = await t.post('/api/v3/service-inventories/query', { filters: { match: { field: 'recordNumber', operator: '=', value: document.recordNumber } } });
  assert.equal(read.status, 200, read.text);
  assert.deepEqual(read.body.data[0], document);
});

test('service inventory: dry run writes nothing; the key replays; unknown client or location is 404 naming the field', async () => {
  const count = await countRows(t.knex, 'srvivt');
  const dry = await t.post(`${INVENTORY}?dryRun=true`, equipment());
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.body.dryRun, true);
  assert.ok(!('period' in dry.body));
  assert.equal(await countRows(t.knex, 'srvivt'), count);

  const key = `inv-${randomUUID()}`;
  const request = equipment();
  const first = await t.post(INVENTORY, request).set('Idempotency-Key', key);
  const again = await t.post(INVENTORY, request).set('Idempotency-Key', key);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(again.body, first.body);
  assert.equal(await countRows(t.knex, 'srvivt'), count + 1);

  const notFound: Array<[Record<string, unknown>, string]> = [
    [equipment({ clientNumber: 999999 }), 'clientNumber'],
    [equipment({ serviceLocation: 999999 }), 'serviceLocation'],
    [equipment({ partNumber: 999999 }), 'partNumber'],
  ];
  for (const [req, field] of notFound) {
    const problem = assertProblem(await t.post(INVENTORY, req), 'REFERENCE_NOT_FOUND');
    assert.deepEqual(fields(problem), [[field, 'not_found']]);
  }
  const otherClient = assertProblem(await t.post(INVENTORY, equipment({ serviceLocation: OTHER_CLIENT_SITE })), 'BUSINESS_RULE_VIOLATED');
  assert.deepEqual(fields(otherClient), [['serviceLocation', 'other_client']]);
  assert.equal(await countRows(t.knex, 'srvivt'), count + 1);
});

test('service inventory: bad bodies are 400 naming the field', async () => {
  const { description: _omit, ...noDescription } = equipment();
  const cases: Array<[unknown, string]> = [
    [noDescription, 'description'],
    [equipment({ clientNumber: 'twelve' }), 'clientNumber'],
    [equipment({ description: 'x'.repeat(51) }), 'description'],
    [equipment({ status: 3 }), 'status'],
    [equipment({ installDate: '2026-11-31x' }), 'installDate'],
    [equipment({ installDate: '2026-02-30' }), 'installDate'],
    [equipment({ warrantyEnds: '2026-01-01' }), 'warrantyEnds'],
    [equipment({ period: 11 }), 'period'],
  ];
  for (const [request, field] of cases) {
    const problem = assertProblem(await t.post(INVENTORY, request), 'VALIDATION_FAILED');
    assert.ok(
      fields(problem).some(([f]) => f === field),
      `${JSON.stringify(request)} names ${field}: ${JSON.stringify(problem.errors)}`,
    );
  }
});

test('derived values past their columns are 400 VALUE_OUT_OF_RANGE naming the field, nothing written (decision 0440): a due date past 9999-12-31 names invoiceDate, lines totalling past decimal(14, 2) name recordNumber', async () => {
  // The client's terms days added to 9999-12-31 (an explicit period, so the date reaches the due date).
  const dated = await workOrder([{ type: 1, quantity: '1', price: '115' }]);
  const before = await snapshot(dated);
  const late = assertProblem(await t.post(POST, body(dated, { invoiceDate: '9999-12-31', period: PERIOD, year: YEAR })), 'VALUE_OUT_OF_RANGE');
  assert.deepEqual(fields(late), [['invoiceDate', 'range']]);
  assert.deepEqual(await snapshot(dated), before);
  // Two lines, each within decimal(14, 2), whose sum is not (the work order's invoice total).
  // (the header's stored total stays that of the first line: the accounting system wrote the second line after it.)
  const big = await workOrder([{ type: 1, quantity: '60000', price: '10000000' }]);
  const [first] = await t.knex('srvlin').join('srvinv', 'srvinv._idnum', 'srvlin._idref').where('srvinv.recnum', big).select('srvlin.*');
  const second = randomUUID();
  await t.knex('srvlin').insert({ ...first, _idnum: second, linnum: 2 });
  const bigBefore = await snapshot(big);
  const total = assertProblem(await t.post(POST, body(big)), 'VALUE_OUT_OF_RANGE');
  assert.deepEqual(fields(total), [['recordNumber', 'range']]);
  assert.deepEqual(await snapshot(big), bigBefore);
  // The work order's stored total agrees with its lines again (the books' invariants, after each test).
  await t.knex('srvlin').where({ _idnum: second }).delete();
});
