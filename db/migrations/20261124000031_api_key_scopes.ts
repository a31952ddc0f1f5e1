/**
 * Scoped API keys (docs/decisions/0031-integrators-toolkit-scoped-keys-declared-statuses-typed-client.md): `apikey.scopes` holds the key's
 * scopes as a space-separated list (`read write lock`), stored next to the hashed key. NULL means
 * an unscoped key: everything the spec grants, employee PII included (the spec's behaviour).
 *
 * Columns added to an existing table: `steps` is empty; `alterations` are compiled into the SQL
 * Server DDL snapshot (test/storage/mssql-compile.test.ts) after the tables.
 */
import type { Knex } from 'knex';
import type { AlterStep, TableStep } from './support/schema';

export const steps: TableStep[] = [];

export const alterations: AlterStep[] = [
  {
    table: 'apikey',
    build: (knex) =>
      knex.schema.alterTable('apikey', (t) => {
        t.string('scopes', 200).nullable();
      }),
  },
];

export async function up(knex: Knex): Promise<void> {
  for (const a of alterations) await a.build(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('apikey', (t) => {
    t.dropColumn('scopes');
  });
}
