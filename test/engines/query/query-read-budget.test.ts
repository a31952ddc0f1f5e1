/**
 * The per-process budget of rows in flight (src/engines/query/read-budget.ts): reads that fit run
 * at once, others wait first come first served, a read heavier than the budget runs alone, and
 * giving back twice does not free rows another read holds. Records built by the decoder keep the
 * published field order (the JSON a client sees).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReadBudget } from '../../../src/engines/query/read-budget';
import { recordDecoder } from '../../../src/engines/query/envelope';
import { queryDialectFor } from '../../../src/storage/dialect';
import type { FieldDef } from '../../../src/catalog/types';

const tick = () => new Promise((r) => setImmediate(r));

test('reads within the budget run at once; the next waits until rows are given back, in arrival order', async () => {
  const budget = new ReadBudget(1000);
  const first = await budget.acquire(600);
  const second = await budget.acquire(400);
  assert.equal(budget.inUse, 1000);
  const order: string[] = [];
  const third = budget.acquire(300).then((r) => (order.push('third'), r));
  const fourth = budget.acquire(100).then((r) => (order.push('fourth'), r));
  await tick();
  assert.deepEqual(order, [], 'nothing fits while the budget is spent');
  second();
  await tick();
  // 400 free: the third (300) goes, and the fourth (100) behind it fits too.
  assert.deepEqual(order, ['third', 'fourth']);
  assert.equal(budget.inUse, 1000);
  first();
  (await third)();
  (await fourth)();
  assert.equal(budget.inUse, 0);
});

test('a read heavier than the whole budget runs alone; a second release is ignored', async () => {
  const budget = new ReadBudget(1000);
  const small = await budget.acquire(10);
  let heavyIn = false;
  const heavy = budget.acquire(50_000).then((r) => ((heavyIn = true), r));
  await tick();
  assert.equal(heavyIn, false, 'waits for the running read');
  small();
  small();
  const release = await heavy;
  assert.equal(budget.inUse, 1000);
  let laterIn = false;
  const later = budget.acquire(1).then((r) => ((laterIn = true), r));
  await tick();
  assert.equal(laterIn, false, 'nothing runs beside it');
  release();
  (await later)();
  assert.equal(budget.inUse, 0);
});

test('weight counts the page and an estimate of its children', () => {
  assert.equal(ReadBudget.weigh(100, 0), 100);
  assert.equal(ReadBudget.weigh(1000, 1), 5000);
});

test('decoded records carry the fields in published order, decoded by the dialect', () => {
  const qd = queryDialectFor('sqlite');
  const fields = [
    { name: 'zeta', column: 'z', kind: 'string', sqlType: 'nvarchar(10)', nullable: false },
    { name: 'amount', column: 'amt', kind: 'decimal', scale: 2, sqlType: 'decimal(14, 2)', nullable: true },
    { name: 'active', column: 'act', kind: 'boolean', sqlType: 'bit', nullable: false },
  ] as FieldDef[];
  const decode = recordDecoder(qd, fields, { entity: 'zetas', keyColumn: 'z' });
  const record = decode({ amt: 12345, z: 'x', act: 1, other: 'ignored' });
  assert.equal(JSON.stringify(record), '{"zeta":"x","amount":123.45,"active":true}');
  // The same list again reuses the constructor and still decodes this row's values.
  assert.equal(JSON.stringify(recordDecoder(qd, fields, { entity: 'zetas', keyColumn: 'z' })({ amt: null, z: 'y', act: 0 })), '{"zeta":"y","amount":null,"active":false}');
});
