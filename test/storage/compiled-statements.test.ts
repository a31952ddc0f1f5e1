/**
 * Statements compiled once per shape (src/storage/compiled-statements.ts): a statement that reuses
 * the text of its shape sends exactly what knex compiles for it (text and bindings, on every
 * engine's compiler); values knex does not bind as they are (undefined, a raw fragment) and rows
 * of differing columns are compiled by knex as always. Through the database: the rows written and
 * returned by reused statements are those of statements compiled by knex.
 */
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory, { type Knex } from 'knex';
import { compiledInsert, compiledJoint, compiledOnce, isCompiledOnce } from '../../src/storage/compiled-statements';
import { createTestDatabase } from '../support/app';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';

const compilers: Array<[string, Knex]> = [
  ['sqlite', knexFactory({ client: 'better-sqlite3', useNullAsDefault: true, connection: { filename: ':memory:' } })],
  ['postgres', knexFactory({ client: 'pg' })],
  ['mssql', knexFactory({ client: 'mssql' })],
];
after(async () => {
  for (const [, k] of compilers) await k.destroy();
});

const rows = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => ({ id: seed * 100 + i, label: `row ${seed}-${i}`, amount: (seed + i) * 1.25, day: new Date(Date.UTC(2026, 10, 1 + i)), flag: i % 2 === 0, note: null }));

/** knex's own compile of the same insert (a builder that was never reused). */
const fresh = (k: Knex, r: Array<Record<string, unknown>>) => k('zz_compiled').insert(r).returning(['id', 'label'], { includeTriggerModifications: true }).toSQL().toNative();
const reused = (k: Knex, r: Array<Record<string, unknown>>) =>
  compiledInsert('test insert zz_compiled returning id,label', r, () => k('zz_compiled').insert(r).returning(['id', 'label'], { includeTriggerModifications: true }));

for (const [engine, k] of compilers) {
  test(`${engine}: a statement of a compiled shape sends what knex compiles for it, with its own bindings`, () => {
    for (const n of [1, 3, 3, 7]) {
      for (const seed of [1, 2]) {
        const statement = reused(k, rows(n, seed));
        assert.ok(isCompiledOnce(statement), `${n} rows: reused`);
        assert.deepEqual(statement.toSQL().toNative(), fresh(k, rows(n, seed)), `${n} rows, seed ${seed}`);
        const a = statement.toSQL() as unknown as Record<string, unknown>;
        const b = statement.toSQL() as unknown as Record<string, unknown>;
        assert.notEqual(a, b, 'a new object each call (knex rewrites what it runs)');
        assert.notEqual(a.__knexQueryUid, b.__knexQueryUid, 'each run its own query id');
      }
    }
  });

  test(`${engine}: undefined, a raw value or rows of differing columns are compiled by knex as always`, () => {
    for (const [label, r] of [
      ['undefined', [{ id: 1, label: undefined, amount: 1, day: null, flag: true, note: null }]],
      ['raw', [{ id: 1, label: k.raw('upper(?)', ['x']), amount: 1, day: null, flag: true, note: null }]],
      [
        'other column',
        [
          { id: 1, label: 'a', amount: 1, day: null, flag: true, note: null },
          { id: 2, label: 'b', amount: 1, day: null, flag: true, extra: 'x' },
        ],
      ],
      [
        'column missing',
        [
          { id: 1, label: 'a', amount: 1, day: null, flag: true, note: null },
          { id: 2, label: 'b', amount: 1, day: null, flag: true },
        ],
      ],
    ] as Array<[string, Array<Record<string, unknown>>]>) {
      const statement = reused(k, r);
      assert.equal(isCompiledOnce(statement), false, label);
      assert.deepEqual(statement.toSQL().toNative(), fresh(k, r));
    }
  });
}

test('a joint statement of compiled parts (PostgreSQL riders) is compiled once per combination; with a part knex compiled, as always', () => {
  const k = compilers[1]![1];
  for (const seed of [1, 2, 3]) {
    const rider = reused(k, rows(2, seed));
    const carrier = reused(k, rows(3, seed + 10));
    const a = rider.toSQL();
    const b = carrier.toSQL();
    const sql = `with "w0" as (${a.sql}) ${b.sql}`;
    const all = [...a.bindings, ...b.bindings];
    const joint = compiledJoint(k.raw(sql, all as Knex.RawBinding[]), [rider, carrier], all);
    assert.ok(isCompiledOnce(joint));
    assert.deepEqual(joint.toSQL().toNative(), k.raw(sql, all as Knex.RawBinding[]).toSQL().toNative(), `seed ${seed}`);
  }
  const plain = k('zz_compiled').insert(rows(2, 5));
  const joint = compiledJoint(k.raw('select 1'), [plain], []);
  assert.equal(isCompiledOnce(joint), false);
});

test('a shape whose first compile binds other values than given is never reused', () => {
  const k = compilers[0]![1];
  // The shape claims one text for statements that differ: the check on the first compile refuses it.
  const shape = 'test mislabelled';
  const first = compiledOnce(k('zz_compiled').where({ id: 1 }), shape, [2]);
  assert.equal(isCompiledOnce(first), false);
  const second = compiledOnce(k('zz_compiled').where({ id: 3 }), shape, [3]);
  assert.equal(isCompiledOnce(second), false);
  assert.deepEqual(second.toSQL().bindings, [3]);
});

test('through the database: reused inserts write and return what knex-compiled ones do', async () => {
  const db = await createTestDatabase(false);
  const knex = openDatabase(parseDatabaseUrl(db.url, { min: 0, max: 2 }));
  try {
    await knex.schema.createTable('zz_compiled', (t) => {
      t.integer('id').primary();
      t.string('label', 40);
      t.decimal('amount', 14, 2);
      t.date('day');
      t.boolean('flag');
      t.string('note', 10);
    });
    const returned: unknown[][] = [];
    for (const seed of [1, 2, 3]) {
      await knex.transaction(async (trx) => {
        const statement = compiledInsert('test insert zz_compiled returning id,label', rows(3, seed), () => trx('zz_compiled').insert(rows(3, seed)).returning(['id', 'label']));
        assert.ok(seed === 1 || isCompiledOnce(statement), 'reused after the first');
        returned.push(await statement);
      });
    }
    assert.deepEqual(
      returned,
      [1, 2, 3].map((seed) => rows(3, seed).map((r) => ({ id: r.id, label: r.label }))),
    );
    const stored = await knex('zz_compiled').orderBy('id').select('id', 'label');
    assert.deepEqual(
      stored,
      [1, 2, 3].flatMap((seed) => rows(3, seed).map((r) => ({ id: r.id, label: r.label }))),
    );
  } finally {
    await knex.destroy();
    await db.drop();
  }
});
