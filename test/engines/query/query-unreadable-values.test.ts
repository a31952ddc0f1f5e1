/**
 * A stored value that does not fit the type the contract publishes for its field (docs/decisions/0370):
 * SQLite's type affinity lets another program write text into an INTEGER column, a fraction into a
 * scaled-decimal column, 60 characters into an nvarchar(50); PostgreSQL refuses those but stores
 * dates the contract cannot publish ('infinity', year 10000, BC) and NUMERIC 'NaN'. A read that
 * meets one answers 502 STORED_VALUE_UNREADABLE naming the entity, the record and the field, never
 * a 500 and never a silently changed value; a read that does not need the value is not affected.
 *
 * Each case writes the bad value with raw SQL into the seeded test database (on the engine under
 * test: where the engine refuses it, the test proves the refusal and that the normal read still
 * answers), calls the API, checks the database still holds the value, and restores the row.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestApp, type TestApp } from '../../support/app';
import { assertProblem, postOk } from '../../support/http';
import { CATALOG } from '../../../generated/catalog';
import type { FieldDef } from '../../../src/catalog/types';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { isStorableDate, isStorableDateTime, parseColumnType, schemaKeywords } from '../../../src/catalog/bounds';
import { ApiProblem } from '../../../src/errors/problem';
import { recordDecoder } from '../../../src/engines/query/envelope';
import { queryDialectFor } from '../../../src/storage/dialect';

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(async () => {
  await t.close();
});

const Q = (entity: string) => `/api/v3/${entity}/query`;

interface Target {
  entity: string;
  table: string;
  column: string;
  /** The published field, as `select` names it (`lines.quantity` for a field of a child collection). */
  field: string;
  /** Child collection: its name (the table's rows are lines of the entity's records). */
  collection?: string;
}

interface Row {
  id: string;
  parentId?: string;
  value: unknown;
}

/** The first row of the target's table (in key order), with the value it holds. */
async function firstRow(target: Target): Promise<Row> {
  const row = await t.knex(target.table).orderBy('_idnum').first({ id: '_idnum', value: target.column, ...(target.collection ? { parentId: '_idref' } : {}) });
  assert.ok(row, `${target.table} has rows`);
  return { id: String(row.id).toLowerCase(), value: row.value, ...(row.parentId !== undefined ? { parentId: String(row.parentId).toLowerCase() } : {}) };
}

/** Writes `sql` (an SQL expression) into the row's column as another program would; undefined when the engine refuses it. */
async function writeRaw(target: Target, row: Row, sql: string): Promise<Error | undefined> {
  try {
    await t.knex.raw(`UPDATE ${target.table} SET ${target.column} = ${sql} WHERE _idnum = ?`, [row.id]);
    return undefined;
  } catch (err) {
    return err as Error;
  }
}

async function restore(target: Target, row: Row): Promise<void> {
  await t.knex(target.table).where({ _idnum: row.id }).update({ [target.column]: row.value });
}

/** What the engine itself says is stored (SQLite: its storage class; PostgreSQL: the text form). */
async function stored(target: Target, row: Row): Promise<string> {
  const expr = t.engine === 'sqlite' ? `typeof(${target.column}) || ':' || CAST(${target.column} AS TEXT)` : `${target.column}::text`;
  const r = await t.knex.raw(`SELECT ${expr} AS v FROM ${target.table} WHERE _idnum = ?`, [row.id]);
  return String((t.engine === 'sqlite' ? r : r.rows)[0].v);
}

/** A query reading the row's record with the field selected. */
function queryOf(target: Target, row: Row): { path: string; body: Record<string, unknown> } {
  const id = target.collection ? row.parentId! : row.id;
  const base = { filters: { match: { field: 'id', operator: '=', value: id } } };
  if (target.collection) return { path: Q(target.entity), body: { ...base, select: ['recordNumber', `${target.collection}.id`, target.field], children: [target.collection] } };
  // `id` not selected: the record is still named (the key is read again to name it).
  return { path: Q(target.entity), body: { ...base, select: ['recordNumber', target.field] } };
}

function assertUnreadable(res: any, target: Target, row: Row): void {
  assert.equal(res.status, 502, res.text);
  const body = assertProblem(res, 'STORED_VALUE_UNREADABLE', `/api/v3/${target.entity}/query`);
  assert.deepEqual(
    body.unreadableValue,
    { entity: target.entity, field: target.field, recordId: row.id, ...(target.collection ? { parentId: row.parentId } : {}) },
    JSON.stringify(body),
  );
  assert.ok(body.detail.includes(row.id) && body.detail.includes(target.field), body.detail);
  assert.equal(body.errors, undefined, 'no input field is to blame');
}

const partClass: Target = { entity: 'parts', table: 'tkfprt', column: 'prtcls', field: 'partClass' };
const partCost: Target = { entity: 'parts', table: 'tkfprt', column: 'prtcst', field: 'partCost' };
const partName: Target = { entity: 'parts', table: 'tkfprt', column: 'prtnme', field: 'partName' };
const inactive: Target = { entity: 'parts', table: 'tkfprt', column: 'inactv', field: 'inactive' };
const invoiceDate: Target = { entity: 'ap-invoices', table: 'acpinv', column: 'invdte', field: 'invoiceDate' };
const invoiceStatus: Target = { entity: 'ap-invoices', table: 'acpinv', column: 'status', field: 'status' };
const lineQuantity: Target = { entity: 'ap-invoices', table: 'apivln', column: 'linqty', field: 'lines.quantity', collection: 'lines' };
const scheduledStart: Target = { entity: 'service-schedules', table: 'srvsch', column: 'schstt', field: 'scheduledStart' };

type Engine = 'sqlite' | 'postgres';
const NUL: Record<Engine, string> = { sqlite: "'half' || char(0) || 'way'", postgres: "'half' || chr(0) || 'way'" };
/** Per engine: the value is stored and cannot be read; the engine refuses it at write; or it converts it to a value of the column. */
type Outcome = 'unreadable' | 'refused' | 'converted';
const BOTH: Record<Engine, Outcome> = { sqlite: 'unreadable', postgres: 'unreadable' };
const PG_REFUSES: Record<Engine, Outcome> = { sqlite: 'unreadable', postgres: 'refused' };
const PG_CONVERTS: Record<Engine, Outcome> = { sqlite: 'unreadable', postgres: 'converted' };

/**
 * [what, target, SQL value (per engine where the spelling differs), what each engine does with it].
 * SQLite refuses none of them; PostgreSQL refuses what its column types exclude.
 */
const CASES: Array<[string, Target, string | Record<Engine, string>, Record<Engine, Outcome>]> = [
  ['text in an integer column', partClass, "'abc'", PG_REFUSES],
  ['a fraction in an integer column', partClass, '1.5', PG_CONVERTS],
  ['an integer beyond its int column', partClass, '3000000000', PG_REFUSES],
  ['text in a smallint column', invoiceStatus, "'open'", PG_REFUSES],
  ['text in a decimal column', partCost, "'n/a'", PG_REFUSES],
  ['a fraction in a scaled-decimal column (SQLite stores decimals as scaled integers)', partCost, '1.5', PG_CONVERTS],
  ['a decimal beyond its precision', partCost, '99999999999999999999', PG_REFUSES],
  ['NaN in a decimal column', partCost, "'NaN'", BOTH],
  ['text in a boolean column', inactive, "'maybe'", PG_REFUSES],
  ['text longer than its nvarchar(50) column', partName, `'${'x'.repeat(60)}'`, PG_REFUSES],
  ['a NUL character in text', partName, NUL, PG_REFUSES],
  ['text in a date column', invoiceDate, "'soon'", PG_REFUSES],
  ['a date that is not a calendar date', invoiceDate, "'2026-02-30'", PG_REFUSES],
  ['date infinity', invoiceDate, "'infinity'", BOTH],
  ['date -infinity', invoiceDate, "'-infinity'", BOTH],
  ['a date after 9999-12-31', invoiceDate, "'10000-01-01'", BOTH],
  ['a date before the common era', invoiceDate, "'0044-03-15 BC'", BOTH],
  ['timestamp infinity', scheduledStart, "'infinity'", BOTH],
  ['a timestamp after 9999', scheduledStart, "'12000-01-01 00:00:00+00'", BOTH],
  ['text in a timestamp column', scheduledStart, "'tomorrow morning'", PG_REFUSES],
  ['text in a decimal column of a child collection', lineQuantity, "'lots'", PG_REFUSES],
];

describe('a stored value that does not fit its published type', () => {
  for (const [what, target, spelled, outcomes] of CASES) {
    const shown = typeof spelled === 'string' ? spelled : spelled.sqlite;
    test(`${what} (${target.entity}.${target.field} = ${shown.length > 30 ? shown.slice(0, 27) + '...' : shown}): 502 STORED_VALUE_UNREADABLE naming it, or refused by the engine`, async () => {
      const sql = typeof spelled === 'string' ? spelled : spelled[t.engine as Engine];
      const row = await firstRow(target);
      const { path, body } = queryOf(target, row);
      const before = await postOk(t, path, body);
      const refused = await writeRaw(target, row, sql);
      try {
        const outcome = outcomes[t.engine as Engine];
        if (outcome === 'refused') {
          // This engine refuses the value at write: the read answers as before.
          assert.ok(refused, `${t.engine} refuses ${sql}`);
          assert.deepEqual((await postOk(t, path, body)).data, before.data);
          return;
        }
        if (outcome === 'converted') {
          // This engine stores a value of the column (PostgreSQL rounds 1.5 into an integer column): the read answers it.
          assert.equal(refused, undefined, String(refused));
          const after = await postOk(t, path, body);
          assert.equal(after.data.length, 1);
          assert.equal(typeof after.data[0][target.field], 'number');
          return;
        }
        assert.equal(refused, undefined, String(refused));
        const held = await stored(target, row);
        const res = await t.post(path, body);
        assertUnreadable(res, target, row);
        // The database still holds what was written (nothing read "fixed" it).
        assert.equal(await stored(target, row), held);
      } finally {
        await restore(target, row);
      }
      assert.deepEqual((await postOk(t, path, body)).data, before.data, 'corrected, the record reads again');
    });
  }
});

describe('what does not need the value still reads', () => {
  test('the same record without the field, and the other records with it, answer 200', async () => {
    const row = await firstRow(partClass);
    const refused = await writeRaw(partClass, row, "'abc'");
    try {
      if (t.engine !== 'sqlite') {
        assert.ok(refused);
        return;
      }
      const without = await postOk(t, Q('parts'), { select: ['id', 'partCode'], filters: { match: { field: 'id', operator: '=', value: row.id } } });
      assert.deepEqual(without.data.map((r: any) => r.id), [row.id]);
      const others = await postOk(t, Q('parts'), { select: ['id', 'partClass'], filters: { match: { field: 'id', operator: '<>', value: row.id } }, page: { pageSize: 1000 } });
      assert.equal(others.page.totalCount, Number((await t.knex('tkfprt').count({ n: '*' }))[0]!.n) - 1);
      // A page holding it, with the key selected: named the same way.
      const page = await t.post(Q('parts'), { select: ['id', 'partClass'], orderBy: ['id ASC'], page: { pageSize: 1000 } });
      assertUnreadable(page, partClass, row);
    } finally {
      await restore(partClass, row);
    }
  });

  test('match: a candidate with an unreadable selected field is 502 naming it; without the field it matches', async () => {
    const row = await firstRow(partClass);
    const code = String((await t.knex('tkfprt').where({ _idnum: row.id }).first('prtcde')).prtcde);
    const refused = await writeRaw(partClass, row, "'abc'");
    try {
      if (t.engine !== 'sqlite') {
        assert.ok(refused);
        return;
      }
      const match = (select: string[]) => t.post('/api/v3/parts/match', { matchString: code, matchFields: ['partCode'], select, maxDistance: 1 });
      const res = await match(['id', 'partCode', 'partClass']);
      assert.equal(res.status, 502, res.text);
      const body = assertProblem(res, 'STORED_VALUE_UNREADABLE', '/api/v3/parts/match');
      assert.deepEqual(body.unreadableValue, { entity: 'parts', field: 'partClass', recordId: row.id });
      const without = await match(['id', 'partCode']);
      assert.equal(without.status, 200, without.text);
      assert.ok(without.body.data.some((r: any) => r.id === row.id));
    } finally {
      await restore(partClass, row);
    }
  });
});

describe('the frozen v2 surface', () => {
  test('a v2 query meeting the value answers 502 with errorCode STORED_VALUE_UNREADABLE, never a 500', async () => {
    const row = await firstRow(partCost);
    const refused = await writeRaw(partCost, row, "'n/a'");
    try {
      if (t.engine !== 'sqlite') {
        assert.ok(refused);
        return;
      }
      const res = await t.post('/api/v2/query/part', { selectFields: ['id', 'partCost'], orderBy: ['partCode ASC'], pageSize: 1000 });
      assert.equal(res.status, 502, res.text);
      assert.equal(res.headers['x-error-code'], 'STORED_VALUE_UNREADABLE');
      assert.equal(res.body.errorCode, 'STORED_VALUE_UNREADABLE');
      assert.ok(String(res.body.message).includes(row.id), res.text);
    } finally {
      await restore(partCost, row);
    }
  });
});

describe('decoding any stored value (every engine, every kind of column of the catalog)', () => {
  /**
   * The field's schema as the generated contract has it (the JSON type, null where nullable, the
   * column's keywords, the format), compiled by ajv with the contract validator's formats: an
   * oracle independent of the decoder's own check.
   */
  const ajv = new Ajv2020({ strict: false, validateFormats: true });
  addFormats(ajv);
  ajv.addFormat('date', { type: 'string', validate: isStorableDate });
  ajv.addFormat('date-time', { type: 'string', validate: isStorableDateTime });
  const JSON_TYPE = { integer: 'integer', decimal: 'number', string: 'string', boolean: 'boolean', uuid: 'string', date: 'string', datetime: 'string' } as const;
  const FORMAT = { uuid: 'uuid', date: 'date', datetime: 'date-time' } as Record<string, string>;
  const validatorOf = (f: FieldDef) =>
    ajv.compile({
      type: f.nullable ? [JSON_TYPE[f.kind], 'null'] : JSON_TYPE[f.kind],
      ...schemaKeywords(parseColumnType(f.sqlType)),
      ...(FORMAT[f.kind] ? { format: FORMAT[f.kind] } : {}),
    });

  test('a record decoder answers what the contract publishes or STORED_VALUE_UNREADABLE, never another error, whatever a driver returns', () => {
    const columns = new Map<string, FieldDef>();
    for (const entity of Object.values(CATALOG)) for (const f of Object.values(entity.fields)) columns.set(`${f.kind} ${f.sqlType} ${f.nullable}`, f);
    const fields = [...columns.values()].map((f, i) => ({ ...f, name: `f${i}`, column: `c${i}` }));
    const validators = fields.map(validatorOf);
    const raw = fc.oneof(
      fc.anything(),
      fc.double(),
      fc.bigInt(),
      fc.date({ noInvalidDate: false }),
      fc.constantFrom(Infinity, -Infinity, NaN, '', 'NaN', 'infinity', '2026-02-30', '0044-03-15 BC', '10000-01-01', 't', 'maybe', -1, 2 ** 53, '\u0000', '2026-11-26', 12345, 'F'),
      fc.uint8Array(),
    );
    for (const engine of ['sqlite', 'postgres', 'mssql'] as const) {
      const decoders = fields.map((f) => recordDecoder(queryDialectFor(engine), [f], { entity: 'anything', keyColumn: 'k' }));
      fc.assert(
        fc.property(fc.nat(fields.length - 1), raw, (i, value) => {
          const f = fields[i]!;
          let record: Record<string, unknown>;
          try {
            record = decoders[i]!({ k: 'key', [f.column]: value });
          } catch (err) {
            assert.ok(err instanceof ApiProblem && err.code === 'STORED_VALUE_UNREADABLE', `${engine}: ${String(err)}`);
            return;
          }
          assert.ok(validators[i]!(record[f.name]), `${engine} ${f.kind} ${f.sqlType}: ${String(value)} -> ${String(record[f.name])}`);
        }),
        { numRuns: 5000 },
      );
    }
  });
});
