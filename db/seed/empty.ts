import type { Knex } from 'knex';
import { CATALOG } from '../../generated/catalog';

/**
 * True when the database holds no company yet (no ledger account): the demo company is seeded
 * only then. Its own module so that a start on an existing database asks this without loading the
 * seed (db/seed/index.ts, thousands of lines: imported dynamically by src/server.ts).
 */
export async function hasNoCompany(knex: Knex): Promise<boolean> {
  const accounts = CATALOG['ledger-accounts']?.table ?? 'lgract';
  const row = await knex(accounts).select(knex.raw('1 as one')).first();
  return row === undefined;
}
