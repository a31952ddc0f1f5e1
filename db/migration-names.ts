/**
 * The names of db/migrations in the order they apply, without their code: what a start (and
 * /readyz) needs to tell whether anything is pending. The server loads db/migrate.ts (and with it
 * every migration module) only when something is (dynamic import, src/server.ts), so the
 * migrations stay out of the import graph of an ordinary start.
 *
 * Keep in step with MIGRATIONS in db/migrate.ts (append the same name to both);
 * test/architecture/startup-imports.test.ts fails when they differ.
 */
export const MIGRATION_NAMES: readonly string[] = [
  '20261122000001_infrastructure',
  '20261122000002_ledger_ap_jobcost_core',
  '20261122000003_entities',
  '20261122000004_upddte_triggers',
  '20261122000005_query_indexes',
  '20261123000001_inventory_allocation_posting',
  '20261124000010_webhooks',
  '20261124000031_api_key_scopes',
  '20261124000041_reference_change_counter',
  '20261124000051_instance_claims',
  '20261125000001_data_change_counter',
  '20261126000001_reference_counter_vendors_jobs',
  '20261126000002_reference_counter_cost_codes_phases',
  '20261127000028_event_feed',
  '20261127000201_lock_acknowledgements',
  '20261127000240_event_line_indexes',
  '20261127000261_sealed_webhook_secrets',
  '20261127000262_audit_log',
  '20261127000428_delivery_window_attempts',
  '20261127000466_write_stamps',
];
