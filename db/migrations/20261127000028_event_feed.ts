/**
 * The pull feed of change events (issue 28; docs/decisions/0280-the-event-feed.md):
 *   evtfed  feed subscriptions (POST /event-feeds): event types that detection must include,
 *           managed like webhook endpoints; paused when unread for 30 days or when the owner
 *           key is switched off.
 *   evtlog  the event log read by POST /events/query: one row per detected event of a type some
 *           active feed subscribes to, the exact document a webhook carries (`document`, the
 *           record unfiltered: who reads it is decided per reading key), kept 30 days.
 *   evtctr  one row: `seq`, the last sequence number handed out (the log's high-water mark, which
 *           long polling watches), and `purged_through`, the last one deleted by retention. A
 *           detection transaction takes its sequence numbers by UPDATEing this row, so they are
 *           handed out in commit order: a reader that saw `seq` = N has seen every event <= N.
 * Service tables: lower-case English column names, no recnum, no upddte trigger.
 */
import type { Knex } from 'knex';
import { applySteps, dropSteps, utcNow, type AlterStep, type TableStep } from './support/schema';

export const FEED_COUNTER_TABLE = 'evtctr';

export const steps: TableStep[] = [
  {
    table: 'evtfed',
    build: (knex) =>
      knex.schema.createTable('evtfed', (t) => {
        t.uuid('id').notNullable().primary('evtfed_pk');
        t.string('description', 500).nullable();
        /** JSON array of event types. */
        t.text('event_types').notNullable();
        /** active | paused | deleted */
        t.string('state', 20).notNullable();
        t.string('state_reason', 200).nullable();
        t.uuid('owner_key_id').notNullable();
        /** Last POST /events/query that could return this feed's types (null: never read). */
        t.datetime('last_read_at').nullable();
        t.datetime('created_at').notNullable().defaultTo(utcNow(knex));
        t.datetime('updated_at').notNullable().defaultTo(utcNow(knex));
        t.index(['state'], 'evtfed_state_idx');
      }),
  },
  {
    table: 'evtlog',
    build: (knex) =>
      knex.schema.createTable('evtlog', (t) => {
        /** Position in the feed: handed out from evtctr in commit order (never reused; gaps allowed). */
        t.bigInteger('seq').notNullable().primary('evtlog_pk');
        t.string('event_id', 60).notNullable();
        t.string('event_type', 60).notNullable();
        t.string('entity', 40).notNullable();
        t.string('source', 30).notNullable();
        t.string('changed_by', 100).notNullable();
        t.datetime('changed_at').notNullable();
        /** When the event was made (detected): the document's `timestamp`. */
        t.datetime('detected_at').notNullable();
        /** The event document as a webhook carries it ({type, timestamp, data}), record unfiltered. */
        t.text('document').notNullable();
        // One row per event id: a window detected twice (a lease taken over mid-cycle) adds nothing.
        t.unique(['event_id'], { indexName: 'evtlog_event_uq', useConstraint: true });
        t.index(['detected_at'], 'evtlog_detected_idx');
      }),
  },
  {
    table: FEED_COUNTER_TABLE,
    build: (knex) =>
      knex.schema.createTable(FEED_COUNTER_TABLE, (t) => {
        t.integer('id').notNullable().primary(`${FEED_COUNTER_TABLE}_pk`);
        t.bigInteger('seq').notNullable().defaultTo(0);
        t.bigInteger('purged_through').notNullable().defaultTo(0);
      }),
  },
];

export const alterations: AlterStep[] = [];

export async function up(knex: Knex): Promise<void> {
  await applySteps(knex, steps);
  await knex(FEED_COUNTER_TABLE).insert({ id: 0, seq: 0, purged_through: 0 });
}

export async function down(knex: Knex): Promise<void> {
  await dropSteps(knex, steps);
}
