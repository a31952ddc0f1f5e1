/**
 * Runs the migrations of db/migrations. The modules are imported explicitly (no directory scan)
 * so the same code works under tsx (TypeScript sources) and from the compiled dist/ JavaScript.
 * Add a new migration by importing it here and appending it to MIGRATIONS and to MIGRATION_NAMES
 * (db/migration-names.ts); never reorder or rename. The server imports this module only when a
 * migration is pending (src/server.ts).
 */
import type { Knex } from 'knex';
import * as m001 from './migrations/20261122000001_infrastructure';
import * as m002 from './migrations/20261122000002_ledger_ap_jobcost_core';
import * as m003 from './migrations/20261122000003_entities';
import * as m004 from './migrations/20261122000004_upddte_triggers';
import * as m005 from './migrations/20261122000005_query_indexes';
import * as m006 from './migrations/20261123000001_inventory_allocation_posting';
import * as m007 from './migrations/20261124000010_webhooks';
import * as m008 from './migrations/20261124000031_api_key_scopes';
import * as m009 from './migrations/20261124000041_reference_change_counter';
import * as m010 from './migrations/20261124000051_instance_claims';
import * as m011 from './migrations/20261125000001_data_change_counter';
import * as m012 from './migrations/20261126000001_reference_counter_vendors_jobs';
import * as m013 from './migrations/20261126000002_reference_counter_cost_codes_phases';
import * as m014 from './migrations/20261127000028_event_feed';
import * as m015 from './migrations/20261127000201_lock_acknowledgements';
import * as m016 from './migrations/20261127000240_event_line_indexes';
import * as m017 from './migrations/20261127000261_sealed_webhook_secrets';
import * as m018 from './migrations/20261127000262_audit_log';
import * as m019 from './migrations/20261127000428_delivery_window_attempts';
import * as m020 from './migrations/20261127000466_write_stamps';

export interface MigrationModule {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** [name recorded in knex_migrations, module], in the order they apply. */
export const MIGRATIONS: ReadonlyArray<readonly [string, MigrationModule]> = [
  ['20261122000001_infrastructure', m001],
  ['20261122000002_ledger_ap_jobcost_core', m002],
  ['20261122000003_entities', m003],
  ['20261122000004_upddte_triggers', m004],
  ['20261122000005_query_indexes', m005],
  ['20261123000001_inventory_allocation_posting', m006],
  ['20261124000010_webhooks', m007],
  ['20261124000031_api_key_scopes', m008],
  ['20261124000041_reference_change_counter', m009],
  ['20261124000051_instance_claims', m010],
  ['20261125000001_data_change_counter', m011],
  ['20261126000001_reference_counter_vendors_jobs', m012],
  ['20261126000002_reference_counter_cost_codes_phases', m013],
  ['20261127000028_event_feed', m014],
  ['20261127000201_lock_acknowledgements', m015],
  ['20261127000240_event_line_indexes', m016],
  ['20261127000261_sealed_webhook_secrets', m017],
  ['20261127000262_audit_log', m018],
  ['20261127000428_delivery_window_attempts', m019],
  ['20261127000466_write_stamps', m020],
];

type Entry = readonly [string, MigrationModule];

class ExplicitMigrationSource implements Knex.MigrationSource<Entry> {
  async getMigrations(): Promise<Entry[]> {
    return [...MIGRATIONS];
  }
  getMigrationName(migration: Entry): string {
    return migration[0];
  }
  async getMigration(migration: Entry): Promise<Knex.Migration> {
    return { up: migration[1].up, down: migration[1].down };
  }
}

const CONFIG: Knex.MigratorConfig = { migrationSource: new ExplicitMigrationSource(), tableName: 'knex_migrations' };

/** Applies every migration not applied yet (safe to run again). */
export async function migrateLatest(knex: Knex): Promise<void> {
  await knex.migrate.latest(CONFIG);
}
