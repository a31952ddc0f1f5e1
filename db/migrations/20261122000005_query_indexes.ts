/**
 * Covering indexes for deep pages of the read engine (docs/decisions/0015-query-and-match.md).
 * A page past the first reads its keys with OFFSET over (ordering columns, key, filter columns)
 * only, then joins back for the page's rows; these indexes let the database answer that key
 * scan from the index alone for the documented hot shapes: parts by code filtered on cost,
 * purchase orders by number filtered on total.
 *
 * No tables: `steps` is empty (the SQL Server DDL snapshot covers tables).
 */
import type { Knex } from 'knex';
import type { TableStep } from './support/schema';

export const steps: TableStep[] = [];

export const INDEXES: ReadonlyArray<{ table: string; name: string; columns: string[] }> = [
  { table: 'tkfprt', name: 'tkfprt_prtcde_key_prtcst_idx', columns: ['prtcde', '_idnum', 'prtcst'] },
  { table: 'pchord', name: 'pchord_ordnum_key_ordttl_idx', columns: ['ordnum', '_idnum', 'ordttl'] },
];

export async function up(knex: Knex): Promise<void> {
  for (const ix of INDEXES) {
    await knex.schema.alterTable(ix.table, (t) => {
      t.index(ix.columns, ix.name);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const ix of [...INDEXES].reverse()) {
    await knex.schema.alterTable(ix.table, (t) => {
      t.dropIndex(ix.columns, ix.name);
    });
  }
}
