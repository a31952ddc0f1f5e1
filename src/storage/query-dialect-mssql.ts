import type { Dec } from './decimal';
import type { Dialect, ExactText, QueryDialect, ValueKind } from './dialect-types';
import { counterToken, decodeCommon, escapeLike, jsonScalar, transactionReader } from './query-dialect-common';

/** SQL Server's query dialect: lists through OPENJSON, snapshot isolation for reads (T-SQL tested as compiled: test/storage/mssql-compile.test.ts). */

const MSSQL_TYPE: Record<ValueKind, (scale?: number) => string> = {
  uuid: () => 'uniqueidentifier',
  integer: () => 'bigint',
  string: () => 'nvarchar(4000)',
  date: () => 'date',
  datetime: () => 'datetime2',
  decimal: (scale) => `decimal(38, ${scale ?? 2})`,
  boolean: () => 'bit',
};

/**
 * Text compared exactly (decision 0464). The database's collation is case-insensitive (and, under
 * the SQL_ and Windows collations, may equate canonical forms of accented letters), and `=` pads
 * the shorter side with spaces, so a bare `col = @p` finds `Trailing Space ` for `Trailing Space`
 * and `EMILE` for `emile`. A binary collation compares code points, and a sentinel after both sides
 * makes trailing spaces count (BIN2 pads too). `=` keeps the column's own comparison in front, which
 * an index on the column answers by a seek; the exact one is checked on the rows it finds. A null
 * column gives NULL (CONCAT_NULL_YIELDS_NULL, on in every session), so it matches neither `=` nor `<>`.
 */
const EXACT_COLLATION = 'Latin1_General_100_BIN2';
const SENTINEL = '~';
/** `??` (a column) as exactly comparable text. */
const EXACT_COLUMN = `(?? + N'${SENTINEL}') COLLATE ${EXACT_COLLATION}`;

const exactText: ExactText = {
  extraParametersPerValue: 1,
  equals(column, value) {
    return { sql: `(?? = ? AND ${EXACT_COLUMN} = ?)`, bindings: [column, value, column, value + SENTINEL] };
  },
  differs(column, value) {
    // No seek to keep: an inequality reads the whole range anyway.
    return { sql: `${EXACT_COLUMN} <> ?`, bindings: [column, value + SENTINEL] };
  },
  inValues(column, values) {
    const list = values.map(() => '?').join(', ');
    return { sql: `(?? IN (${list}) AND ${EXACT_COLUMN} IN (${list}))`, bindings: [column, ...values, column, ...values.map((v) => v + SENTINEL)] };
  },
};

export const mssqlQueryDialect = (base: Dialect): QueryDialect => ({
  engine: 'mssql',
  exactText,
  // tedious returns int as a number; DECIMAL as a rounded double, never compared here.
  exactNumberKinds: new Set(['integer']),
  encodeValue(kind, value, scale) {
    switch (kind) {
      case 'decimal':
        return base.encodeDecimal(value as Dec, scale ?? 2);
      default:
        return value;
    }
  },
  decodeValue(kind, raw, scale) {
    // tedious returns DATE as UTC midnight.
    return decodeCommon(kind, raw, false);
  },
  inList(column, encoded) {
    const list = `OPENJSON(?) WITH ([v] ${MSSQL_TYPE[column.kind](column.scale)} '$')`;
    const json = JSON.stringify(encoded.map(jsonScalar));
    if (column.kind !== 'string') return { sql: `?? IN (SELECT [v] FROM ${list})`, bindings: [column.column, json] };
    // Text: the entries the column's collation finds (a seek per entry), kept when exactly equal.
    return {
      sql: `?? IN (SELECT [l].[v] FROM ${list} AS [l] WHERE ([l].[v] + N'${SENTINEL}') COLLATE ${EXACT_COLLATION} = ${EXACT_COLUMN})`,
      bindings: [column.column, json, column.column],
    };
  },
  inTuples(columns, encoded) {
    const defs = columns.map((c, i) => `[c${i}] ${MSSQL_TYPE[c.kind](c.scale)} '$.c${i}'`).join(', ');
    const conds = columns.map((c, i) => (c.kind === 'string' ? `?? = [p].[c${i}] AND ${EXACT_COLUMN} = ([p].[c${i}] + N'${SENTINEL}')` : `?? = [p].[c${i}]`)).join(' AND ');
    const rows = encoded.map((t) => Object.fromEntries(t.map((v, i) => [`c${i}`, jsonScalar(v)])));
    return {
      sql: `EXISTS (SELECT 1 FROM OPENJSON(?) WITH (${defs}) AS [p] WHERE ${conds})`,
      bindings: [JSON.stringify(rows), ...columns.flatMap((c) => (c.kind === 'string' ? [c.column, c.column] : [c.column]))],
    };
  },
  like(column, pattern, negate) {
    // Case sensitivity follows the column collation (case-insensitive by default on SQL Server).
    return { sql: `?? ${negate ? 'NOT LIKE' : 'LIKE'} ? ESCAPE '!'`, bindings: [column, escapeLike(pattern)] };
  },
  readSnapshot(knex, fn) {
    // Needs ALLOW_SNAPSHOT_ISOLATION ON (decision 0015; docs/sql-server.md; /readyz is 503 without it: database-state.ts).
    return knex.transaction((trx) => fn(transactionReader(trx, counterToken)), { isolationLevel: 'snapshot' });
  },
});
