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

export const DATA_COUNTER_TABLE = 'datchg';

/** Counter rows on PostgreSQL and SQL Server (one on SQLite). */
export const SHARDS = 32;

/** Tables whose changes are data changes: every entity and line table. */
export const COUNTED_TABLES: readonly string[] = BOOK_TABLES;

export const steps: TableStep[] = [
  {
    table: DATA_COUNTER_TABLE,
    build: (knex) =>
      knex.schema.createTable(DATA_COUNTER_TABLE, (t) => {
        t.integer('id').notNullable().primary();
        t.bigInteger('n').notNullable().defaultTo(0);
      }),
  },
];

export const alterations: AlterStep[] = [];

const PG_FUNCTION = 'books_bump_datchg';

/** The statements that create the counting triggers on `engine`, one statement each. */
export function createStatements(engine: Engine, tables: readonly string[] = COUNTED_TABLES): string[] {
  switch (engine) {
    case 'sqlite':
      return tables.flatMap((t) =>
        ['INSERT', 'UPDATE', 'DELETE'].map(
          (event) =>
            `CREATE TRIGGER IF NOT EXISTS "${t}_datchg_${event.toLowerCase()}" AFTER ${event} ON "${t}" ` +
            `BEGIN UPDATE "${DATA_COUNTER_TABLE}" SET "n" = "n" + 1 WHERE "id" = 0; END`,
        ),
      );
    case 'postgres':
      return [
        // Once per transaction: later statements of the same transaction find the setting (local to
        // the transaction, and undone with a rolled-back savepoint together with its UPDATE).
        `CREATE OR REPLACE FUNCTION ${PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ ` +
          `DECLARE x text := txid_current()::text; ` +
          `BEGIN IF current_setting('books.datchg_xid', true) IS DISTINCT FROM x THEN ` +
          `UPDATE "${DATA_COUNTER_TABLE}" SET "n" = "n" + 1 WHERE "id" = pg_backend_pid() % ${SHARDS}; ` +
          `PERFORM set_config('books.datchg_xid', x, true); END IF; RETURN NULL; END $$`,
        ...tables.flatMap((t) => [
          `DROP TRIGGER IF EXISTS "${t}_datchg" ON "${t}"`,
          `CREATE TRIGGER "${t}_datchg" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "${t}" FOR EACH STATEMENT EXECUTE FUNCTION ${PG_FUNCTION}()`,
        ]),
      ];
    case 'mssql':
      // Each trigger its own batch (one knex.raw each); CREATE OR ALTER needs SQL Server 2016 SP1.
      return tables.map(
        (t) =>
          `CREATE OR ALTER TRIGGER [${t}_datchg] ON [${t}] AFTER INSERT, UPDATE, DELETE AS BEGIN SET NOCOUNT ON; ` +
          `IF EXISTS (SELECT 1 FROM inserted) OR EXISTS (SELECT 1 FROM deleted) UPDATE [${DATA_COUNTER_TABLE}] SET [n] = [n] + 1 WHERE [id] = @@SPID % ${SHARDS}; END`,
      );
  }
}

export function dropStatements(engine: Engine, tables: readonly string[] = COUNTED_TABLES): string[] {
  switch (engine) {
    case 'sqlite':
      return tables.flatMap((t) => ['insert', 'update', 'delete'].map((e) => `DROP TRIGGER IF EXISTS "${t}_datchg_${e}"`));
    case 'postgres':
      return [...tables.map((t) => `DROP TRIGGER IF EXISTS "${t}_datchg" ON "${t}"`), `DROP FUNCTION IF EXISTS ${PG_FUNCTION}()`];
    case 'mssql':
      return tables.map((t) => `DROP TRIGGER IF EXISTS [${t}_datchg]`);
  }
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
