import type { Knex } from 'knex';
import type { Engine } from './database';

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

/** A transaction's lock taker, for the engine: what the posting context offers as `lockName`. */
export function namedLocksFor(engine: Engine): (trx: Knex.Transaction, name: string) => Promise<void> {
  return (trx, name) => lockNameForTransaction(trx, engine, name);
}
