/**
 * Record numbers reserved in blocks (src/storage/numbers.ts, NUMBER_BLOCK_SIZE): two processes
 * (two allocators on their own connections to one database) drawing from one counter never hand
 * out a number twice; every number handed out was committed to numseq before (the counter is past
 * it); ranges are consecutive; a range larger than the block takes a block of its own; left-overs
 * are gaps, never reused after discardReserved().
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../support/app';
import { parseDatabaseUrl } from '../../src/storage/database';
import { engineOf } from '../../src/storage/dialect';
import { NumberAllocator, rangeValues } from '../../src/storage/numbers';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let a: Knex;
let b: Knex;
before(async () => {
  db = await createTestDatabase();
  a = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 2 }).config);
  b = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 2 }).config);
});
after(async () => {
  await a.destroy();
  await b.destroy();
  await db.drop();
});

async function counter(name: string): Promise<number> {
  const row = await a('numseq').where({ name }).first();
  return Number(row.next_value);
}

test('two allocators with blocks of 5 on one counter: unique, consecutive, committed before handed out', async () => {
  const one = new NumberAllocator(a, engineOf(a), 5);
  const two = new NumberAllocator(b, engineOf(b), 5);
  const seen = new Set<number>();
  const sizes = [1, 2, 1, 3, 1, 7, 1, 1, 4, 2, 1, 1, 5, 1, 6];
  for (let i = 0; i < sizes.length; i += 1) {
    const allocator = i % 3 === 0 ? two : one;
    const count = sizes[i]!;
    const range = i % 2 === 0 ? await allocator.allocate('jobcst', count) : (await allocator.allocateMany({ jobcst: count, lgrtrn: 1 })).jobcst!;
    assert.equal(range.count, count);
    const values = rangeValues(range);
    for (const n of values) {
      assert.ok(!seen.has(n), `number ${n} handed out twice`);
      seen.add(n);
    }
    assert.ok(range.first + count - 1 < (await counter('jobcst')), 'the counter is past every number handed out');
  }
  // Allocations from the block need no statement: the counter moved by blocks, not per call.
  const before = await counter('jobcst');
  const r1 = await one.allocate('jobcst', 1);
  const r2 = await one.allocate('jobcst', 1);
  if (r1.first + 1 === r2.first) assert.ok((await counter('jobcst')) - before <= 5, 'at most one block taken for two numbers');
});

test('discardReserved: the rest of a block is a gap, never handed out again', async () => {
  const one = new NumberAllocator(a, engineOf(a), 10);
  const first = await one.allocate('lgrtrn', 1);
  const end = await counter('lgrtrn');
  assert.ok(end - first.first >= 10, 'a block of 10 was committed');
  one.discardReserved();
  const next = await one.allocate('lgrtrn', 1);
  assert.ok(next.first >= end, `after discarding, numbers come from a new block (${next.first} >= ${end})`);
});

test('block size 1: every allocation is one committed statement (the counter moves by exactly the count)', async () => {
  const one = new NumberAllocator(a, engineOf(a), 1);
  await one.allocate('acpinv', 1);
  const before = await counter('acpinv');
  const r = await one.allocate('acpinv', 3);
  assert.equal(r.first, before);
  assert.equal(await counter('acpinv'), before + 3);
});
