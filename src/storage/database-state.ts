import type { Knex } from 'knex';
import { CATALOG } from '../../generated/catalog';

/**
 * What a start (src/boot.ts) and readiness (/readyz) ask of the database before it serves: is it
 * reachable, are this build's migrations applied, does it hold a company yet. The one home of
 * these questions; the migrations and the demo seed themselves are loaded only when they have
 * something to do (start-up time and resident memory: test/architecture/startup-imports.test.ts).
 */

/**
 * Of `names` (this build's migrations, db/migration-names.ts: handed in by boot.ts and services.ts),
 * those the database has not applied, in order; null when it was never migrated (no migration table).
 */
export async function pendingMigrations(knex: Knex, names: readonly string[]): Promise<string[] | null> {
  if (!(await knex.schema.hasTable('knex_migrations'))) return null;
  const applied = new Set((await knex('knex_migrations').select('name')).map((r: { name: string }) => r.name));
  return names.filter((name) => !applied.has(name));
}

/**
 * True when the database holds no company yet (no ledger account): the demo company is seeded
 * only then (db/seed/index.ts), and a start asks this without loading the seed.
 */
export async function hasNoCompany(knex: Knex): Promise<boolean> {
  const accounts = CATALOG['ledger-accounts']?.table ?? 'lgract';
  const row = await knex(accounts).select(knex.raw('1 as one')).first();
  return row === undefined;
}

/** The readiness questions through the service's pool (src/services.ts; /readyz asks them). */
export class DatabaseState {
  constructor(
    private readonly knex: Knex,
    private readonly migrationNames: readonly string[],
  ) {}

  /** One round trip; rejects when the database cannot be reached. */
  async reachable(): Promise<void> {
    await this.knex.raw('select 1 as ok');
  }

  pendingMigrations(): Promise<string[] | null> {
    return pendingMigrations(this.knex, this.migrationNames);
  }
}
