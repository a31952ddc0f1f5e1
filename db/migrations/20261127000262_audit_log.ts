/**
 * The audit log of administrative actions (docs/decisions/0262-one-audit-log.md): API keys created,
 * disabled, enabled, revoked (keys CLI, and the key a first start creates); lock and un-lock;
 * webhook endpoint changes. Read through POST /audit-log/query (admin keys only, an entity of the
 * catalog). A service table: lower-case English column names, no recnum; `seq` is the record number.
 *
 * Append-only in the database itself (triggers on every engine): an UPDATE is refused, and a DELETE
 * of an entry younger than 399 days is refused (the retention is at least 400 days, AUDIT_RETENTION_DAYS;
 * one day of margin for a database clock behind the service's). The data change counter counts the
 * table (its totalCount is reused only while nothing changed, src/engines/query/count-cache.ts).
 *
 * The webhook subscription change log (`whkaud`, spec Events rule 9) is folded in here: its rows are
 * copied as `webhook-endpoint.<action>` entries and the table is dropped (decision 0263).
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Engine } from '../../src/storage/database';
import { engineOf } from '../../src/storage/dialect';
import { createStatements as dataCounterStatements } from './20261125000001_data_change_counter';
import { steps as webhookSteps } from './20261124000010_webhooks';
import { applySteps, dropSteps, type AlterStep, type TableStep } from './support/schema';

export const AUDIT_TABLE = 'audlog';

/** Entries younger than this cannot be deleted, whatever deletes them. */
export const AUDIT_KEEP_AT_LEAST_DAYS = 399;

export const steps: TableStep[] = [
  {
    table: AUDIT_TABLE,
    build: (knex) =>
      knex.schema.createTable(AUDIT_TABLE, (t) => {
        // Ascending in the order entries are written: the record number.
        t.increments('seq');
        t.uuid('id').notNullable();
        t.datetime('occurred_at').notNullable();
        /** api-key | operator (the keys CLI, the operating-system user) | service (the service itself) */
        t.string('actor_type', 20).notNullable();
        t.string('actor', 100).notNullable();
        t.uuid('actor_key_id').nullable();
        t.string('action', 60).notNullable();
        t.string('target_type', 40).notNullable();
        t.string('target', 100).nullable();
        /** succeeded | refused | failed */
        t.string('outcome', 20).notNullable();
        t.string('outcome_code', 60).nullable();
        t.string('correlation_id', 64).nullable();
        /** JSON object: what else the action was given (never a secret). */
        t.text('detail').nullable();
        t.unique(['id'], { indexName: 'audlog_id_uq', useConstraint: true });
        t.index(['occurred_at'], 'audlog_occurred_idx');
        t.index(['target_type', 'target'], 'audlog_target_idx');
      }),
  },
];

export const alterations: AlterStep[] = [];

/** The triggers that keep the log append-only, one statement (batch) each. */
export function appendOnlyStatements(engine: Engine): string[] {
  const changed = 'audlog is append-only: an entry is never changed';
  const young = `audlog entries are kept at least ${AUDIT_KEEP_AT_LEAST_DAYS} days`;
  switch (engine) {
    case 'sqlite':
      return [
        `CREATE TRIGGER IF NOT EXISTS "audlog_no_update" BEFORE UPDATE ON "audlog" BEGIN SELECT RAISE(ABORT, '${changed}'); END`,
        `CREATE TRIGGER IF NOT EXISTS "audlog_keep" BEFORE DELETE ON "audlog" WHEN old."occurred_at" > strftime('%Y-%m-%d %H:%M:%f', 'now', '-${AUDIT_KEEP_AT_LEAST_DAYS} days') BEGIN SELECT RAISE(ABORT, '${young}'); END`,
      ];
    case 'postgres':
      return [
        `CREATE OR REPLACE FUNCTION audlog_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ` +
          `IF TG_OP = 'UPDATE' THEN RAISE EXCEPTION '${changed}'; END IF; ` +
          `IF OLD."occurred_at" > now() - interval '${AUDIT_KEEP_AT_LEAST_DAYS} days' THEN RAISE EXCEPTION '${young}'; END IF; ` +
          `RETURN OLD; END $$`,
        `CREATE TRIGGER "audlog_append_only" BEFORE UPDATE OR DELETE ON "audlog" FOR EACH ROW EXECUTE FUNCTION audlog_append_only()`,
      ];
    case 'mssql':
      return [
        `CREATE OR ALTER TRIGGER [audlog_append_only] ON [audlog] AFTER UPDATE, DELETE AS BEGIN SET NOCOUNT ON; ` +
          `IF EXISTS (SELECT 1 FROM inserted) THROW 51000, '${changed}', 1; ` +
          `IF EXISTS (SELECT 1 FROM deleted WHERE [occurred_at] > DATEADD(day, -${AUDIT_KEEP_AT_LEAST_DAYS}, SYSUTCDATETIME())) THROW 51001, '${young}', 1; END`,
      ];
  }
}

/** `whkaud` rows (the webhook change log until now) as audit entries. */
async function foldWebhookChangeLog(knex: Knex): Promise<void> {
  if (!(await knex.schema.hasTable('whkaud'))) return;
  const rows = await knex('whkaud as w').leftJoin('apikey as k', 'k.id', 'w.key_id').orderBy('w.seq').select('w.endpoint_id', 'w.key_id', 'w.action', 'w.detail', 'w.at', 'k.name');
  for (const r of rows as Array<{ endpoint_id: string; key_id: string | null; action: string; detail: string | null; at: unknown; name: string | null }>) {
    await knex(AUDIT_TABLE).insert({
      id: randomUUID(),
      // As the driver read it from a column of the same type.
      occurred_at: r.at,
      actor_type: r.key_id ? 'api-key' : 'service',
      actor: r.key_id ? (r.name ?? r.key_id) : 'service',
      actor_key_id: r.key_id,
      action: `webhook-endpoint.${r.action}`,
      target_type: 'webhook-endpoint',
      target: String(r.endpoint_id).toLowerCase(),
      outcome: 'succeeded',
      outcome_code: null,
      correlation_id: null,
      detail: r.detail,
    });
  }
  await knex.schema.dropTable('whkaud');
}

export async function up(knex: Knex): Promise<void> {
  const engine = engineOf(knex);
  await applySteps(knex, steps);
  for (const sql of appendOnlyStatements(engine)) await knex.raw(sql);
  for (const sql of dataCounterStatements(engine, [AUDIT_TABLE])) await knex.raw(sql);
  await foldWebhookChangeLog(knex);
}

export async function down(knex: Knex): Promise<void> {
  // The webhook change log comes back (empty: what was folded in stays with the dropped table).
  await applySteps(knex, webhookSteps.filter((s) => s.table === 'whkaud'));
  await dropSteps(knex, steps);
  if (engineOf(knex) === 'postgres') await knex.raw('DROP FUNCTION IF EXISTS audlog_append_only()');
}
