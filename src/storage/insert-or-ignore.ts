import type { Knex } from 'knex';
import { engineOf } from './dialect';
import { compiledInsert } from './compiled-statements';

/** SQL Server: violation of a PRIMARY KEY / UNIQUE constraint (2627) or unique index (2601). */
const MSSQL_DUPLICATE_KEY = new Set([2627, 2601]);

function isMssqlDuplicateKey(err: unknown): boolean {
  const e = err as Record<string, any> | null;
  const number = typeof e?.number === 'number' ? e.number : e?.originalError?.info?.number;
  return typeof number === 'number' && MSSQL_DUPLICATE_KEY.has(number);
}

/**
 * Inserts `row` unless a row with the same `uniqueColumns` exists; true when it was inserted.
 * PostgreSQL and SQLite: INSERT ... ON CONFLICT DO NOTHING RETURNING. SQL Server has no such
 * clause: the insert is tried and a duplicate-key refusal means "exists" (the statement runs on
 * its own, so the refusal aborts nothing else).
 */
export async function insertUnlessExists(db: Knex | Knex.Transaction, table: string, row: Record<string, unknown>, uniqueColumns: string[], returning: string): Promise<boolean> {
  if (engineOf(db as Knex) === 'mssql') {
    try {
      await db(table).insert(row);
      return true;
    } catch (err) {
      if (isMssqlDuplicateKey(err)) return false;
      throw err;
    }
  }
  // Compiled once per table and columns (compiled-statements.ts): an idempotency claim per keyed write.
  const inserted = await compiledInsert(`insert into ${table} on conflict (${uniqueColumns.join(',')}) do nothing returning ${returning}`, [row], () =>
    db(table).insert(row).onConflict(uniqueColumns).ignore().returning(returning),
  );
  return Array.isArray(inserted) && inserted.length > 0;
}
