/**
 * Engine-level tests of the read pipeline (plan -> SQL -> envelope) on a fixture catalog and
 * table (test/support/query-fixture.ts), on SQLite (or PostgreSQL with TEST_ENGINE=postgres). The HTTP tests over the real catalog
 * are in test/engines/query/query-http.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory, { type Knex } from 'knex';
import { ApiProblem } from '../../../src/errors/problem';
import fc from 'fast-check';
import { Dec } from '../../../src/storage/decimal';
import { dialectFor, queryDialectFor } from '../../../src/storage/dialect';
import { decodeLegacyBoolean, scaledToNumber } from '../../../src/storage/query-dialect-common';
import { executePlan } from '../../../src/engines/query/run';
import { planQuery } from '../../../src/engines/query/plan';
import { v2FieldProblem } from '../../../src/v2/fields';
import type { QueryRequest } from '../../../src/engines/query/types';
import { FIXTURE_ENGINE, fixtureDatabase, fixtureRows, WIDGETS, type FixtureDatabase, type FixtureRow } from '../../support/query-fixture';
import { evaluate, type Node } from '../../support/filter-eval';

const qd = queryDialectFor(FIXTURE_ENGINE);
const OPTIONS = { maxFilterDepth: 32 };
const ROWS = fixtureRows(300);
let db: FixtureDatabase;
let knex: Knex;

before(async () => {
  db = await fixtureDatabase(ROWS);
  knex = db.knex;
});
after(async () => {
  await db.destroy();
});

const run = (body: QueryRequest) => executePlan(knex, qd, planQuery(WIDGETS, body, OPTIONS));

/** The fixture row as the API publishes it (no lines). */
function published(r: FixtureRow): Record<string, unknown> {
  const { lines: _lines, updatedAt, ...rest } = r;
  return { ...rest, updatedAt: new Date(updatedAt.replace(' ', 'T') + 'Z').toISOString() };
}

function problemOf(fn: () => unknown): ApiProblem {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiProblem, `expected ApiProblem, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a problem');
}

async function rejects(body: QueryRequest): Promise<ApiProblem> {
  try {
    await run(body);
  } catch (err) {
    assert.ok(err instanceof ApiProblem, `expected ApiProblem, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a problem');
}

async function allMatching(filters: Node, extra: QueryRequest = {}): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for (let page = 1; ; page++) {
    const env = await run({ ...extra, filters: filters as QueryRequest['filters'], page: { pageNumber: page, pageSize: 1000 } });
    out.push(...env.data);
    if (out.length >= env.page.totalCount) return out;
  }
}

describe('query engine on the fixture catalog', () => {
  test('all fields decode to their published form', async () => {
    const env = await run({ orderBy: ['recordNumber ASC'], page: { pageSize: 1000 } });
    assert.equal(env.page.totalCount, ROWS.length);
    assert.equal(env.data.length, ROWS.length);
    assert.deepEqual(env.data, ROWS.map(published));
    assert.match(env.asOf, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  test('pages of any size cover every row exactly once (unique tiebreak)', async () => {
    for (const orderBy of [['widgetCode DESC'], ['inactive asc', 'widgetCost desc'], []]) {
      const seen: string[] = [];
      for (let page = 1; ; page++) {
        const env = await run({ orderBy, select: ['id'], page: { pageNumber: page, pageSize: 7 } });
        assert.equal(env.page.returnedCount, env.data.length);
        seen.push(...env.data.map((r) => r.id as string));
        if (env.data.length < 7) break;
      }
      assert.equal(seen.length, ROWS.length);
      assert.equal(new Set(seen).size, ROWS.length);
    }
  });

  test('a deep page (deferred join) equals the same slice of the full ordering', async () => {
    const full = await run({ orderBy: ['widgetCode ASC'], filters: { match: { field: 'widgetCost', operator: '>', value: 50 } }, page: { pageSize: 1000 } });
    const page3 = await run({ orderBy: ['widgetCode ASC'], filters: { match: { field: 'widgetCost', operator: '>', value: 50 } }, page: { pageNumber: 3, pageSize: 20 } });
    assert.deepEqual(page3.data, full.data.slice(40, 60));
    assert.equal(page3.page.totalCount, full.page.totalCount);
  });

  test('a reused totalCount follows writes', async () => {
    const body: QueryRequest = { filters: { match: { field: 'widgetCost', operator: '>', value: 100 } }, page: { pageSize: 1 } };
    const first = (await run(body)).page.totalCount;
    assert.equal((await run(body)).page.totalCount, first);
    const victim = ROWS.find((r) => r.widgetCost !== null && r.widgetCost > 100)!;
    await knex('wdgt').where({ _idnum: victim.id }).update({ wdgcst: qd.encodeValue('decimal', new Dec(1), 2) as number });
    assert.equal((await run(body)).page.totalCount, first - 1);
    await knex('wdgt').where({ _idnum: victim.id }).update({ wdgcst: qd.encodeValue('decimal', new Dec(String(victim.widgetCost)), 2) as number });
    assert.equal((await run(body)).page.totalCount, first);
  });

  test('a page past the end is empty with the total', async () => {
    const env = await run({ page: { pageNumber: 99, pageSize: 100 } });
    assert.deepEqual(env.page, { pageNumber: 99, pageSize: 100, totalCount: ROWS.length, returnedCount: 0 });
  });

  test('children attach to every record, empty arrays included, in line order', async () => {
    const env = await run({ children: ['lines'], select: ['id'], orderBy: ['recordNumber asc'], page: { pageSize: 1000 } });
    env.data.forEach((rec, i) => {
      assert.deepEqual(rec.lines, ROWS[i]!.lines);
    });
    assert.ok(env.data.some((r) => (r.lines as unknown[]).length === 0));
  });

  test('every operator returns exactly what the in-memory evaluation returns', async () => {
    const trees: Node[] = [
      { match: { field: 'widgetCost', operator: '>', value: 50 } },
      { match: { field: 'widgetCost', operator: '<=', value: 50.5 } },
      { match: { field: 'quantity', operator: '>=', value: 12.3456 } },
      { match: { field: 'widgetCode', operator: '=', value: ROWS[5]!.widgetCode } },
      { match: { field: 'widgetName', operator: '!=', value: 'PVC elbow' } },
      { match: { field: 'widgetName', operator: 'like', value: 'copper%' } },
      { match: { field: 'widgetName', operator: 'Not Like', value: '%PIPE%' } },
      { match: { field: 'widgetName', operator: 'LIKE', value: 'Steel_%' } },
      { match: { field: 'activeDate', operator: '<', value: '2026-06-01' } },
      { match: { field: 'inactive', operator: '=', value: true } },
      { match: { field: 'vendorId', operator: '=', value: ROWS[0]!.vendorId!.toUpperCase() } },
      { match: { field: 'recordNumber', operator: 'in', values: [1, 2, 3, 299, 1000] } },
      { match: { operator: 'inPairs', fields: ['widgetCode', 'inactive'], pairs: ROWS.slice(0, 5).map((r) => ({ widgetCode: r.widgetCode, inactive: r.inactive })) } },
      {
        or: [
          { and: [{ match: { field: 'widgetCost', operator: '>', value: 100 } }, { match: { field: 'inactive', operator: '=', value: false } }] },
          { match: { field: 'widgetName', operator: 'IN', values: ['PVC elbow', 'Brass fitting'] } },
        ],
      },
    ];
    const records = ROWS.map(published);
    for (const tree of trees) {
      const got = (await allMatching(tree)).map((r) => r.id).sort();
      const want = records.filter((r) => evaluate(tree, r)).map((r) => r.id).sort();
      assert.deepEqual(got, want, JSON.stringify(tree));
    }
  });

  test('long IN and inPairs lists (5,000 entries) run and match', async () => {
    const records = ROWS.map(published);
    const values = Array.from({ length: 5000 }, (_, i) => i + 1).filter((n) => n % 3 === 0);
    const inTree: Node = { match: { field: 'recordNumber', operator: 'IN', values } };
    assert.deepEqual((await allMatching(inTree)).map((r) => r.id).sort(), records.filter((r) => evaluate(inTree, r)).map((r) => r.id).sort());
    const pairs = Array.from({ length: 5000 }, (_, i) => ({ recordNumber: i + 1, widgetCode: ROWS[i % ROWS.length]!.widgetCode }));
    const pairTree: Node = { match: { operator: 'inPairs', fields: ['recordNumber', 'widgetCode'], pairs } };
    const got = (await allMatching(pairTree)).map((r) => r.id).sort();
    assert.equal(got.length, ROWS.length);
    assert.deepEqual(got, records.filter((r) => evaluate(pairTree, r)).map((r) => r.id).sort());
    const uuids = ROWS.slice(0, 100).map((r) => r.id.toUpperCase());
    const uuidTree: Node = { match: { field: 'id', operator: 'IN', values: uuids } };
    assert.equal((await allMatching(uuidTree)).length, 100);
    const decimals = ROWS.map((r) => r.widgetCost).filter((c) => c !== null);
    const decTree: Node = { match: { field: 'widgetCost', operator: 'IN', values: decimals } };
    assert.equal((await allMatching(decTree)).length, decimals.length);
  });

  test('request extras are ANDed with filters', async () => {
    const records = ROWS.map(published);
    const env = await allMatching({ match: { field: 'widgetName', operator: 'LIKE', value: '%e%' } }, { activeOnly: true, costAbove: 20 });
    const want = records.filter((r) => !r.inactive && (r.widgetCost as number | null) !== null && (r.widgetCost as number) > 20 && /e/i.test(String(r.widgetName ?? '')) && r.widgetName !== null);
    assert.deepEqual(env.map((r) => r.id).sort(), want.map((r) => r.id).sort());
    const p = await rejects({ costAbove: 'x' });
    assert.equal(p.code, 'VALIDATION_FAILED');
    assert.equal(p.errors?.[0]?.field, 'costAbove');
  });

  test('lastUpdated is inclusive from the start of the day (UTC)', async () => {
    const env = await allMatching({ match: { field: 'recordNumber', operator: '>', value: 0 } }, { lastUpdated: '2026-11-20' });
    const want = ROWS.filter((r) => r.updatedAt >= '2026-11-20');
    assert.equal(env.length, want.length);
    const p = await rejects({ createdSince: '2026-11-20' });
    assert.equal(p.code, 'CHANGE_STAMP_UNSUPPORTED');
    assert.equal(p.status, 501);
    assert.deepEqual(p.errors?.map((e) => e.field), ['createdSince']);
    assert.match(p.detail, /createdSince.*widgets/);
  });
});

describe('plan errors', () => {
  const plan = (body: QueryRequest) => planQuery(WIDGETS, body, OPTIONS);

  test('unknown select names, with their position', () => {
    const p = problemOf(() => plan({ select: ['id', 'widgetCode', 'bogus', 'lines.nope'], children: ['lines'] }));
    assert.equal(p.code, 'UNKNOWN_FIELD');
    assert.deepEqual(p.errors?.map((e) => e.field), ['select[2]', 'select[3]']);
    assert.match(p.detail, /bogus/);
  });

  test('dotted select paths need the collection in children', () => {
    const p = problemOf(() => plan({ select: ['lines.extendedTotal'] }));
    assert.equal(p.code, 'VALIDATION_FAILED');
    assert.deepEqual(p.errors?.[0], { field: 'select[0]', code: 'child_not_requested', message: p.errors?.[0]?.message });
    assert.doesNotThrow(() => plan({ select: ['id', 'lines.extendedTotal'], children: ['lines'] }));
    const q = problemOf(() => plan({ select: ['parts.extendedTotal'], children: ['lines'] }));
    assert.equal(q.code, 'UNKNOWN_FIELD');
  });

  test('unknown child collections list the valid ones', () => {
    const p = problemOf(() => plan({ children: ['lines', 'parts'] }));
    assert.equal(p.code, 'UNKNOWN_CHILD_COLLECTION');
    assert.deepEqual(p.errors?.map((e) => e.field), ['children[1]']);
    assert.match(p.detail, /valid: lines/);
  });

  test('child fields cannot be filtered or ordered', () => {
    const p = problemOf(() => plan({ children: ['lines'], filters: { match: { field: 'lines.extendedTotal', operator: '>', value: 1 } } }));
    assert.equal(p.code, 'UNKNOWN_FIELD');
    assert.deepEqual(p.errors?.map((e) => [e.field, e.code]), [['filters.match.field', 'child_field']]);
    const q = problemOf(() => plan({ children: ['lines'], orderBy: ['lines.lineNumber ASC'] }));
    assert.deepEqual(q.errors?.map((e) => [e.field, e.code]), [['orderBy[0]', 'child_field']]);
  });

  test('value presence per operator', () => {
    const cases: Array<[QueryRequest['filters'], string, string]> = [
      [{ and: [{ match: { field: 'recordNumber', operator: '=', value: 1 } }, { match: { field: 'recordNumber', operator: '=', value: 1, values: [1] } }] }, 'filters.and[1].match.values', 'unexpected'],
      [{ match: { field: 'recordNumber', operator: 'IN', value: 1 } }, 'filters.match.value', 'unexpected'],
      [{ match: { field: 'recordNumber', operator: 'IN' } }, 'filters.match.values', 'required'],
      [{ match: { field: 'recordNumber', operator: '>' } }, 'filters.match.value', 'required'],
      [{ match: { field: 'recordNumber', operator: 'inPairs', fields: ['recordNumber'], pairs: [{ recordNumber: 1 }] } }, 'filters.match.field', 'unexpected'],
      [{ match: { operator: 'inPairs', fields: ['recordNumber', 'widgetCode'], pairs: [{ recordNumber: 1 }] } }, 'filters.match.pairs[0].widgetCode', 'required'],
      [{ match: { operator: 'inPairs', fields: ['recordNumber'], pairs: [{ recordNumber: 1, widgetCode: 'x' }] } }, 'filters.match.pairs[0].widgetCode', 'unknown_field'],
      [{ match: { field: 'recordNumber', operator: 'between', value: 1 } }, 'filters.match.operator', 'enum'],
    ];
    for (const [filters, field, code] of cases) {
      const p = problemOf(() => plan({ filters }));
      assert.equal(p.code, 'VALIDATION_FAILED', JSON.stringify(filters));
      assert.deepEqual([p.errors?.[0]?.field, p.errors?.[0]?.code], [field, code], JSON.stringify(filters));
    }
  });

  test('values are checked against the field kind', () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['recordNumber', '=', 1.5, 'type'],
      ['recordNumber', '=', '1', 'type'],
      ['widgetCost', '>', 'abc', 'type'],
      ['activeDate', '>', '2026-02-30', 'format'],
      ['activeDate', '>', '2026-2-3', 'format'],
      ['inactive', '=', 'yes', 'type'],
      ['vendorId', '=', 'not-a-uuid', 'format'],
      ['widgetCode', '=', 5, 'type'],
      ['recordNumber', 'LIKE', '1%', 'operator'],
      ['widgetCode', '>', 'A', 'operator'],
      ['inactive', '<', true, 'operator'],
    ];
    for (const [field, operator, value, code] of cases) {
      const p = problemOf(() => plan({ filters: { or: [{ match: { field, operator, value: value as string } }] } }));
      assert.equal(p.code, 'VALIDATION_FAILED', `${field} ${operator} ${String(value)}`);
      const where = code === 'operator' ? 'filters.or[0].match.operator' : 'filters.or[0].match.value';
      assert.deepEqual([p.errors?.[0]?.field, p.errors?.[0]?.code], [where, code], `${field} ${operator} ${String(value)}`);
    }
    const p = problemOf(() => plan({ filters: { match: { field: 'recordNumber', operator: 'IN', values: [1, 'x', 3, null as unknown as number] } } }));
    assert.deepEqual(p.errors?.map((e) => e.field), ['filters.match.values[1]', 'filters.match.values[3]']);
  });

  test('orderBy: unknown field, bad clause; tiebreak appended', () => {
    const p = problemOf(() => plan({ orderBy: ['widgetCode ASC', 'nope DESC'] }));
    assert.equal(p.code, 'UNKNOWN_FIELD');
    assert.deepEqual(p.errors?.map((e) => e.field), ['orderBy[1]']);
    const ok = plan({ orderBy: ['widgetCode desc'] });
    assert.deepEqual(ok.order, [
      { column: 'wdgcde', direction: 'desc' },
      { column: '_idnum', direction: 'asc' },
    ]);
    assert.deepEqual(plan({ orderBy: ['id DESC'] }).order, [{ column: '_idnum', direction: 'desc' }]);
  });

  test('page bounds are enforced, never clamped', () => {
    for (const page of [{ pageSize: 0 }, { pageSize: 1001 }, { pageNumber: 0 }, { pageNumber: -1 }, { pageSize: 2.5 }]) {
      const p = problemOf(() => plan({ page }));
      assert.equal(p.code, 'VALIDATION_FAILED');
      assert.equal(p.errors?.[0]?.field, `page.${Object.keys(page)[0]}`);
    }
    const ok = plan({ page: { pageNumber: 3, pageSize: 1000 } });
    assert.deepEqual([ok.pageNumber, ok.pageSize, ok.offset], [3, 1000, 2000]);
    const d = plan({});
    assert.deepEqual([d.pageNumber, d.pageSize, d.offset], [1, 100, 0]);
  });

  test('the engine knows no v2 names: they are unknown fields here (v2 is translated and refused in src/v2)', () => {
    const p = problemOf(() => plan({ withChildren: true, offset: 5 } as QueryRequest));
    assert.equal(p.code, 'VALIDATION_FAILED');
    assert.deepEqual(p.errors?.map((e) => [e.field, e.code]), [['withChildren', 'unknown_field'], ['offset', 'unknown_field']]);
  });

  test('v2 fields name their v3 replacement (src/v2/fields.ts, used by the v3 HTTP refusal)', () => {
    const p = v2FieldProblem({ withChildren: true, offset: 5 })!;
    assert.equal(p.code, 'V2_FIELD_REJECTED');
    assert.match(p.detail, /withChildren.*children/);
    assert.match(p.detail, /offset.*page\.pageNumber/);
    assert.equal(v2FieldProblem({ select: ['id'] }), undefined);
  });

  test('filter depth is bounded in the engine too', () => {
    let node: QueryRequest['filters'] = { match: { field: 'recordNumber', operator: '=', value: 1 } };
    for (let i = 0; i < 5; i++) node = { and: [node] };
    const p = problemOf(() => planQuery(WIDGETS, { filters: node }, { maxFilterDepth: 4 }));
    assert.equal(p.code, 'FILTER_TOO_DEEP');
    assert.doesNotThrow(() => planQuery(WIDGETS, { filters: node }, { maxFilterDepth: 5 }));
  });
});

describe('decoding', () => {
  test('the SQLite decimal fast path equals Number(decodeDecimal(raw).toFixed())', () => {
    const base = dialectFor('sqlite');
    fc.assert(
      fc.property(fc.maxSafeInteger(), fc.integer({ min: 0, max: 8 }), (n, scale) => {
        assert.equal(scaledToNumber(n, scale), Number(base.decodeDecimal(n, scale)!.toFixed()));
        assert.equal(queryDialectFor('sqlite').decodeValue('decimal', n, scale), Number(base.decodeDecimal(n, scale)!.toFixed()));
      }),
      { numRuns: 20000 },
    );
    assert.equal(scaledToNumber(-5, 2), -0.05);
    assert.equal(scaledToNumber(123450, 4), 12.345);
  });

  test('PostgreSQL numerics parse to the same number as the exact decimal', () => {
    const base = dialectFor('postgres');
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 6 }), (n, scale) => {
        const text = scale === 0 ? n.toString() : `${n < 0n ? '-' : ''}${(n < 0n ? -n : n).toString().padStart(scale + 1, '0').replace(new RegExp(`(\\d{${scale}})$`), '.$1')}`;
        assert.equal(queryDialectFor('postgres').decodeValue('decimal', text, scale), Number(base.decodeDecimal(text, scale)!.toFixed()));
      }),
      { numRuns: 20000 },
    );
  });

  test('a legacy boolean decodes the same for a read and for a posting check (one decoding)', () => {
    const driverValues: unknown[] = [true, false, 1, 0, 2, -1, 1n, 0n, '1', '0', 't', 'f', 'true', 'false', null];
    for (const engine of ['sqlite', 'postgres', 'mssql'] as const) {
      for (const raw of driverValues) {
        assert.equal(decodeLegacyBoolean(raw) === true, queryDialectFor(engine).decodeValue('boolean', raw) === true, `${engine}: ${String(raw)}`);
      }
    }
  });
});

test('SQLite runs a long inPairs as one list probed per row, not a subquery re-read per row (EXPLAIN QUERY PLAN)', async () => {
  // The dialect's own SQL on SQLite whatever TEST_ENGINE is (the fragment is SQLite's).
  const sqlite = knexFactory({ client: 'better-sqlite3', connection: { filename: ':memory:' }, useNullAsDefault: true });
  try {
    await sqlite.schema.createTable('t', (table) => {
      table.integer('a');
      table.text('b');
      table.index(['a', 'b']);
    });
    await sqlite('t').insert(Array.from({ length: 50 }, (_, i) => ({ a: i, b: `k${i % 7}` })));
    const pairs = Array.from({ length: 600 }, (_, i) => [i % 60, `k${i % 7}`]);
    const f = queryDialectFor('sqlite').inTuples([{ column: 't.a', kind: 'integer' }, { column: 't.b', kind: 'string' }], pairs);
    const query = sqlite('t').whereRaw(f.sql, f.bindings as Knex.RawBinding[]).select('a', 'b');
    const { sql, bindings } = query.toSQL();
    const plan = ((await sqlite.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as Knex.RawBinding[])) as Array<{ detail: string }>).map((r) => r.detail);
    assert.ok(plan.some((d) => /LIST SUBQUERY/.test(d)), plan.join(' | '));
    assert.ok(!plan.some((d) => /CORRELATED|EXISTS/.test(d)), plan.join(' | '));
    const want = new Set(pairs.map(([a, b]) => `${a}|${b}`));
    const rows = (await query) as Array<{ a: number; b: string }>;
    assert.deepEqual(
      rows.map((r) => `${r.a}|${r.b}`).sort(),
      Array.from({ length: 50 }, (_, i) => `${i}|k${i % 7}`).filter((k) => want.has(k)).sort(),
    );
  } finally {
    await sqlite.destroy();
  }
});
