import type { Knex } from 'knex';
import { escapeLiteral } from 'pg';
import type { Engine } from './database';
import { COUNTER_SUBQUERY, type ReferenceCache } from './reference-cache';

/**
 * Exclusive locks on a name for the rest of a transaction, used to serialise postings that
 * must not race on a natural key (two journals with the same transaction number, two invoices
 * with the same vendor invoice number). SQLite needs none: the service holds one connection
 * and a write transaction excludes every other writer.
 */
export async function lockNameForTransaction(trx: Knex.Transaction, engine: Engine, name: string): Promise<void> {
  switch (engine) {
    case 'postgres':
      await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [name]);
      return;
    case 'mssql':
      await trx.raw("exec sp_getapplock @Resource = ?, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 15000", [name]);
      return;
    default:
      return;
  }
}

/**
 * PostgreSQL: the statement taking `name`'s lock, as complete text for the round trip of a posting
 * transaction's BEGIN (database.ts BeginStatement `then`): the same lock as lockNameForTransaction
 * takes (the same function of the same text), one round trip a posting less. The name is written
 * in as a literal by the driver's own escaping (pg's escapeLiteral); a name holding a NUL cannot be
 * (the simple query protocol ends its text there): undefined, as on the other engines (SQLite needs
 * no lock; SQL Server begins through the driver's API): the lock is then taken by its own statement.
 */
export function lockTextAtBegin(engine: Engine, name: string): string | undefined {
  if (engine !== 'postgres' || name.includes('\u0000')) return undefined;
  return `select pg_advisory_xact_lock(hashtextextended(${escapeLiteral(name)}, 0))`;
}

/**
 * A transaction's lock taker, for the engine: what the posting context offers as `lockName`.
 * On PostgreSQL, with the reference cache, the transaction's first lock also reads the reference
 * change counter unless the transaction has it already (a posting reads it with its lock fence,
 * storage/lock-fence.ts): one round trip instead of two. The counter is then as of that statement's start, before any wait for the
 * lock, which is a moment inside the transaction like any other: what committed before the
 * posting began is seen (reference-cache.ts).
 */
export function namedLocksFor(engine: Engine, references?: ReferenceCache): (trx: Knex.Transaction, name: string) => Promise<void> {
  if (engine !== 'postgres' || !references) return (trx, name) => lockNameForTransaction(trx, engine, name);
  return async (trx, name) => {
    if (references.hasVersion(trx)) return lockNameForTransaction(trx, engine, name);
    const result = (await trx.raw(`select pg_advisory_xact_lock(hashtextextended(?, 0)), ${COUNTER_SUBQUERY} as n`, [name])) as { rows: Array<{ n: unknown }> };
    references.adoptVersion(trx, result.rows[0]?.n);
  };
}
