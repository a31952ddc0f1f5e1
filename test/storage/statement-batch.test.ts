/**
 * The statement batch (src/storage/statement-batch.ts): a posting's writes queued and sent
 * together, one statement of data-modifying CTEs on PostgreSQL, one after another elsewhere.
 * Observed through what each statement returns (against the same statement sent alone), the
 * statements the driver was sent (knex query events) and the rows in the database.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import type { TestApp } from '../support/app';
import { usePostingApp } from '../support/posting-app';
import { apInvoice, journal } from '../support/posting-fixture';
import { StatementBatch } from '../../src/storage/statement-batch';
import { API_BASE } from '../../src/app';

let t: TestApp;
usePostingApp((app) => (t = app));

const A = 'zz_batch_a';
const B = 'zz_batch_b';

let tables: Promise<void> | undefined;
/** The two scratch tables, made once (first test). */
function scratchTables(): Promise<void> {
  tables ??= makeTables();
  return tables;
}

async function makeTables(): Promise<void> {
  await t.knex.schema.createTable(A, (table) => {
    table.integer('id').primary();
    table.decimal('amount', 14, 2).notNullable();
    table.string('label', 30);
    table.boolean('flag').notNullable().defaultTo(false);
  });
  await t.knex.schema.createTable(B, (table) => {
    table.integer('id').primary();
    table.bigInteger('big');
    table.date('day');
    table.decimal('qty', 14, 4);
  });
}

/** Runs `fn` and returns the SQL of every statement it sent, a bare BEGIN, COMMIT and ROLLBACK left out. */
async function sent(fn: () => Promise<unknown>): Promise<string[]> {
  const out: string[] = [];
  const listen = (q: { sql: string }) => {
    if (!/^(begin|commit|rollback);?$/i.test(q.sql)) out.push(q.sql);
  };
  t.knex.on('query', listen);
  try {
    await fn();
  } finally {
    t.knex.off('query', listen);
  }
  return out;
}

const rowsA = (first: number) => [
  { id: first, amount: '12.30', label: 'one', flag: true },
  { id: first + 1, amount: '-0.05', label: null, flag: false },
];
const rowsB = (first: number) => [{ id: first, big: '9007199254740993', day: '2026-11-20', qty: '1.2345' }];

/** The rows with each engine's boolean and decimal spellings made comparable. */
const normal = (rows: Array<Record<string, unknown>>) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'boolean' ? Number(v) : v])));

test('queued writes return what each returns when sent alone; on PostgreSQL a write returning nothing rides with the last that returns rows', async () => {
  await scratchTables();
  await t.knex(A).insert({ id: 20, amount: '1.00' });
  let alone: Array<Array<Record<string, unknown>>> = [];
  let together: Array<Array<Record<string, unknown>>> = [];
  await t.knex.transaction(async (trx) => {
    alone = [await trx(A).insert(rowsA(1)).returning(['id', 'amount', 'label', 'flag']), await trx(B).insert(rowsB(1)).returning(['id', 'big', 'day', 'qty'])];
  });
  const statements = await sent(() =>
    t.knex.transaction(async (trx) => {
      const batch = new StatementBatch(trx);
      const a = batch.add({ query: trx(A).insert(rowsA(11)).returning(['id', 'amount', 'label', 'flag']), returning: ['id', 'amount', 'label', 'flag'] });
      const upsert = batch.add({ query: trx(A).insert({ id: 20, amount: '2.00' }).onConflict('id').merge({ amount: trx.raw('?? + ??', [`${A}.amount`, 'excluded.amount']) }) });
      const b = batch.add({ query: trx(B).insert(rowsB(11)).returning(['id', 'big', 'day', 'qty']), returning: ['id', 'big', 'day', 'qty'] });
      assert.equal(batch.pending, 3, 'queued, nothing sent yet');
      together = [await a, await b];
      assert.deepEqual(await upsert, []);
      assert.equal(batch.pending, 0);
    }),
  );
  const withoutIds = (rows: Array<Record<string, unknown>>) => normal(rows).map(({ id: _id, ...rest }) => rest);
  assert.deepEqual(together.map(withoutIds), alone.map(withoutIds), 'same values, same driver types');
  assert.deepEqual(
    together.map((rows) => rows.map((r) => Number(r.id))),
    [[11, 12], [11]],
  );
  if (t.engine === 'postgres') {
    assert.equal(statements.length, 2, statements.join('\n'));
    assert.match(statements[1]!, /^with "w0" as \(insert into "zz_batch_a" .* on conflict .*\) insert into "zz_batch_b"/, 'the upsert rides with the last insert');
  } else {
    assert.equal(statements.length, 3, statements.join('\n'));
  }
  assert.equal(await t.knex(A).whereIn('id', [11, 12]).count({ n: '*' }).first().then((r) => Number(r!.n)), 2, 'rows stored');
  assert.equal(Number((await t.knex(A).where({ id: 20 }).first())!.amount), 3, 'the upsert ran');
});

test('a statement without RETURNING, and one that returns no rows, run with the others', async () => {
  await scratchTables();
  await t.knex(A).insert({ id: 30, amount: '1.00' });
  let results: unknown[] = [];
  await t.knex.transaction(async (trx) => {
    const batch = new StatementBatch(trx);
    const upsert = batch.add({ query: trx(A).insert({ id: 30, amount: '2.00' }).onConflict('id').merge({ amount: trx.raw('?? + ??', [`${A}.amount`, 'excluded.amount']) }) });
    const none = batch.add({ query: trx(A).where('id', -1).update({ label: 'x' }).returning(['id']), returning: ['id'] });
    const one = batch.add({ query: trx(B).insert(rowsB(31)).returning(['id']), returning: ['id'] });
    results = [await upsert, await none, (await one).map((r) => Number(r.id))];
  });
  assert.deepEqual(results, [[], [], [31]]);
  const row = await t.knex(A).where({ id: 30 }).first();
  assert.equal(Number(row!.amount), 3, 'the upsert ran');
});

test('a failing statement fails the batch and the transaction writes nothing; nothing is left unhandled', async () => {
  await scratchTables();
  await t.knex(A).insert({ id: 40, amount: '1.00' });
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    let carrier: PromiseLike<unknown> | undefined;
    await assert.rejects(
      t.knex.transaction(async (trx: Knex.Transaction) => {
        const batch = new StatementBatch(trx);
        batch.add({ query: trx(B).insert(rowsB(41)).returning(['id']), returning: ['id'] });
        // A rider that violates the key (queued, never awaited by its writer) and the write it rides with.
        batch.add({ query: trx(A).insert({ id: 40, amount: '2.00' }) });
        carrier = batch.add({ query: trx(B).insert(rowsB(42)).returning(['id']), returning: ['id'] });
        await batch.flush();
      }),
      /zz_batch_a|unique|duplicate/i,
    );
    // On PostgreSQL the rider failed the statement it rode in; elsewhere the carrier ran, then was rolled back.
    if (t.engine === 'postgres') await assert.rejects(Promise.resolve(carrier!), /zz_batch_a|unique|duplicate/i);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.equal(await t.knex(B).whereIn('id', [41, 42]).first(), undefined, 'rolled back: nothing written');
});

test('flush sends a write that was queued and never awaited (the runner flushes before completing)', async () => {
  await scratchTables();
  await t.knex.transaction(async (trx) => {
    const batch = new StatementBatch(trx);
    batch.add({ query: trx(B).insert(rowsB(50)) });
    await batch.flush();
  });
  assert.ok(await t.knex(B).where({ id: 50 }).first());
});

test('on PostgreSQL riders over the parameter budget are sent alone, every write done', async (ctx) => {
  await scratchTables();
  if (t.engine !== 'postgres') return ctx.skip('PostgreSQL only: elsewhere each statement is sent alone');
  const chunk = (first: number) => Array.from({ length: 2000 }, (_, i) => ({ id: first + i, amount: '1.00', label: 'bulk', flag: false }));
  let ids: number[] = [];
  const statements = await sent(() =>
    t.knex.transaction(async (trx) => {
      const batch = new StatementBatch(trx);
      // 2,000 rows x 4 parameters = 8,000 a rider; four riders (32,000) exceed the 30,000 budget.
      for (const first of [1000, 3000, 5000, 7000]) batch.add({ query: trx(A).insert(chunk(first)) });
      ids = (await batch.add({ query: trx(B).insert(rowsB(60)).returning(['id']), returning: ['id'] })).map((r) => Number(r.id));
    }),
  );
  assert.deepEqual(ids, [60]);
  assert.equal(statements.length, 2, 'three riders with the carrier, the fourth alone');
  assert.equal(await t.knex(A).where({ label: 'bulk' }).count({ n: '*' }).first().then((r) => Number(r!.n)), 8000);
});

test('on PostgreSQL a posting reads the reference counter with its lock fence, and its balance upsert rides with its journal lines', async (ctx) => {
  await scratchTables();
  if (t.engine !== 'postgres') return ctx.skip('PostgreSQL only');
  const writesOf = (statements: string[]) => statements.filter((s) => /\binsert into\b/i.test(s));
  for (const [path, body, tables] of [
    ['ledger-transactions', journal('BATCH-J-1'), ['lgrtrn', 'lgtnln']],
    ['ap-invoices', apInvoice('BATCH-I-1', 3), ['acpinv', 'apivln', 'jobcst', 'lgrtrn', 'lgtnln']],
  ] as const) {
    const statements = await sent(async () => {
      const res = await t.post(`${API_BASE}/${path}`, body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    });
    const writes = writesOf(statements);
    assert.equal(writes.length, tables.length, `one statement a table, the balances riding along:\n${writes.join('\n')}`);
    for (const table of tables) assert.ok(writes.some((s) => s.includes(`insert into "${table}"`)), table);
    assert.ok(
      writes.some((s) => /^with "w0" as \(insert into "lgrbal" .*\) insert into "lgtnln"/.test(s)),
      'the balance upsert rides with the journal lines',
    );
    assert.ok(!statements.some((s) => /^select "n" from "refchg"/.test(s)), 'no separate counter read');
    assert.ok(statements.some((s) => /^BEGIN; .*refchg.* from "mntlck" where "id" = 1 for share/.test(s)), 'the counter is read with the lock fence, in BEGIN\'s round trip');
  }
});
