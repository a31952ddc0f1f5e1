/**
 * POST /inventory-allocations on the seeded demo company: every status and purpose (stock per
 * location, history rows, weighted-average cost, inventory consumed, job costs, the source-23
 * journal), dry run, replays, conflicts, refusals (insufficient stock, references, 400s), checked
 * over HTTP and in the database, with the books' invariants after every write.
 */
import test from 'node:test';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { assertProblem } from '../../support/http';
import { assertBooksInvariants } from '../../support/invariants';
import { countRows } from '../../support/posting-fixture';
import { Dec } from '../../../src/storage/decimal';
import { dialectFor, type Dialect } from '../../../src/storage/dialect';

let t: TestApp;
let dialect: Dialect;
const PATH = '/api/v3/inventory-allocations';
/** Seeded demo company: open period 11 of 2026, period derived from the date. */
const DATE = '2026-11-20';
const LATER_DATE = '2026-12-03';
const LOC = { warehouse: 1, yard: 2, truck: 3 } as const;
const ACCOUNT = { warehouse: 1210, trucks: 1220, materialExpense: 5010, adjustment: 7090 } as const;
const PART = { concrete: 72, drywall: 187, lumber: 41, safety: 250 } as const;
const JOB = 2601;
const PHASE = 3;

useTestApp((app) => {
  t = app;
  dialect = dialectFor(app.engine);
});

function allocation(number: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    allocationNumber: number,
    allocationDate: DATE,
    description: 'Test allocation',
    status: 4,
    purpose: 2,
    fromLocation: LOC.warehouse,
    jobNumber: JOB,
    phaseNumber: PHASE,
    lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 10, costCode: 3, costType: 1 }],
    ...overrides,
  };
}

async function stockOf(part: number, location: number): Promise<{ onHand: Dec; available: Dec } | null> {
  const row = await t.knex('invqty').where({ prtnum: part, locnum: location }).first();
  if (!row) return null;
  return { onHand: dialect.decodeDecimal(row.qtyohn, 4)!, available: dialect.decodeDecimal(row.qtyavl, 4)! };
}

/** Quantity on hand and value of a part over every location (value = sum of its history values). */
async function partTotals(part: number): Promise<{ quantity: Dec; value: Dec; average: Dec }> {
  const q = await t.knex('invqty').where({ prtnum: part }).sum({ q: 'qtyohn' }).first();
  const v = await t.knex('invhst').where({ prtnum: part }).sum({ v: 'extcst' }).first();
  const p = await t.knex('tkfprt').where({ recnum: part }).first('avgcst');
  return { quantity: dialect.decodeDecimal(q!.q, 4) ?? new Dec(0), value: dialect.decodeDecimal(v!.v, 2) ?? new Dec(0), average: dialect.decodeDecimal(p.avgcst, 4)! };
}

const money = (v: Dec) => Number(v.toDecimalPlaces(2, Dec.ROUND_HALF_UP).toFixed(2));

test('Shipped consumption on a job: stock out at the average, inventory consumed, a job cost, the source-23 journal', async () => {
  const before = await partTotals(PART.concrete);
  const stock = (await stockOf(PART.concrete, LOC.warehouse))!;
  const expected = money(new Dec(10).times(before.value).div(before.quantity));
  const res = await t.post(PATH, allocation('T-CONSUME-1'));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied');
  const { document, ledgerTransaction, jobCosts, inventory } = res.body;
  assert.equal(res.body.dryRun, false);
  assert.equal(res.body.period, 11);
  assert.equal(res.body.year, 2026);
  assert.equal(document.allocationNumber, 'T-CONSUME-1');
  assert.equal(document.status, 4);
  assert.equal(document.purpose, 2);
  assert.equal(document.totalCost, expected);
  assert.equal(document.lines[0].extendedCost, expected);
  assert.equal(document.lines[0].costCode, 3);
  assert.equal(document.ledgerRecordNumber, ledgerTransaction.recordNumber);

  assert.equal(inventory.length, 1);
  assert.deepEqual(
    [inventory[0].partNumber, inventory[0].locationNumber, inventory[0].movementType, inventory[0].quantity, inventory[0].extendedCost, inventory[0].sourceNumber, inventory[0].sourceRecordNumber, inventory[0].period, inventory[0].year],
    [PART.concrete, LOC.warehouse, 4, -10, -expected, 23, document.recordNumber, 11, 2026],
  );
  assert.equal(inventory[0].quantityAfter, Number(stock.onHand.minus(10).toFixed()));

  assert.equal(ledgerTransaction.sourceNumber, 23);
  assert.equal(ledgerTransaction.transactionNumber, 'T-CONSUME-1');
  assert.deepEqual(
    ledgerTransaction.lines.map((l: any) => [l.ledgerAccount, l.debitAmount, l.creditAmount, l.jobNumber]),
    [
      [ACCOUNT.materialExpense, expected, 0, JOB],
      [ACCOUNT.warehouse, 0, expected, null],
    ],
  );
  assert.equal(jobCosts.length, 1);
  assert.deepEqual(
    [jobCosts[0].jobNumber, jobCosts[0].phaseNumber, jobCosts[0].costCode, jobCosts[0].costType, jobCosts[0].costAmount, jobCosts[0].sourceNumber, jobCosts[0].documentNumber, jobCosts[0].sourceRecordNumber, jobCosts[0].sourceLineNumber],
    [JOB, PHASE, 3, 1, expected, 23, 'T-CONSUME-1', document.recordNumber, 1],
  );

  // In the database.
  const after = (await stockOf(PART.concrete, LOC.warehouse))!;
  assert.equal(after.onHand.toFixed(), stock.onHand.minus(10).toFixed());
  assert.equal(after.available.toFixed(), stock.available.minus(10).toFixed());
  const header = await t.knex('invalc').where({ alcnum: 'T-CONSUME-1' }).first();
  assert.equal(Number(header.recnum), document.recordNumber);
  assert.equal(Number(header.lgrrec), ledgerTransaction.recordNumber);
  assert.equal(await countRows(t.knex, 'invaln', { _idref: header._idnum }), 1);
  const consumed = await t.knex('invcsm').where({ alcrec: document.recordNumber });
  assert.equal(consumed.length, 1);
  assert.equal(Number(consumed[0].jcsrec), jobCosts[0].recordNumber);
  assert.equal(dialect.decodeDecimal(consumed[0].extcst, 2)!.toFixed(2), new Dec(expected).toFixed(2));
  assert.equal(await countRows(t.knex, 'invhst', { srcnum: 23, srcrec: document.recordNumber }), 1);
  const totals = await partTotals(PART.concrete);
  assert.equal(totals.value.toFixed(2), before.value.minus(expected).toFixed(2), 'the stock value fell by what the ledger credits');
  await assertBooksInvariants(t.knex);
});

test('Shipped transfer between locations with different accounts: two movements at one value, journal between the accounts', async () => {
  const from = (await stockOf(PART.drywall, LOC.warehouse))!;
  const to = await stockOf(PART.drywall, LOC.truck);
  const before = await partTotals(PART.drywall);
  const res = await t.post(PATH, allocation('T-TRANSFER-1', { purpose: 1, toLocation: LOC.truck, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.drywall, quantity: 12 }] }));
  assert.equal(res.status, 200, res.text);
  const { document, ledgerTransaction, jobCosts, inventory } = res.body;
  assert.deepEqual(jobCosts, []);
  assert.equal(inventory.length, 2);
  assert.deepEqual(
    inventory.map((m: any) => [m.locationNumber, m.movementType, m.quantity]),
    [
      [LOC.warehouse, 2, -12],
      [LOC.truck, 3, 12],
    ],
  );
  assert.equal(inventory[0].extendedCost, -inventory[1].extendedCost, 'in at the value it left at');
  const value = inventory[1].extendedCost;
  assert.equal(document.totalCost, value);
  assert.deepEqual(
    ledgerTransaction.lines.map((l: any) => [l.ledgerAccount, l.debitAmount, l.creditAmount]),
    [
      [ACCOUNT.trucks, value, 0],
      [ACCOUNT.warehouse, 0, value],
    ],
  );
  assert.equal((await stockOf(PART.drywall, LOC.warehouse))!.onHand.toFixed(), from.onHand.minus(12).toFixed());
  const after = (await stockOf(PART.drywall, LOC.truck))!;
  assert.equal(after.onHand.toFixed(), (to?.onHand ?? new Dec(0)).plus(12).toFixed());
  assert.equal(after.available.toFixed(), (to?.available ?? new Dec(0)).plus(12).toFixed());
  const totals = await partTotals(PART.drywall);
  assert.equal(totals.quantity.toFixed(), before.quantity.toFixed(), 'a transfer keeps the part total');
  assert.equal(totals.value.toFixed(2), before.value.toFixed(2));
  await assertBooksInvariants(t.knex);
});

test('Shipped transfer between locations sharing an account moves stock and posts no journal', async () => {
  const res = await t.post(PATH, allocation('T-TRANSFER-2', { purpose: 1, toLocation: LOC.yard, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.lumber, quantity: 3 }] }));
  assert.equal(res.status, 200, res.text);
  assert.equal('ledgerTransaction' in res.body, false, 'absent, not null');
  assert.equal(res.body.document.ledgerRecordNumber, null);
  assert.equal(res.body.inventory.length, 2);
  assert.equal((await stockOf(PART.lumber, LOC.yard))!.onHand.toFixed(), '3');
  await assertBooksInvariants(t.knex);
});

test('Shipped loss: stock out, the adjustment account debited', async () => {
  const stock = (await stockOf(PART.drywall, LOC.warehouse))!;
  const res = await t.post(PATH, allocation('T-LOSS-1', { purpose: 3, jobNumber: undefined, phaseNumber: undefined, description: 'Damaged in storage', lines: [{ lineNumber: 1, partNumber: PART.drywall, quantity: 2 }] }));
  assert.equal(res.status, 200, res.text);
  const { ledgerTransaction, inventory, document } = res.body;
  assert.equal(inventory[0].movementType, 5);
  assert.equal(inventory[0].quantity, -2);
  assert.deepEqual(
    ledgerTransaction.lines.map((l: any) => [l.ledgerAccount, l.debitAmount, l.creditAmount]),
    [
      [ACCOUNT.adjustment, document.totalCost, 0],
      [ACCOUNT.warehouse, 0, document.totalCost],
    ],
  );
  assert.equal((await stockOf(PART.drywall, LOC.warehouse))!.onHand.toFixed(), stock.onHand.minus(2).toFixed());
  await assertBooksInvariants(t.knex);
});

test('Shipped revaluation: the average becomes the new unit cost, a hstavg row, the change posted', async () => {
  const before = await partTotals(PART.safety);
  const hst = await countRows(t.knex, 'hstavg', { prtnum: PART.safety });
  const res = await t.post(PATH, allocation('T-REVAL-1', { purpose: 4, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.safety, newUnitCost: 101.25 }] }));
  assert.equal(res.status, 200, res.text);
  const { inventory, ledgerTransaction, document } = res.body;
  const delta = new Dec(money(before.quantity.times('101.25'))).minus(before.value);
  assert.equal(inventory.length, 1);
  assert.deepEqual([inventory[0].movementType, inventory[0].quantity, inventory[0].extendedCost, inventory[0].unitCost], [6, 0, Number(delta.toFixed(2)), 101.25]);
  assert.equal(document.totalCost, Number(delta.toFixed(2)));
  const up = delta.isPositive();
  const amount = Number(delta.abs().toFixed(2));
  assert.deepEqual(
    ledgerTransaction.lines.map((l: any) => [l.ledgerAccount, l.debitAmount, l.creditAmount]),
    up
      ? [
          [ACCOUNT.warehouse, amount, 0],
          [ACCOUNT.adjustment, 0, amount],
        ]
      : [
          [ACCOUNT.adjustment, amount, 0],
          [ACCOUNT.warehouse, 0, amount],
        ],
  );
  const after = await partTotals(PART.safety);
  assert.equal(after.average.toFixed(4), '101.2500');
  assert.equal(after.quantity.toFixed(), before.quantity.toFixed());
  assert.equal(await countRows(t.knex, 'hstavg', { prtnum: PART.safety }), hst + 1);
  const change = await t.knex('hstavg').where({ prtnum: PART.safety }).orderBy('recnum', 'desc').first();
  assert.equal(dialect.decodeDecimal(change.newavg, 4)!.toFixed(4), '101.2500');
  assert.equal(Number(change.srcnum), 23);
  assert.equal(Number(change.srcrec), document.recordNumber);
  await assertBooksInvariants(t.knex);
});

test('Hold Stock reduces available only (no movement, no journal, no job cost); Open and Review store only', async () => {
  for (const purpose of [1, 2, 3]) {
    for (const status of [1, 2, 3]) {
      const stock = (await stockOf(PART.concrete, LOC.warehouse))!;
      const journals = await countRows(t.knex, 'lgrtrn');
      const extra = purpose === 1 ? { toLocation: LOC.truck, jobNumber: undefined, phaseNumber: undefined } : purpose === 3 ? { jobNumber: undefined, phaseNumber: undefined } : {};
      const lines = [{ lineNumber: 1, partNumber: PART.concrete, quantity: 5, ...(purpose === 2 ? { costCode: 3, costType: 1 } : {}) }];
      const res = await t.post(PATH, allocation(`T-S${status}-P${purpose}`, { status, purpose, lines, ...extra }));
      assert.equal(res.status, 200, `${status}/${purpose}: ${res.text}`);
      assert.equal(res.body.document.status, status);
      assert.equal('ledgerTransaction' in res.body, false);
      assert.deepEqual(res.body.jobCosts, []);
      assert.deepEqual(res.body.inventory, []);
      assert.equal(res.body.period, 11);
      assert.equal(await countRows(t.knex, 'lgrtrn'), journals);
      const after = (await stockOf(PART.concrete, LOC.warehouse))!;
      assert.equal(after.onHand.toFixed(), stock.onHand.toFixed(), `${status}/${purpose}: on hand unchanged`);
      assert.equal(after.available.toFixed(), (status === 3 ? stock.available.minus(5) : stock.available).toFixed(), `${status}/${purpose}: available`);
      assert.equal(await countRows(t.knex, 'invhst', { srcnum: 23, srcrec: res.body.document.recordNumber }), 0);
    }
  }
  // Revaluation stored (Open) moves nothing either.
  const avg = (await partTotals(PART.concrete)).average;
  const res = await t.post(PATH, allocation('T-S1-P4', { status: 1, purpose: 4, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.concrete, newUnitCost: 1 }] }));
  assert.equal(res.status, 200, res.text);
  assert.equal((await partTotals(PART.concrete)).average.toFixed(), avg.toFixed());
  await assertBooksInvariants(t.knex);
});

test('held stock is not available to a later allocation: 422 INSUFFICIENT_STOCK names the line, part, location and quantities', async () => {
  const stock = (await stockOf(PART.concrete, LOC.warehouse))!;
  const asked = stock.available.plus(1);
  const counts = { invalc: await countRows(t.knex, 'invalc'), invhst: await countRows(t.knex, 'invhst'), lgrtrn: await countRows(t.knex, 'lgrtrn') };
  const res = await t.post(
    PATH,
    allocation('T-SHORT-1', {
      lines: [
        { lineNumber: 1, partNumber: PART.drywall, quantity: 1, costCode: 3, costType: 1 },
        { lineNumber: 2, partNumber: PART.concrete, quantity: Number(asked.toFixed()), costCode: 3, costType: 1 },
      ],
    }),
  );
  const body = assertProblem(res, 'INSUFFICIENT_STOCK');
  assert.deepEqual(body.errors.map((e: any) => e.field), ['lines[1].quantity']);
  assert.deepEqual(body.shortages, [{ field: 'lines[1]', partNumber: PART.concrete, locationNumber: LOC.warehouse, quantityAsked: Number(asked.toFixed()), quantityAvailable: Number(stock.available.toFixed()) }]);
  assert.match(body.detail, new RegExp(`part ${PART.concrete} at location ${LOC.warehouse}`));
  assert.ok(stock.onHand.greaterThan(stock.available), 'on hand covers it: the held quantity is what is missing');
  // Nothing written.
  assert.equal(await countRows(t.knex, 'invalc'), counts.invalc);
  assert.equal(await countRows(t.knex, 'invhst'), counts.invhst);
  assert.equal(await countRows(t.knex, 'lgrtrn'), counts.lgrtrn);
  assert.equal((await stockOf(PART.drywall, LOC.warehouse))!.onHand.toFixed(), (await stockOf(PART.drywall, LOC.warehouse))!.onHand.toFixed());
  // A location without the part has nothing.
  const none = await t.post(PATH, allocation('T-SHORT-2', { purpose: 3, fromLocation: 5, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.safety, quantity: 1 }] }));
  const b2 = assertProblem(none, 'INSUFFICIENT_STOCK');
  assert.equal(b2.shortages[0].quantityAvailable, 0);
});

test('dry run: the whole result with dryRun true, nothing written', async () => {
  const stock = (await stockOf(PART.concrete, LOC.warehouse))!;
  const counts = async () => Promise.all(['invalc', 'invaln', 'invhst', 'invcsm', 'jobcst', 'lgrtrn', 'lgtnln', 'hstavg', 'invqty'].map((tb) => countRows(t.knex, tb)));
  const before = await counts();
  const res = await t.post(`${PATH}?dryRun=true`, allocation('T-DRY-1')).set('Idempotency-Key', 'dry-key-1');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.dryRun, true);
  assert.equal(res.body.inventory.length, 1);
  assert.equal(res.body.jobCosts.length, 1);
  assert.ok(res.body.ledgerTransaction);
  assert.deepEqual(await counts(), before);
  assert.equal((await stockOf(PART.concrete, LOC.warehouse))!.onHand.toFixed(), stock.onHand.toFixed());
  // The key was not consumed: a real post with it applies.
  const real = await t.post(PATH, allocation('T-DRY-1')).set('Idempotency-Key', 'dry-key-1');
  assert.equal(real.status, 200, real.text);
  assert.equal(real.headers['idempotency-status'], 'applied');
  await assertBooksInvariants(t.knex);
});

test('Idempotency-Key replay, identical re-send replayed, different content 409 DOCUMENT_NUMBER_CONFLICT', async () => {
  const body = allocation('T-IDEM-1', { lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 1.5, costCode: 3, costType: 1 }] });
  const first = await t.post(PATH, body).set('Idempotency-Key', 'alloc-idem-1');
  assert.equal(first.status, 200, first.text);
  const stock = (await stockOf(PART.concrete, LOC.warehouse))!;
  const again = await t.post(PATH, body).set('Idempotency-Key', 'alloc-idem-1');
  assert.equal(again.status, 200);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(again.body, first.body);
  // Without a key, the same allocation number with the same content: the existing allocation.
  const resend = await t.post(PATH, body);
  assert.equal(resend.status, 200, resend.text);
  assert.equal(resend.headers['idempotency-status'], 'replayed');
  assert.equal(resend.body.document.recordNumber, first.body.document.recordNumber);
  assert.deepEqual(resend.body.inventory, first.body.inventory);
  assert.deepEqual(resend.body.jobCosts, first.body.jobCosts);
  assert.deepEqual(resend.body.ledgerTransaction, first.body.ledgerTransaction);
  assert.equal(await countRows(t.knex, 'invalc', { alcnum: 'T-IDEM-1' }), 1);
  assert.equal((await stockOf(PART.concrete, LOC.warehouse))!.onHand.toFixed(), stock.onHand.toFixed(), 'moved once');
  const conflict = await t.post(PATH, { ...body, lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 2, costCode: 3, costType: 1 }] });
  const problem = assertProblem(conflict, 'DOCUMENT_NUMBER_CONFLICT');
  assert.deepEqual(problem.errors.map((e: any) => e.field), ['allocationNumber', 'lines[0]']);
  assert.equal(problem.existingRecordNumber, first.body.document.recordNumber);
});

test('unknown part, location, job, phase, cost code and cost type: 404 REFERENCE_NOT_FOUND listing each', async () => {
  const res = await t.post(
    PATH,
    allocation('T-404-1', {
      fromLocation: 999,
      jobNumber: 999999,
      lines: [
        { lineNumber: 1, partNumber: 999999, quantity: 1, costCode: 3, costType: 1 },
        { lineNumber: 2, partNumber: PART.concrete, quantity: 1, costCode: 987.654, costType: 9 },
      ],
    }),
  );
  const body = assertProblem(res, 'REFERENCE_NOT_FOUND');
  assert.deepEqual(body.errors.map((e: any) => e.field).sort(), ['fromLocation', 'jobNumber', 'lines[0].partNumber', 'lines[1].costCode', 'lines[1].costType'].sort());
  const phase = await t.post(PATH, allocation('T-404-2', { phaseNumber: 999, toLocation: undefined }));
  assert.deepEqual(assertProblem(phase, 'REFERENCE_NOT_FOUND').errors.map((e: any) => e.field), ['phaseNumber']);
  const to = await t.post(PATH, allocation('T-404-3', { purpose: 1, toLocation: 998, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 1 }] }));
  assert.deepEqual(assertProblem(to, 'REFERENCE_NOT_FOUND').errors.map((e: any) => e.field), ['toLocation']);
  assert.equal(await countRows(t.knex, 'invalc', { alcnum: 'T-404-1' }), 0);
});

test('400 names the fields: purpose rules, decimals, schema', async () => {
  const cases: Array<[Record<string, unknown>, string[]]> = [
    [allocation('T-400-1', { purpose: 1, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 1 }] }), ['toLocation']],
    [allocation('T-400-2', { jobNumber: undefined, phaseNumber: undefined }), ['jobNumber']],
    [allocation('T-400-3', { purpose: 4, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 1 }] }), ['lines[0].quantity', 'lines[0].newUnitCost']],
    [allocation('T-400-4', { lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 1.00001, costCode: 3.0001 }] }), ['lines[0].quantity', 'lines[0].costCode']],
    [allocation('T-400-5', { purpose: 3, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 1, costCode: 3 }] }), ['lines[0].costCode']],
    [allocation('T-400-6', { purpose: 4, status: 3, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.concrete, newUnitCost: 1 }] }), ['status']],
    [allocation('T-400-7', { lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: 1 }, { lineNumber: 1, partNumber: PART.concrete, quantity: 1 }] }), ['lines[1].lineNumber']],
  ];
  for (const [body, fields] of cases) {
    const res = await t.post(PATH, body);
    const problem = assertProblem(res, 'VALIDATION_FAILED');
    assert.deepEqual(problem.errors.map((e: any) => e.field), fields, `${body.allocationNumber}: ${res.text}`);
  }
  const schema = await t.post(PATH, { allocationNumber: 'T-400-8', allocationDate: DATE, purpose: 9, fromLocation: 1, lines: [{ lineNumber: 1, partNumber: PART.concrete, quantity: -1 }], bogus: 1 });
  assert.equal(schema.status, 400, schema.text);
  const fields = schema.body.errors.map((e: any) => e.field).sort();
  for (const f of ['purpose', 'lines[0].quantity', 'bogus']) assert.ok(fields.includes(f), `${f} named: ${fields}`);
  assert.equal(await countRows(t.knex, 'invalc', { alcnum: 'T-400-1' }), 0);
});

test('a date later than the open period: 422 PERIOD_CLOSED; an explicit invalid period: 422 PERIOD_INVALID', async () => {
  const later = await t.post(PATH, allocation('T-PERIOD-1', { allocationDate: LATER_DATE }));
  assertProblem(later, 'PERIOD_CLOSED');
  const invalid = await t.post(PATH, allocation('T-PERIOD-2', { period: 13, year: 2026 }));
  assertProblem(invalid, 'PERIOD_INVALID');
  assert.equal(await countRows(t.knex, 'invalc', { alcnum: 'T-PERIOD-1' }), 0);
  await assertBooksInvariants(t.knex);
});

test('the request examples of openapi.yaml post on the seeded demo company', async () => {
  const doc = parse(fs.readFileSync(path.resolve(__dirname, '../../../openapi.yaml'), 'utf8'));
  const examples = doc.paths['/inventory-allocations'].post.requestBody.content['application/json'].examples as Record<string, { value: Record<string, unknown> }>;
  assert.deepEqual(Object.keys(examples), ['consumeOnJob', 'transfer', 'hold', 'loss', 'revaluation']);
  for (const [name, example] of Object.entries(examples)) {
    const res = await t.post(PATH, example.value);
    assert.equal(res.status, 200, `${name}: ${res.text}`);
    assert.equal(res.body.document.allocationNumber, example.value.allocationNumber);
    assert.equal(res.body.inventory.length > 0, example.value.status === 4, `${name}: moves stock only when Shipped`);
  }
  await assertBooksInvariants(t.knex);
});

test('concurrent allocations of the same stock: together they never take more than there is', async () => {
  // Two parts, taken in opposite line order by the two halves (part locks are taken in part order: no deadlock).
  const a = (await stockOf(PART.lumber, LOC.warehouse))!.available;
  const b = (await stockOf(PART.concrete, LOC.warehouse))!.available;
  const each = a.div(4).toDecimalPlaces(0, Dec.ROUND_DOWN).plus(1);
  const requests = Array.from({ length: 6 }, (_, i) =>
    t.post(
      PATH,
      allocation(`T-RACE-${i}`, {
        purpose: 3,
        jobNumber: undefined,
        phaseNumber: undefined,
        lines:
          i % 2 === 0
            ? [
                { lineNumber: 1, partNumber: PART.lumber, quantity: Number(each.toFixed()) },
                { lineNumber: 2, partNumber: PART.concrete, quantity: 1 },
              ]
            : [
                { lineNumber: 1, partNumber: PART.concrete, quantity: 1 },
                { lineNumber: 2, partNumber: PART.lumber, quantity: Number(each.toFixed()) },
              ],
      }),
    ),
  );
  const results = await Promise.all(requests.map((r) => r.then((res) => res)));
  const ok = results.filter((r) => r.status === 200).length;
  for (const r of results) if (r.status !== 200) assertProblem(r, 'INSUFFICIENT_STOCK');
  assert.equal(ok, 3, 'exactly as many as the stock covers (4 x each > available >= 3 x each)');
  assert.equal((await stockOf(PART.lumber, LOC.warehouse))!.available.toFixed(), a.minus(each.times(3)).toFixed());
  assert.equal((await stockOf(PART.concrete, LOC.warehouse))!.available.toFixed(), b.minus(3).toFixed());
  await assertBooksInvariants(t.knex);
});

test('422 BUSINESS_RULE_VIOLATED: inactive location and part, closed job and phase, a setup without the adjustment account', async () => {
  await t.knex('invloc').where({ recnum: 4 }).update({ inactv: true });
  await t.knex('actrec').where({ recnum: 2603 }).update({ status: 6 });
  const inactivePart = await t.knex('tkfprt').where({ inactv: true }).first('recnum');
  try {
    const res = await t.post(
      PATH,
      allocation('T-422-1', {
        fromLocation: 4,
        jobNumber: 2603,
        phaseNumber: undefined,
        lines: [{ lineNumber: 1, partNumber: Number(inactivePart.recnum), quantity: 1, costCode: 3, costType: 1 }],
      }),
    );
    const body = assertProblem(res, 'BUSINESS_RULE_VIOLATED');
    assert.deepEqual(body.errors.map((e: any) => [e.field, e.code]).sort(), [
      ['fromLocation', 'inactive'],
      ['jobNumber', 'closed'],
      ['lines[0].partNumber', 'inactive'],
    ]);
    await t.knex('jobphs').where({ jobnum: JOB, phsnum: 4 }).update({ status: 3 });
    const closed = await t.post(PATH, allocation('T-422-2', { phaseNumber: 4 }));
    assert.deepEqual(assertProblem(closed, 'BUSINESS_RULE_VIOLATED').errors.map((e: any) => e.field), ['phaseNumber']);
  } finally {
    await t.knex('jobphs').where({ jobnum: JOB, phsnum: 4 }).update({ status: 1 });
    await t.knex('invloc').where({ recnum: 4 }).update({ inactv: false });
    await t.knex('actrec').where({ recnum: 2603 }).update({ status: 4 });
  }
  const setup = await t.knex('lgrstp').orderBy('recnum').first('recnum', 'invadj');
  await t.knex('lgrstp').where({ recnum: setup.recnum }).update({ invadj: null });
  try {
    const loss = await t.post(PATH, allocation('T-422-3', { purpose: 3, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.drywall, quantity: 1 }] }));
    const body = assertProblem(loss, 'BUSINESS_RULE_VIOLATED');
    assert.deepEqual(body.errors.map((e: any) => [e.field, e.code]), [['purpose', 'setup_incomplete']]);
    // Stored only (Open), the same allocation needs no account.
    const open = await t.post(PATH, allocation('T-422-4', { status: 1, purpose: 3, jobNumber: undefined, phaseNumber: undefined, lines: [{ lineNumber: 1, partNumber: PART.drywall, quantity: 1 }] }));
    assert.equal(open.status, 200, open.text);
  } finally {
    await t.knex('lgrstp').where({ recnum: setup.recnum }).update({ invadj: setup.invadj });
  }
  assert.equal(await countRows(t.knex, 'invalc', { alcnum: 'T-422-1' }), 0);
});
