/**
 * The maintenance lock takes effect before it answers (docs/decisions/0200-lock-takes-effect-before-it-answers.md):
 *   mntlck  gains lock_id: one id per lock taken (a lock, its release and a new lock by the same
 *           holder are three states, never confused)
 *   insthb  gains lock_state: the lock state this server process has applied, written once the
 *           process has applied it (`unlocked`, or the lock_id of the lock it has closed its pool
 *           for); null until the process has read the lock after its start. Lock and un-lock answer
 *           once every live process shows the new state here.
 */
import type { Knex } from 'knex';
import type { AlterStep, TableStep } from './support/schema';

export const steps: TableStep[] = [];

export const alterations: AlterStep[] = [
  {
    table: 'mntlck',
    build: (knex) =>
      knex.schema.alterTable('mntlck', (t) => {
        t.string('lock_id', 36).nullable();
      }),
  },
  {
    table: 'insthb',
    build: (knex) =>
      knex.schema.alterTable('insthb', (t) => {
        t.string('lock_state', 36).nullable();
      }),
  },
];

export async function up(knex: Knex): Promise<void> {
  for (const a of alterations) await a.build(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('insthb', (t) => t.dropColumn('lock_state'));
  await knex.schema.alterTable('mntlck', (t) => t.dropColumn('lock_id'));
}
