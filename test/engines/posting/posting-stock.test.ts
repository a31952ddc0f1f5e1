/**
 * applyStockMovements (src/engines/posting/ledger/stock.ts) directly, for the movements the
 * allocation write does not make: receipts at a unit cost (weighted average, last cost, hstavg),
 * a receipt into a location the part was never at, shipping held stock, and the refusals.
 */
import { namedLocksFor } from '../../../src/storage/named-locks';
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { assertBooksInvariants, assertInventoryValueMatchesLedger } from '../../support/invariants';
import { Dec } from '../../../src/storage/decimal';
import { dialectFor, type Dialect } from '../../../src/storage/dialect';
import { toDbTime } from '../../../src/storage/db-time';
import { ApiProblem } from '../../../src/errors/problem';
import { StatementBatch } from '../../../src/storage/statement-batch';
import type { PostingContext } from '../../../src/engines/posting/context';
import { MOVEMENT, applyStockMovements, type StockMovement } from '../../../src/engines/posting/ledger/stock';

let t: TestApp;
let dialect: Dialect;
const PART = 72;
const base = { sourceNumber: 13, sourceRecordNumber: 424242, transactionDate: '2026-11-20', period: 11, year: 2026 };

useTestApp((app) => {
  t = app;
  dialect = dialectFor(app.engine);
});

/** Runs the movements in a transaction of their own (committed unless `rollback`). */
async function run(movements: StockMovement[], rollback = false) {
  let out: Awaited<ReturnType<typeof applyStockMovements>> | undefined;
  await t.knex
    .transaction(async (trx) => {
      const ctx: PostingContext = { trx, writes: new StatementBatch(trx), lockName: (name) => namedLocksFor(t.engine)(trx, name), dialect, numbers: t.services.numbers, user: 'stock-test', today: '2026-11-20', now: toDbTime(t.engine, new Date()), dryRun: false };
      out = await applyStockMovements(ctx, movements);
      if (rollback) throw new Error('rollback');
    })
    .catch((e) => {
      if (!(rollback && e.message === 'rollback')) throw e;
    });
  return out!;
}

async function part(): Promise<{ quantity: Dec; value: Dec; average: Dec; last: Dec }> {
  const q = await t.knex('invqty').where({ prtnum: PART }).sum({ q: 'qtyohn' }).first();
  const v = await t.knex('invhst').where({ prtnum: PART }).sum({ v: 'extcst' }).first();
  const p = await t.knex('tkfprt').where({ recnum: PART }).first('avgcst', 'lstcst');
  return { quantity: dialect.decodeDecimal(q!.q, 4)!, value: dialect.decodeDecimal(v!.v, 2)!, average: dialect.decodeDecimal(p.avgcst, 4)!, last: dialect.decodeDecimal(p.lstcst, 4)! };
}

async function cell(location: number) {
  const row = await t.knex('invqty').where({ prtnum: PART, locnum: location }).first();
  return row ? { onHand: dialect.decodeDecimal(row.qtyohn, 4)!.toFixed(), available: dialect.decodeDecimal(row.qtyavl, 4)!.toFixed() } : null;
}

test('a receipt at a unit cost: on hand and available up, value = quantity x cost, new average with a hstavg row, last cost', async () => {
  const before = await part();
  const hst = await t.knex('hstavg').where({ prtnum: PART }).count({ n: '*' }).first();
  const out = await run([{ ...base, field: 'lines[0]', partNumber: PART, locationNumber: 1, movementType: MOVEMENT.receipt, quantity: new Dec(10), onHand: true, available: true, unitCost: new Dec('50.125') }]);
  assert.equal(out.inventory.length, 1);
  assert.equal(out.applied[0]!.value.toFixed(2), '501.25');
  assert.deepEqual([out.inventory[0]!.quantity, out.inventory[0]!.unitCost, out.inventory[0]!.extendedCost, out.inventory[0]!.sourceNumber, out.inventory[0]!.period], [10, 50.125, 501.25, 13, 11]);
  const after = await part();
  const average = before.value.plus('501.25').div(before.quantity.plus(10)).toDecimalPlaces(4, Dec.ROUND_HALF_UP);
  assert.equal(after.average.toFixed(4), average.toFixed(4));
  assert.equal(after.last.toFixed(4), '50.1250');
  const hstAfter = await t.knex('hstavg').where({ prtnum: PART }).count({ n: '*' }).first();
  assert.equal(Number(hstAfter!.n), Number(hst!.n) + 1);
  const qavg = await t.knex('invqty').where({ prtnum: PART }).select('avgcst');
  assert.ok(qavg.every((r: any) => dialect.decodeDecimal(r.avgcst, 4)!.equals(average)), 'every location of the part carries the average');
  await assertBooksInvariantsExceptLedger();
});

test('a receipt into a location the part was never at creates its quantity row', async () => {
  assert.equal(await cell(4), null);
  const out = await run([{ ...base, field: 'lines[0]', partNumber: PART, locationNumber: 4, movementType: MOVEMENT.receipt, quantity: new Dec(3), onHand: true, available: true }]);
  assert.equal(out.inventory[0]!.quantityAfter, 3);
  assert.deepEqual(await cell(4), { onHand: '3', available: '3' });
});

test('a hold, then shipping the held stock (on hand only); shipping more than is held is refused', async () => {
  await run([{ ...base, field: 'lines[0]', partNumber: PART, locationNumber: 4, movementType: MOVEMENT.consumed, quantity: new Dec(-2), onHand: false, available: true }]);
  assert.deepEqual(await cell(4), { onHand: '3', available: '1' });
  await assert.rejects(
    run([{ ...base, field: 'lines[0]', partNumber: PART, locationNumber: 4, movementType: MOVEMENT.consumed, quantity: new Dec(-3), onHand: true, available: false }]),
    (e: ApiProblem) => e.code === 'INSUFFICIENT_STOCK' && (e.extensions.shortages as any[])[0].quantityAvailable === 2,
  );
  const out = await run([{ ...base, field: 'lines[0]', partNumber: PART, locationNumber: 4, movementType: MOVEMENT.consumed, quantity: new Dec(-2), onHand: true, available: false }]);
  assert.equal(out.inventory[0]!.quantityAfter, 1);
  assert.deepEqual(await cell(4), { onHand: '1', available: '1' });
  await assertBooksInvariantsExceptLedger();
});

test('every short movement of a batch is named; nothing is written', async () => {
  const before = await cell(4);
  await assert.rejects(
    run([
      { ...base, field: 'lines[0]', partNumber: PART, locationNumber: 4, movementType: MOVEMENT.loss, quantity: new Dec(-1), onHand: true, available: true },
      { ...base, field: 'lines[1]', partNumber: PART, locationNumber: 4, movementType: MOVEMENT.loss, quantity: new Dec(-1), onHand: true, available: true },
      { ...base, field: 'lines[2]', partNumber: 999999, locationNumber: 4, movementType: MOVEMENT.loss, quantity: new Dec(-1), onHand: true, available: true },
    ]),
    (e: ApiProblem) => e.code === 'REFERENCE_NOT_FOUND' && e.errors![0]!.field === 'lines[2].partNumber',
  );
  await assert.rejects(
    run([
      { ...base, field: 'lines[0]', partNumber: PART, locationNumber: 4, movementType: MOVEMENT.loss, quantity: new Dec(-1), onHand: true, available: true },
      { ...base, field: 'lines[1]', partNumber: PART, locationNumber: 4, movementType: MOVEMENT.loss, quantity: new Dec(-1), onHand: true, available: true },
    ]),
    (e: ApiProblem) => e.code === 'INSUFFICIENT_STOCK' && e.errors!.map((x) => x.field).join() === 'lines[1].quantity' && /1 asked, 0 available/.test(e.detail),
  );
  assert.deepEqual(await cell(4), before);
});

/** The books' invariants but the ledger-vs-movement-value check: these movements post no journal. */
async function assertBooksInvariantsExceptLedger(): Promise<void> {
  await assertBooksInvariants(t.knex, { except: [assertInventoryValueMatchesLedger] });
}
