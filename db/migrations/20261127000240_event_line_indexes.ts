/**
 * Change detection reads the lines of the subscribed document kinds too (a line re-coded in the
 * accounting system moves only the line's `upddte`; src/events/detector.ts): an index on
 * (`upddte`, `_idref`) of each of their line tables, so a detection cycle costs what changed, not
 * the size of the line tables (as 20261124000010_webhooks did for the header tables).
 *
 * No tables: `steps` is empty.
 */
import type { Knex } from 'knex';
import type { AlterStep, TableStep } from './support/schema';

/** Line tables of the document kinds events are detected on (test/events/events-detection.test.ts checks them against the catalog). */
export const EVENT_LINE_TABLES = ['apivln', 'pcorln', 'lgtnln', 'srvlin', 'invaln'] as const;

export const steps: TableStep[] = [];

const indexName = (table: string) => `${table}_upddte_idref_idx`;

export const alterations: AlterStep[] = EVENT_LINE_TABLES.map((table) => ({
  table,
  build: (knex: Knex) =>
    knex.schema.alterTable(table, (t) => {
      t.index(['upddte', '_idref'], indexName(table));
    }),
}));

export async function up(knex: Knex): Promise<void> {
  for (const a of alterations) await a.build(knex);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [...EVENT_LINE_TABLES].reverse()) {
    await knex.schema.alterTable(table, (t) => {
      t.dropIndex(['upddte', '_idref'], indexName(table));
    });
  }
}
