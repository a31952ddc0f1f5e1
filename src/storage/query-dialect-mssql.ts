import type { Dec } from './decimal';
import type { Dialect, QueryDialect, ValueKind } from './dialect-types';
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

export const mssqlQueryDialect = (base: Dialect): QueryDialect => ({
  engine: 'mssql',
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
    return {
      sql: `?? IN (SELECT [v] FROM OPENJSON(?) WITH ([v] ${MSSQL_TYPE[column.kind](column.scale)} '$'))`,
      bindings: [column.column, JSON.stringify(encoded.map(jsonScalar))],
    };
  },
  inTuples(columns, encoded) {
    const defs = columns.map((c, i) => `[c${i}] ${MSSQL_TYPE[c.kind](c.scale)} '$.c${i}'`).join(', ');
    const conds = columns.map((_, i) => `?? = [p].[c${i}]`).join(' AND ');
    const rows = encoded.map((t) => Object.fromEntries(t.map((v, i) => [`c${i}`, jsonScalar(v)])));
    return {
      sql: `EXISTS (SELECT 1 FROM OPENJSON(?) WITH (${defs}) AS [p] WHERE ${conds})`,
      bindings: [JSON.stringify(rows), ...columns.map((c) => c.column)],
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
