/**
 * Claims with an owner (docs/decisions/0029-several-processes-and-instances-on-one-database.md):
 *   insthb  one row per server process name (INSTANCE_ID, a worker's `/w<n>` appended): the boot
 *           running under that name now and when it last said it was alive (every HEARTBEAT_MS)
 *   idmkey  gains owner_instance / owner_boot: who holds an in-flight claim. A claim whose owner is
 *           not that instance's current boot (restarted) or whose heartbeat is stale is taken over
 *           without waiting for the lease.
 */
import type { Knex } from 'knex';
import { applySteps, dropSteps, utcNow, type AlterStep, type TableStep } from './support/schema';

export const steps: TableStep[] = [
  {
    table: 'insthb',
    build: (knex) =>
      knex.schema.createTable('insthb', (t) => {
        t.string('instance_id', 100).notNullable().primary('insthb_pk');
        t.uuid('boot_id').notNullable();
        t.datetime('started_at').notNullable().defaultTo(utcNow(knex));
        t.datetime('last_seen').notNullable().defaultTo(utcNow(knex));
        // The owner's HEARTBEAT_MS: observers call it dead after 3 missed beats of ITS interval.
        t.integer('beat_ms').notNullable().defaultTo(1000);
      }),
  },
];

export const alterations: AlterStep[] = [
  {
    table: 'idmkey',
    build: (knex) =>
      knex.schema.alterTable('idmkey', (t) => {
        t.string('owner_instance', 100).nullable();
        t.uuid('owner_boot').nullable();
        t.index(['owner_instance', 'owner_boot'], 'idmkey_owner_idx');
      }),
  },
];

export async function up(knex: Knex): Promise<void> {
  await applySteps(knex, steps);
  for (const a of alterations) await a.build(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idmkey', (t) => {
    t.dropIndex(['owner_instance', 'owner_boot'], 'idmkey_owner_idx');
    t.dropColumn('owner_boot');
    t.dropColumn('owner_instance');
  });
  await dropSteps(knex, steps);
}
