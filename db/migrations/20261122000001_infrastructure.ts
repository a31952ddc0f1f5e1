/**
 * Infrastructure tables of the integration service itself (not entities of the books):
 *   apikey  API keys (stored as SHA-256 of the key), role and on/off state
 *   idmkey  idempotency records of writes, scoped to the API key
 *   mntlck  the maintenance lock (at most one row, id = 1)
 *   numseq  named counters for allocating reference and record numbers
 */
import type { Knex } from 'knex';
import { applySteps, dropSteps, utcNow, type TableStep } from './support/schema';

export const steps: TableStep[] = [
  {
    table: 'apikey',
    build: (knex) =>
      knex.schema.createTable('apikey', (t) => {
        t.uuid('id').notNullable().primary('apikey_pk');
        t.string('key_hash', 64).notNullable();
        t.string('name', 100).notNullable();
        t.string('role', 20).notNullable().defaultTo('integration').checkIn(['integration', 'admin'], 'apikey_role_ck');
        t.string('state', 20).notNullable().defaultTo('active').checkIn(['active', 'disabled', 'revoked'], 'apikey_state_ck');
        t.string('reason', 500).nullable();
        t.datetime('created_at').notNullable().defaultTo(utcNow(knex));
        t.datetime('last_used_at').nullable();
        t.unique(['key_hash'], { indexName: 'apikey_key_hash_uq', useConstraint: true });
      }),
  },
  {
    table: 'idmkey',
    build: (knex) =>
      knex.schema.createTable('idmkey', (t) => {
        t.uuid('id').notNullable().primary('idmkey_pk').defaultTo(knex.fn.uuid());
        t.uuid('api_key_id').notNullable();
        t.string('idem_key', 128).notNullable();
        t.string('fingerprint', 64).notNullable();
        t.string('state', 20).notNullable().checkIn(['in_flight', 'completed', 'unknown'], 'idmkey_state_ck');
        t.integer('status_code').nullable();
        t.text('response_headers').nullable();
        t.text('response_body').nullable();
        t.datetime('created_at').notNullable().defaultTo(utcNow(knex));
        t.datetime('updated_at').notNullable().defaultTo(utcNow(knex));
        t.datetime('expires_at').notNullable();
        t.datetime('locked_until').nullable();
        t.unique(['api_key_id', 'idem_key'], { indexName: 'idmkey_key_uq', useConstraint: true });
        t.index(['expires_at'], 'idmkey_expires_at_idx');
        t.foreign('api_key_id', 'idmkey_api_key_fk').references('id').inTable('apikey').onDelete('CASCADE');
      }),
  },
  {
    table: 'mntlck',
    build: (knex) =>
      knex.schema.createTable('mntlck', (t) => {
        t.integer('id').notNullable().primary('mntlck_pk').checkBetween([1, 1], 'mntlck_single_ck');
        t.string('user_name', 64).notNullable();
        t.uuid('api_key_id').nullable();
        t.datetime('locked_at').notNullable().defaultTo(utcNow(knex));
      }),
  },
  {
    table: 'numseq',
    build: (knex) =>
      knex.schema.createTable('numseq', (t) => {
        t.string('name', 64).notNullable().primary('numseq_pk');
        t.integer('next_value').notNullable().defaultTo(1);
        t.datetime('upddte').notNullable().defaultTo(utcNow(knex));
      }),
  },
];

export async function up(knex: Knex): Promise<void> {
  await applySteps(knex, steps);
}

export async function down(knex: Knex): Promise<void> {
  await dropSteps(knex, steps);
}
