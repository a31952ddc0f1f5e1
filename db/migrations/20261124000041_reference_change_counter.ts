/**
 * One change counter for the reference data a posting reads (ledger setup, fiscal periods, ledger
 * accounts, transaction sources), kept by triggers: any INSERT, UPDATE or DELETE of those tables,
 * by this service, another instance, the desktop accounting system or a DBA, adds 1 in the same
 * transaction. The posting engine caches the reference rows and reads only this counter (one
 * primary-key row) in each posting transaction; a different value drops the cache
 * (src/storage/reference-cache.ts, docs/decisions.md "Reference cache").
 *
 * Statement-level where the engine has it (PostgreSQL, SQL Server), so a bulk UPDATE bumps once.
 */
import type { Knex } from 'knex';
import type { Engine } from '../../src/storage/database';
import { engineOf } from '../../src/storage/dialect';
import type { AlterStep, TableStep } from './support/schema';

/** The tables whose rows the reference cache holds. */
export const REFERENCE_TABLES: readonly string[] = ['lgrstp', 'fscprd', 'lgract', 'source'];

export const COUNTER_TABLE = 'refchg';

export const steps: TableStep[] = [
  {
    table: COUNTER_TABLE,
    build: (knex) =>
      knex.schema.createTable(COUNTER_TABLE, (t) => {
        t.integer('id').notNullable().primary();
        t.bigInteger('n').notNullable().defaultTo(0);
      }),
  },
];

export const alterations: AlterStep[] = [];

const PG_FUNCTION = 'books_bump_refchg';

/** The statements that create the counting triggers on `engine`, one statement each. */
export function createStatements(engine: Engine, tables: readonly string[] = REFERENCE_TABLES): string[] {
  switch (engine) {
    case 'sqlite':
      return tables.flatMap((t) =>
        ['INSERT', 'UPDATE', 'DELETE'].map(
          (event) => `CREATE TRIGGER IF NOT EXISTS "${t}_refchg_${event.toLowerCase()}" AFTER ${event} ON "${t}" BEGIN UPDATE "${COUNTER_TABLE}" SET "n" = "n" + 1 WHERE "id" = 1; END`,
        ),
      );
    case 'postgres':
      return [
        `CREATE OR REPLACE FUNCTION ${PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ ` +
          `BEGIN UPDATE "${COUNTER_TABLE}" SET "n" = "n" + 1 WHERE "id" = 1; RETURN NULL; END $$`,
        ...tables.flatMap((t) => [
          `DROP TRIGGER IF EXISTS "${t}_refchg" ON "${t}"`,
          `CREATE TRIGGER "${t}_refchg" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "${t}" FOR EACH STATEMENT EXECUTE FUNCTION ${PG_FUNCTION}()`,
        ]),
      ];
    case 'mssql':
      // Each trigger its own batch (one knex.raw each); CREATE OR ALTER needs SQL Server 2016 SP1.
      return tables.map(
        (t) =>
          `CREATE OR ALTER TRIGGER [${t}_refchg] ON [${t}] AFTER INSERT, UPDATE, DELETE AS BEGIN SET NOCOUNT ON; ` +
          `IF EXISTS (SELECT 1 FROM inserted) OR EXISTS (SELECT 1 FROM deleted) UPDATE [${COUNTER_TABLE}] SET [n] = [n] + 1 WHERE [id] = 1; END`,
      );
  }
}

export function dropStatements(engine: Engine, tables: readonly string[] = REFERENCE_TABLES): string[] {
  switch (engine) {
    case 'sqlite':
      return tables.flatMap((t) => ['insert', 'update', 'delete'].map((e) => `DROP TRIGGER IF EXISTS "${t}_refchg_${e}"`));
    case 'postgres':
      return [...tables.map((t) => `DROP TRIGGER IF EXISTS "${t}_refchg" ON "${t}"`), `DROP FUNCTION IF EXISTS ${PG_FUNCTION}()`];
    case 'mssql':
      return tables.map((t) => `DROP TRIGGER IF EXISTS [${t}_refchg]`);
  }
}

export async function up(knex: Knex): Promise<void> {
  for (const s of steps) await s.build(knex);
  await knex(COUNTER_TABLE).insert({ id: 1, n: 0 });
  for (const sql of createStatements(engineOf(knex))) await knex.raw(sql);
}

export async function down(knex: Knex): Promise<void> {
  for (const sql of dropStatements(engineOf(knex))) await knex.raw(sql);
  await knex.schema.dropTableIfExists(COUNTER_TABLE);
}
