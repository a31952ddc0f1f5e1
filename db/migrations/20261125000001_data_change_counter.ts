/**
 * The data change counter: the change token of reads (SnapshotReader.changeToken), under which
 * totalCounts and match indexes are reused (src/engines/query/count-cache.ts,
 * src/engines/match/index-cache.ts). Triggers on every book table (entity and line tables, the
 * same list as the upddte triggers) count every transaction that changes a row, whoever makes the
 * change: this service, another instance, the desktop accounting system, a DBA. The service's own
 * bookkeeping tables (instance heartbeats, idempotency claims, number blocks, the lock, API keys,
 * webhooks) have no trigger: a heartbeat every second no longer counts as a data change (it used
 * to move the database-wide token, SQLite data_version / the PostgreSQL snapshot, so every worker
 * rebuilt its match index and recounted at least once a second).
 *
 * The token is `datchg.n + count(datlog)` as the reader's snapshot sees them.
 * - SQLite (one writer): each changed row adds 1 to `datchg.n`.
 * - PostgreSQL and SQL Server: each changing transaction INSERTs one row (its transaction id) into
 *   `datlog`, from statement triggers (PostgreSQL remembers in a transaction-local setting that it
 *   did; SQL Server looks the id up). An INSERT of a new key waits on nobody, so concurrent
 *   postings do not queue on a counter row and cannot deadlock with it (a counter row UPDATEd from
 *   the first write to the commit could: one transaction holding it and waiting for a row the other
 *   locked before its own first count). `foldDataChangeLog` (src/storage/data-change-log.ts) moves
 *   the log into `datchg.n` in one transaction every second, which leaves the token as it was.
 *
 * Why the token is exact: every committed change of book data adds at least 1, nothing ever
 * subtracts from the sum (a fold moves, it does not remove), and of two snapshots one sees every
 * transaction the other sees; so equal tokens mean the same committed changes. A rolled-back change
 * adds nothing (its row or its addition rolls back with it).
 */
import type { Knex } from 'knex';
import type { Engine } from '../../src/storage/database';
import { engineOf } from '../../src/storage/dialect';
import { TABLES as BOOK_TABLES } from './20261122000004_upddte_triggers';
import type { AlterStep, TableStep } from './support/schema';
import { counterTableStep, counterTriggers, dropCounterTriggers, type CounterSpec } from './support/change-counter';

export const DATA_COUNTER_TABLE = 'datchg';
export const DATA_LOG_TABLE = 'datlog';

/** Tables whose changes are data changes: every entity and line table. */
export const COUNTED_TABLES: readonly string[] = BOOK_TABLES;

export const steps: TableStep[] = [
  counterTableStep(DATA_COUNTER_TABLE),
  {
    table: DATA_LOG_TABLE,
    build: (knex) =>
      knex.schema.createTable(DATA_LOG_TABLE, (t) => {
        t.bigInteger('txid').notNullable().primary();
      }),
  },
];

export const alterations: AlterStep[] = [];

const SPEC: CounterSpec = {
  suffix: 'datchg',
  sqliteStatement: `UPDATE "${DATA_COUNTER_TABLE}" SET "n" = "n" + 1 WHERE "id" = 0`,
  mssqlStatement:
    `IF NOT EXISTS (SELECT 1 FROM [${DATA_LOG_TABLE}] WHERE [txid] = CURRENT_TRANSACTION_ID()) ` +
    `INSERT INTO [${DATA_LOG_TABLE}] ([txid]) VALUES (CURRENT_TRANSACTION_ID())`,
  pgFunction: 'books_log_datchg',
  // Once per transaction: later statements of the same transaction find the setting (local to the
  // transaction, and undone with a rolled-back savepoint together with its INSERT).
  pgBody:
    `DECLARE x bigint := txid_current(); ` +
    `BEGIN IF current_setting('books.datlog_txid', true) IS DISTINCT FROM x::text THEN ` +
    `INSERT INTO "${DATA_LOG_TABLE}" ("txid") VALUES (x) ON CONFLICT DO NOTHING; ` +
    `PERFORM set_config('books.datlog_txid', x::text, true); END IF; RETURN NULL; END`,
};

/** The statements that create the counting triggers on `engine`, one statement each. */
export function createStatements(engine: Engine, tables: readonly string[] = COUNTED_TABLES): string[] {
  return counterTriggers(SPEC, engine, tables);
}

export function dropStatements(engine: Engine, tables: readonly string[] = COUNTED_TABLES): string[] {
  return dropCounterTriggers(SPEC, engine, tables);
}

/** The counter's tables, its row and the triggers on `tables` (the query-engine fixtures count their own tables). */
export async function installDataCounter(knex: Knex, tables: readonly string[] = COUNTED_TABLES): Promise<void> {
  for (const s of steps) await s.build(knex);
  await knex(DATA_COUNTER_TABLE).insert({ id: 0, n: 0 });
  for (const sql of createStatements(engineOf(knex), tables)) await knex.raw(sql);
}

export async function up(knex: Knex): Promise<void> {
  await installDataCounter(knex);
}

export async function down(knex: Knex): Promise<void> {
  for (const sql of dropStatements(engineOf(knex))) await knex.raw(sql);
  await knex.schema.dropTableIfExists(DATA_LOG_TABLE);
  await knex.schema.dropTableIfExists(DATA_COUNTER_TABLE);
}
