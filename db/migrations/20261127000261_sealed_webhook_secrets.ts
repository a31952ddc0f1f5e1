/**
 * Webhook signing secrets are stored encrypted (src/storage/secret-box.ts): `enc1:<key id>:<nonce,
 * ciphertext, tag in base64url>`, 102 characters for a `whsec_` secret, more than the 100 the
 * columns held. The encryption of the secrets already stored is not done here: a migration does
 * not hold SECRETS_KEY; every start encrypts what is not encrypted yet, right after the migrations
 * (src/boot.ts; docs/decisions/0261-secrets-encrypted-at-start-not-in-a-migration.md).
 *
 * SQLite does not enforce a varchar length (and knex would rebuild the table to alter it): the
 * columns are widened on PostgreSQL and SQL Server only.
 */
import type { Knex } from 'knex';
import { engineOf } from '../../src/storage/dialect';
import type { AlterStep, TableStep } from './support/schema';

export const steps: TableStep[] = [];

export const alterations: AlterStep[] = [
  {
    table: 'whkept',
    build: (knex) =>
      knex.schema.alterTable('whkept', (t) => {
        t.string('secret', 255).notNullable().alter();
        t.string('previous_secret', 255).nullable().alter();
      }),
  },
];

export async function up(knex: Knex): Promise<void> {
  if (engineOf(knex) === 'sqlite') return;
  for (const a of alterations) await a.build(knex);
}

export async function down(knex: Knex): Promise<void> {
  if (engineOf(knex) === 'sqlite') return;
  // Back to 100 characters: only possible once the secrets are decrypted again (not done here).
  await knex.schema.alterTable('whkept', (t) => {
    t.string('secret', 100).notNullable().alter();
    t.string('previous_secret', 100).nullable().alter();
  });
}
