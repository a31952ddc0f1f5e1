import type { Dec } from './decimal';
import { DATA_TOKEN_SQL } from './data-change-log';
import type { Dialect, QueryDialect, Row, ValueKind } from './dialect-types';
import { counterToken, decodeCommon, escapeLike, jsonScalar, tokenOf, transactionReader } from './query-dialect-common';

/** PostgreSQL's query dialect: lists as one JSON parameter, a page read at once, repeatable-read snapshots. */

const PG_TYPE: Record<ValueKind, (scale?: number) => string> = {
  uuid: () => 'uuid',
  integer: () => 'bigint',
  string: () => 'text',
  date: () => 'date',
  datetime: () => 'timestamptz',
  decimal: () => 'numeric',
  boolean: () => 'boolean',
};

/** PostgreSQL's DATE type (pg_type.oid). */
const PG_DATE_OID = 1082;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

interface PgTypeParsers {
  getTypeParser(oid: number, format?: string): (value: string) => unknown;
}

let pgReadTypes: PgTypeParsers | undefined;

/**
 * node-postgres's type parsers for a page read at once, but DATE: its `YYYY-MM-DD` text is the
 * published form already, where the driver's parser builds a local-midnight Date that dateOf then
 * takes apart again (on a page of job costs, two dates a row, that round trip was about a fifth
 * of the driver's CPU; decision 0350). Text of another form (a year past 9999, BC) keeps the
 * driver's parser, so its decoding is what it was. The driver is required here, on first use, not
 * at import: loading `pg` loads undici (the global fetch, ~20 MB a process), which a start on
 * SQLite never needs (test/architecture/startup-imports.test.ts); knex has loaded it already here.
 */
function readTypesOfPg(): PgTypeParsers {
  if (!pgReadTypes) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { types } = require('pg') as { types: PgTypeParsers };
    const driverDate = types.getTypeParser(PG_DATE_OID, 'text');
    const dateText = (text: string): unknown => (ISO_DATE.test(text) ? text : driverDate(text));
    pgReadTypes = {
      getTypeParser: (oid, format) => (oid === PG_DATE_OID && format !== 'binary' ? dateText : types.getTypeParser(oid, format)),
    };
  }
  return pgReadTypes;
}

export const postgresQueryDialect = (base: Dialect): QueryDialect => ({
  engine: 'postgres',
  // node-postgres returns int4 as a number (int8 and NUMERIC as text, which the count index refuses).
  exactNumberKinds: new Set(['integer']),
  encodeValue(kind, value, scale) {
    switch (kind) {
      case 'decimal':
        return base.encodeDecimal(value as Dec, scale ?? 2);
      case 'datetime':
        return (value as Date).toISOString();
      default:
        return value;
    }
  },
  decodeValue(kind, raw, scale) {
    // NUMERIC arrives as its exact decimal text: parsing it is Number(decodeDecimal(raw).toFixed())
    // ('NaN', which NUMERIC stores, parses to NaN: the read check refuses it).
    if (kind === 'decimal' && typeof raw === 'string') return Number(raw);
    // node-postgres parses DATE into a local-midnight Date ('infinity' into Infinity).
    return decodeCommon(kind, raw, true);
  },
  inList(column, encoded) {
    return {
      sql: `?? IN (SELECT (e.v)::${PG_TYPE[column.kind](column.scale)} FROM jsonb_array_elements_text(?::jsonb) AS e(v))`,
      bindings: [column.column, JSON.stringify(encoded.map(jsonScalar))],
    };
  },
  inTuples(columns, encoded) {
    const defs = columns.map((c, i) => `c${i} ${PG_TYPE[c.kind](c.scale)}`).join(', ');
    const conds = columns.map((_, i) => `?? = p.c${i}`).join(' AND ');
    const rows = encoded.map((t) => Object.fromEntries(t.map((v, i) => [`c${i}`, jsonScalar(v)])));
    return {
      sql: `EXISTS (SELECT 1 FROM jsonb_to_recordset(?::jsonb) AS p(${defs}) WHERE ${conds})`,
      bindings: [JSON.stringify(rows), ...columns.map((c) => c.column)],
    };
  },
  like(column, pattern, negate) {
    return { sql: `?? ${negate ? 'NOT ILIKE' : 'ILIKE'} ? ESCAPE '!'`, bindings: [column, escapeLike(pattern)] };
  },
  readSnapshot(knex, fn) {
    return knex.transaction((trx) => fn(transactionReader(trx, counterToken)), { isolationLevel: 'repeatable read', readOnly: true });
  },
  async readPageAtOnce(knex, { page, count }) {
    // One SELECT sees one snapshot (READ COMMITTED takes one per statement): the token and the
    // count are uncorrelated scalar subqueries of the page's select list, which PostgreSQL runs
    // once a statement (InitPlans), so they agree with the page as in a repeatable-read
    // transaction. The page keeps its own plan and order: wrapping it (a LATERAL join of the
    // one-row token, ordered again outside) cost PostgreSQL about twice the CPU to parse, plan and
    // run (decision 0350). An empty page answers no row, so neither token nor count.
    const read = page.clone().select(knex.raw(`(${DATA_TOKEN_SQL}) as "__token"`)).options({ types: readTypesOfPg() });
    if (count) read.select(knex.raw('? as "__count"', [count]));
    const rows = (await read) as Row[];
    const first = rows[0];
    return {
      token: tokenOf(first === undefined ? undefined : { n: first.__token }),
      ...(count && first !== undefined ? { count: Number(first.__count) } : {}),
      rows,
    };
  },
});
