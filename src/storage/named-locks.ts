import type { Knex } from 'knex';
import { sendableAtBegin, type Engine, type StatementAtBegin } from './database';
import { COUNTER_SUBQUERY, type ReferenceCache } from './reference-cache';

/** PostgreSQL: the transaction-scoped lock on a name (a 64-bit hash of it). */
const PG_LOCK = 'select pg_advisory_xact_lock(hashtextextended(?, 0))';

/**
 * SQL Server: the transaction-owned application lock on a name. sp_getapplock RETURNS its outcome
 * (0/1 granted; -1 timeout, -2 cancelled, -3 deadlock victim, -999 bad call) and raises nothing: a
 * refusal ignored would let the posting go on unserialised (a journal number posted twice). So a
 * refusal is thrown as error APPLOCK_REFUSED_BASE - result (51001 timeout, 51002 cancelled, 51003
 * deadlock, 51999 bad call), which boundary.ts classifies (502 DATABASE_REFUSED busy / deadlock).
 */
export const APPLOCK_REFUSED_BASE = 51000;
export const MSSQL_LOCK =
  "DECLARE @r int; EXEC @r = sp_getapplock @Resource = ?, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 15000; " +
  `IF @r < 0 BEGIN DECLARE @e int = ${APPLOCK_REFUSED_BASE} - @r; THROW @e, N'named lock not granted (sp_getapplock refused)', 1; END`;

/**
 * Exclusive locks on a name for the rest of a transaction, used to serialise postings that
 * must not race on a natural key (two journals with the same transaction number, two invoices
 * with the same vendor invoice number). SQLite needs none: the service holds one connection
 * and a write transaction excludes every other writer.
 */
export async function lockNameForTransaction(trx: Knex.Transaction, engine: Engine, name: string): Promise<void> {
  switch (engine) {
    case 'postgres':
      await trx.raw(PG_LOCK, [name]);
      return;
    case 'mssql':
      await trx.raw(MSSQL_LOCK, [name]);
      return;
    default:
      return;
  }
}

/**
 * `name`'s lock taken by a posting transaction's BEGIN (database.ts BeginStatement `then`):
 *   PostgreSQL  the statement of lockNameForTransaction (the same function of the same text: the
 *               same lock), sent in BEGIN's round trip: one round trip a posting less;
 *   SQLite      nothing to send: BEGIN IMMEDIATE already excludes every other writer (`{}`);
 *   undefined   not at BEGIN (SQL Server begins through the driver's API; a name the simple query
 *               protocol cannot carry): the lock is taken by its own statement, as before.
 */
export function lockAtBegin(engine: Engine, name: string): { statement?: StatementAtBegin } | undefined {
  if (engine === 'sqlite') return {};
  const statement = { sql: PG_LOCK, bindings: [name] };
  return engine === 'postgres' && sendableAtBegin(engine, statement.bindings) ? { statement } : undefined;
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
