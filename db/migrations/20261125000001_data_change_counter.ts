/**
 * The data change counter: the change token of reads (SnapshotReader.changeToken), under which
 * totalCounts and match indexes are reused (src/engines/query/count-cache.ts,
 * src/engines/match/index-cache.ts). Triggers on every book table (entity and line tables, the
 * same list as the upddte triggers) add 1 in the very transaction that changes a row, whoever makes
 * the change: this service, another instance, the desktop accounting system, a DBA. The service's
 * own bookkeeping tables (instance heartbeats, idempotency claims, number blocks, the lock, API
 * keys, webhooks) have no trigger: a heartbeat every second no longer counts as a data change
 * (it used to move the database-wide token, SQLite data_version / the PostgreSQL snapshot, so every
 * worker rebuilt its match index and recounted at least once a second).
 *
 * Several counter rows (`id` 0..SHARDS-1) so that concurrent postings on PostgreSQL do not queue on
 * one row lock: a transaction bumps the row of its connection (backend pid modulo SHARDS), once per
 * transaction (a transaction-local setting remembers it did), from a statement-level trigger. The
 * token is the SUM of the rows read in the reader's snapshot. Why a sum is exact: every
 * transaction that changes book data adds at least 1, counters only grow, and of two snapshots one
 * sees every transaction the other sees (later snapshots see a superset of committed transactions);
 * so equal sums mean the same committed changes. SQLite has one writer: one row, a row trigger.
 * SQL Server: statement triggers (as for `refchg`), the row of the session (@@SPID modulo SHARDS);
 * its readers read the sum in their SNAPSHOT transaction.
 */
import type { Knex } from 'knex';
import type { Engine } from '../../src/storage/database';
import { engineOf } from '../../src/storage/dialect';
import { TABLES as BOOK_TABLES } from './20261122000004_upddte_triggers';
import type { AlterStep, TableStep } from './support/schema';
import { counterTableStep, counterTriggers, dropCounterTriggers, type CounterSpec } from './support/change-counter';

export const DATA_COUNTER_TABLE = 'datchg';

/** Counter rows on PostgreSQL and SQL Server (one on SQLite). */
export const SHARDS = 32;

/** Tables whose changes are data changes: every entity and line table. */
export const COUNTED_TABLES: readonly string[] = BOOK_TABLES;

export const steps: TableStep[] = [counterTableStep(DATA_COUNTER_TABLE)];

export const alterations: AlterStep[] = [];

const SPEC: CounterSpec = {
  counter: DATA_COUNTER_TABLE,
  suffix: 'datchg',
  sqliteRow: '0',
  mssqlRow: `@@SPID % ${SHARDS}`,
  pgFunction: 'books_bump_datchg',
  // Once per transaction: later statements of the same transaction find the setting (local to
  // the transaction, and undone with a rolled-back savepoint together with its UPDATE).
  pgBody:
    `DECLARE x text := txid_current()::text; ` +
    `BEGIN IF current_setting('books.datchg_xid', true) IS DISTINCT FROM x THEN ` +
    `UPDATE "${DATA_COUNTER_TABLE}" SET "n" = "n" + 1 WHERE "id" = pg_backend_pid() % ${SHARDS}; ` +
    `PERFORM set_config('books.datchg_xid', x, true); END IF; RETURN NULL; END`,
};

/** The statements that create the counting triggers on `engine`, one statement each. */
export function createStatements(engine: Engine, tables: readonly string[] = COUNTED_TABLES): string[] {
  return counterTriggers(SPEC, engine, tables);
}

export function dropStatements(engine: Engine, tables: readonly string[] = COUNTED_TABLES): string[] {
  return dropCounterTriggers(SPEC, engine, tables);
}

/** The counter table, its rows and the triggers on `tables` (the query-engine fixtures count their own tables). */
export async function installDataCounter(knex: Knex, tables: readonly string[] = COUNTED_TABLES): Promise<void> {
  const engine = engineOf(knex);
  for (const s of steps) await s.build(knex);
  const rows = engine === 'sqlite' ? 1 : SHARDS;
  await knex(DATA_COUNTER_TABLE).insert(Array.from({ length: rows }, (_, id) => ({ id, n: 0 })));
  for (const sql of createStatements(engine, tables)) await knex.raw(sql);
}

export async function up(knex: Knex): Promise<void> {
  await installDataCounter(knex);
}

export async function down(knex: Knex): Promise<void> {
  const engine = engineOf(knex);
  for (const sql of dropStatements(engine)) await knex.raw(sql);
  await knex.schema.dropTableIfExists(DATA_COUNTER_TABLE);
}
