import type { Knex } from 'knex';
import { Dec, toDec } from './decimal';
import type { Engine } from './database';

/**
 * Everything that differs between SQLite, PostgreSQL and SQL Server lives here, so the
 * engines above stay dialect-free. Add to this module rather than branching on the engine
 * elsewhere.
 */
export interface Dialect {
  readonly engine: Engine;
  /** Encodes an exact decimal for a DECIMAL(p, scale) column (scaled integer on SQLite). */
  encodeDecimal(value: Dec, scale: number): string | number;
  /** Decodes what the driver returned for a DECIMAL(p, scale) column. */
  decodeDecimal(raw: unknown, scale: number): Dec | null;
  /** Creates a decimal column in a migration. */
  decimalColumn(table: Knex.CreateTableBuilder, name: string, precision: number, scale: number): Knex.ColumnBuilder;
}

const pow10 = (scale: number) => new Dec(10).pow(scale);

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
