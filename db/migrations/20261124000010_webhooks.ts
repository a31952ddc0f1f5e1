/**
 * Change events (docs/decisions/0027-change-events.md): webhook endpoints, the audit log of their
 * changes, the detection cursors and lease, and the outbox of deliveries with one row per attempt.
 * Service tables (not the accounting system's): lower-case English column names, no recnum.
 *
 * Also an index on `upddte` of the five document tables detection reads, so a detection cycle
 * costs what changed, not the table size.
 */
import type { Knex } from 'knex';
import { utcNow, type AlterStep, type TableStep } from './support/schema';

/** Document tables events are detected on (payroll is never sent). */
export const EVENT_TABLES = ['acpinv', 'pchord', 'lgrtrn', 'srvinv', 'invalc'] as const;

export const steps: TableStep[] = [
  {
    table: 'whkept',
    build: (knex) =>
      knex.schema.createTable('whkept', (t) => {
        t.uuid('id').notNullable().primary('whkept_pk');
        t.string('url', 2048).notNullable();
        t.string('description', 500).nullable();
        /** JSON array of event types. */
        t.text('event_types').notNullable();
        /** active | paused | disabled (410 Gone) | deleted */
        t.string('state', 20).notNullable();
        t.string('state_reason', 200).nullable();
        t.uuid('owner_key_id').notNullable();
        t.string('secret', 100).notNullable();
        t.string('previous_secret', 100).nullable();
        t.datetime('previous_secret_until').nullable();
        t.datetime('created_at').notNullable().defaultTo(utcNow(knex));
        t.datetime('updated_at').notNullable().defaultTo(utcNow(knex));
        t.index(['state'], 'whkept_state_idx');
      }),
  },
  {
    table: 'whkaud',
    build: (knex) =>
      knex.schema.createTable('whkaud', (t) => {
        // Ascending: the log's order even within one clock tick.
        t.increments('seq');
        t.uuid('endpoint_id').notNullable();
        t.uuid('key_id').nullable();
        t.string('action', 40).notNullable();
        t.text('detail').nullable();
        t.datetime('at').notNullable().defaultTo(utcNow(knex));
        t.index(['endpoint_id'], 'whkaud_endpoint_idx');
      }),
  },
  {
    table: 'whkcur',
    build: (knex) =>
      knex.schema.createTable('whkcur', (t) => {
        /** Document kind (payable_invoice, ...): changes with upddte after `cursor` are not seen yet. */
        t.string('kind', 40).notNullable().primary('whkcur_pk');
        t.datetime('cursor').notNullable();
        t.datetime('updated_at').notNullable().defaultTo(utcNow(knex));
      }),
  },
  {
    table: 'whklse',
    build: (knex) =>
      knex.schema.createTable('whklse', (t) => {
        t.string('name', 40).notNullable().primary('whklse_pk');
        t.string('holder', 100).notNullable();
        t.datetime('expires_at').notNullable();
      }),
  },
  {
    table: 'whkdlv',
    build: (knex) =>
      knex.schema.createTable('whkdlv', (t) => {
        t.uuid('id').notNullable().primary('whkdlv_pk');
        t.uuid('endpoint_id').notNullable();
        t.string('event_id', 60).notNullable();
        t.string('event_type', 60).notNullable();
        t.text('payload').notNullable();
        /** pending | succeeded | failed */
        t.string('status', 20).notNullable();
        t.integer('attempts').notNullable().defaultTo(0);
        t.datetime('created_at').notNullable();
        /** Start of the current retry window (creation, or the last resend). */
        t.datetime('window_start').notNullable();
        t.datetime('next_attempt_at').nullable();
        t.datetime('last_attempt_at').nullable();
        t.integer('last_status_code').nullable();
        t.string('last_error', 500).nullable();
        t.string('claimed_by', 100).nullable();
        t.datetime('claimed_until').nullable();
        t.unique(['endpoint_id', 'event_id'], { indexName: 'whkdlv_endpoint_event_uq', useConstraint: true });
        t.index(['status', 'next_attempt_at'], 'whkdlv_due_idx');
        t.index(['created_at'], 'whkdlv_created_idx');
      }),
  },
  {
    table: 'whkatt',
    build: (knex) =>
      knex.schema.createTable('whkatt', (t) => {
        t.uuid('id').notNullable().primary('whkatt_pk');
        t.uuid('delivery_id').notNullable();
        t.integer('attempt').notNullable();
        t.datetime('attempted_at').notNullable();
        t.integer('status_code').nullable();
        t.string('outcome', 20).notNullable();
        t.string('error', 500).nullable();
        t.integer('duration_ms').notNullable();
        // One row per attempt: a second process can never record (or send) the same attempt.
        t.unique(['delivery_id', 'attempt'], { indexName: 'whkatt_delivery_attempt_uq', useConstraint: true });
      }),
  },
];

export const alterations: AlterStep[] = EVENT_TABLES.map((table) => ({
  table,
  build: (knex: Knex) =>
    knex.schema.alterTable(table, (t) => {
      t.index(['upddte'], `${table}_upddte_idx`);
    }),
}));

export async function up(knex: Knex): Promise<void> {
  for (const s of steps) await s.build(knex);
  for (const a of alterations) await a.build(knex);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of EVENT_TABLES) {
    await knex.schema.alterTable(table, (t) => {
      t.dropIndex(['upddte'], `${table}_upddte_idx`);
    });
  }
  for (const s of [...steps].reverse()) await knex.schema.dropTableIfExists(s.table);
}
