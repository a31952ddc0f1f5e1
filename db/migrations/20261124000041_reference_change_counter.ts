/**
 * One change counter for the reference data a posting reads (ledger setup, fiscal periods, ledger
 * accounts, transaction sources), kept by triggers: any INSERT, UPDATE or DELETE of those tables,
 * by this service, another instance, the desktop accounting system or a DBA, adds 1 in the same
 * transaction. The posting engine caches the reference rows and reads only this counter (one
 * primary-key row) in each posting transaction; a different value drops the cache
 * (src/storage/reference-cache.ts, docs/decisions/0030-start-up-memory-and-the-reference-cache.md).
 *
 * Statement-level where the engine has it (PostgreSQL, SQL Server), so a bulk UPDATE bumps once.
 */
import type { Knex } from 'knex';
import type { Engine } from '../../src/storage/database';
import { engineOf } from '../../src/storage/dialect';
import type { AlterStep, TableStep } from './support/schema';
import { counterTableStep, counterTriggers, dropCounterTriggers, type CounterSpec } from './support/change-counter';

/** The tables whose rows the reference cache holds. */
export const REFERENCE_TABLES: readonly string[] = ['lgrstp', 'fscprd', 'lgract', 'source'];

export const COUNTER_TABLE = 'refchg';

export const steps: TableStep[] = [counterTableStep(COUNTER_TABLE)];

export const alterations: AlterStep[] = [];

const SPEC: CounterSpec = {
  suffix: 'refchg',
  sqliteStatement: `UPDATE "${COUNTER_TABLE}" SET "n" = "n" + 1 WHERE "id" = 1`,
  mssqlStatement: `UPDATE [${COUNTER_TABLE}] SET [n] = [n] + 1 WHERE [id] = 1`,
  pgFunction: 'books_bump_refchg',
  pgBody: `BEGIN UPDATE "${COUNTER_TABLE}" SET "n" = "n" + 1 WHERE "id" = 1; RETURN NULL; END`,
};

/** The statements that create the counting triggers on `engine`, one statement each. */
export function createStatements(engine: Engine, tables: readonly string[] = REFERENCE_TABLES): string[] {
  return counterTriggers(SPEC, engine, tables);
}

export function dropStatements(engine: Engine, tables: readonly string[] = REFERENCE_TABLES): string[] {
  return dropCounterTriggers(SPEC, engine, tables);
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

/** A later migration that adds the counting triggers to more tables (its up and down). */
export function countChangesOf(tables: readonly string[]): { up(knex: Knex): Promise<void>; down(knex: Knex): Promise<void> } {
  return {
    async up(knex) {
      for (const sql of createStatements(engineOf(knex), tables)) await knex.raw(sql);
    },
    async down(knex) {
      for (const sql of dropStatements(engineOf(knex), tables)) await knex.raw(sql);
    },
  };
}
