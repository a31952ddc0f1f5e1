import type { Knex } from 'knex';
import { Dec, toDec } from './decimal';
import type { Engine } from './database';
import type { Dialect, QueryDialect } from './dialect-types';
import { sqliteQueryDialect } from './query-dialect-sqlite';
import { postgresQueryDialect } from './query-dialect-postgres';
import { mssqlQueryDialect } from './query-dialect-mssql';

/**
 * Everything that differs between SQLite, PostgreSQL and SQL Server lives in this module and the
 * ones it names, so the engines above stay dialect-free: the write side's Dialect here, the read
 * side's QueryDialect per engine (query-dialect-sqlite.ts, -postgres.ts, -mssql.ts, sharing
 * query-dialect-common.ts), the types of both in dialect-types.ts. Importers take all of it from
 * here. Add to these modules rather than branching on the engine elsewhere.
 */
export { UNREADABLE } from './dialect-types';
export type { DecodedValue, Dialect, ExactText, ListColumn, PageRead, QueryDialect, SnapshotReader, SqlFragment } from './dialect-types';

/** 10^0 .. 10^22 as Decs, built once (building 10^scale cost more than the product it scales by). */
const POW10_DECS: readonly Dec[] = Array.from({ length: 23 }, (_, i) => new Dec(10).pow(i));
const pow10 = (scale: number): Dec => POW10_DECS[scale] ?? new Dec(10).pow(scale);

const SQLITE_DECIMAL_NOT_STORED = "typeof(??) not in ('integer', 'null')";
// As text: the literals 'Infinity' are no numeric before PostgreSQL 14. SQL Server's decimal
// holds no such value: never true, still naming the column once like the others.
const POSTGRES_DECIMAL_NOT_STORED = "cast(?? as text) in ('NaN', 'Infinity', '-Infinity')";
const MSSQL_DECIMAL_NOT_STORED = '(1 = 0 and ?? is null)';

const sqliteDialect: Dialect = {
  engine: 'sqlite',
  encodeDecimal(value, scale) {
    const scaled = value.times(pow10(scale));
    // Comparisons against values finer than the column scale stay exact as a decimal string.
    return scaled.isInteger() ? Number(scaled.toFixed(0)) : scaled.toNumber();
  },
  decodeDecimal(raw, scale) {
    if (raw === null || raw === undefined) return null;
    return toDec(typeof raw === 'bigint' ? raw.toString() : (raw as number | string)).div(pow10(scale));
  },
  decimalColumn(table, name) {
    return table.bigInteger(name);
  },
  // A decimal is stored as its scaled integer (encodeDecimal): anything else is another program's.
  decimalsNotStored: `count(case when ${SQLITE_DECIMAL_NOT_STORED} then 1 end)`,
  decimalNotStored: SQLITE_DECIMAL_NOT_STORED,
};

function exactDialect(engine: Engine): Dialect {
  return {
    engine,
    encodeDecimal(value, scale) {
      return value.toFixed(scale < 0 ? 0 : Math.max(scale, value.decimalPlaces()));
    },
    decodeDecimal(raw) {
      if (raw === null || raw === undefined) return null;
      return toDec(raw as string);
    },
    decimalColumn(table, name, precision, scale) {
      return table.decimal(name, precision, scale);
    },
    // See POSTGRES_DECIMAL_NOT_STORED above; on SQL Server a count that is always 0.
    decimalsNotStored: engine === 'postgres' ? `count(case when ${POSTGRES_DECIMAL_NOT_STORED} then 1 end)` : 'count(case when 1 = 0 then ?? end)',
    decimalNotStored: engine === 'postgres' ? POSTGRES_DECIMAL_NOT_STORED : MSSQL_DECIMAL_NOT_STORED,
  };
}

export function dialectFor(engine: Engine): Dialect {
  return engine === 'sqlite' ? sqliteDialect : exactDialect(engine);
}

export function engineOf(knex: Knex): Engine {
  const client = String(knex.client.config.client);
  if (client === 'better-sqlite3' || client === 'sqlite3') return 'sqlite';
  if (client === 'pg' || client === 'postgres' || client === 'postgresql') return 'postgres';
  if (client === 'mssql') return 'mssql';
  throw new Error(`unsupported knex client ${client}`);
}

const queryDialects = new Map<Engine, QueryDialect>();

export function queryDialectFor(engine: Engine): QueryDialect {
  let qd = queryDialects.get(engine);
  if (!qd) {
    const base = dialectFor(engine);
    qd = engine === 'sqlite' ? sqliteQueryDialect(base) : engine === 'postgres' ? postgresQueryDialect(base) : mssqlQueryDialect(base);
    queryDialects.set(engine, qd);
  }
  return qd;
}

