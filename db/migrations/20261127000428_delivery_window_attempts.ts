/**
 * A resend opens a whole new retry window (docs/decisions/0428-a-resend-restarts-the-retry-schedule.md):
 * the schedule counts the attempts made since the window opened, while `attempts` keeps counting
 * every attempt (the delivery log publishes it, and `whkatt` numbers attempts per delivery).
 * `attempts_at_window_start` is the value of `attempts` when the current window opened: 0 at
 * creation, `attempts` at each resend.
 *
 * Rows resent before this migration: the attempts made before their window started (attempts
 * recorded before `window_start`), so a delivery resent but not yet retried gets its full window.
 */
import type { Knex } from 'knex';
import type { AlterStep, TableStep } from './support/schema';

export const steps: TableStep[] = [];

export const alterations: AlterStep[] = [
  {
    table: 'whkdlv',
    build: (knex) =>
      knex.schema.alterTable('whkdlv', (t) => {
        t.integer('attempts_at_window_start').notNullable().defaultTo(0);
      }),
  },
];

/** Sets the column of the rows whose window is not their creation (resent ones). */
export function backfill(knex: Knex): Knex.QueryBuilder {
  const before = knex('whkatt as a')
    .count('*')
    .where('a.delivery_id', knex.ref('whkdlv.id'))
    .andWhere('a.attempted_at', '<', knex.ref('whkdlv.window_start'));
  return knex('whkdlv')
    .where('window_start', '>', knex.ref('created_at'))
    .update({ attempts_at_window_start: before });
}

export async function up(knex: Knex): Promise<void> {
  for (const a of alterations) await a.build(knex);
  await backfill(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('whkdlv', (t) => {
    t.dropColumn('attempts_at_window_start');
  });
}
