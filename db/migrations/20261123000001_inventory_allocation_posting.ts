/**
 * What POST /inventory-allocations needs beyond the entity tables (
 * docs/decisions/0017-inventory-allocations-and-stock-movements.md): the integrator's allocation number (`invalc.alcnum`, looked up to answer a re-sent
 * allocation as a replay or 409 DOCUMENT_NUMBER_CONFLICT; not unique in the schema because rows
 * entered in the accounting system have none and SQL Server's unique index admits one NULL only:
 * writes serialise on the number with a named lock), and the ledger-setup account that losses and
 * revaluations post against (`lgrstp.invadj`).
 *
 * Columns added to existing tables: `steps` is empty; `alterations` are compiled into the SQL
 * Server DDL snapshot (test/storage/mssql-compile.test.ts) after the tables.
 */
import type { Knex } from 'knex';
import type { AlterStep, TableStep } from './support/schema';

export const steps: TableStep[] = [];

export const alterations: AlterStep[] = [
  {
    table: 'invalc',
    build: (knex) =>
      knex.schema.alterTable('invalc', (t) => {
        t.string('alcnum', 20).nullable();
        t.index(['alcnum'], 'invalc_alcnum_idx');
      }),
  },
  {
    table: 'lgrstp',
    build: (knex) =>
      knex.schema.alterTable('lgrstp', (t) => {
        t.integer('invadj').nullable();
      }),
  },
];

export async function up(knex: Knex): Promise<void> {
  for (const a of alterations) await a.build(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('lgrstp', (t) => {
    t.dropColumn('invadj');
  });
  await knex.schema.alterTable('invalc', (t) => {
    t.dropIndex(['alcnum'], 'invalc_alcnum_idx');
    t.dropColumn('alcnum');
  });
}
