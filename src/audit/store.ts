import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Engine } from '../storage/database';
import { fromDbTime, toDbTime } from '../storage/db-time';
import { AUDIT_ACTIONS, type AuditActor, type AuditEntry } from './actions';

/**
 * SQL of the audit log (table `audlog`, migration 20261127000262). Only INSERT and the retention
 * DELETE: the database refuses an UPDATE, and a DELETE of an entry younger than 399 days.
 * Reads go through the query engine (the catalog entity `audit-log`).
 */
const TABLE = 'audlog';

export interface AuditRow {
  id: string;
  occurred_at: Date | string;
  actor_type: string;
  actor: string;
  actor_key_id: string | null;
  action: string;
  target_type: string;
  target: string | null;
  outcome: string;
  outcome_code: string | null;
  correlation_id: string | null;
  detail: string | null;
}

/** Text cut to the column (a key name is at most 100 characters; an endpoint id or a userName fits). */
const cut = (text: string | null | undefined, max: number): string | null => (text == null ? null : text.slice(0, max));

export function auditRow(engine: Engine, actor: AuditActor, entry: AuditEntry, at: Date): AuditRow {
  return {
    id: randomUUID(),
    occurred_at: toDbTime(engine, at),
    actor_type: actor.type,
    actor: cut(actor.name, 100) ?? '',
    actor_key_id: actor.keyId,
    action: entry.action,
    target_type: AUDIT_ACTIONS[entry.action],
    target: cut(entry.target, 100),
    outcome: entry.outcome,
    outcome_code: cut(entry.outcomeCode, 60),
    correlation_id: cut(actor.correlationId, 64),
    detail: entry.detail && Object.keys(entry.detail).length > 0 ? JSON.stringify(entry.detail) : null,
  };
}

export async function insertAuditRows(db: Knex | Knex.Transaction, rows: readonly AuditRow[]): Promise<void> {
  if (rows.length > 0) await db(TABLE).insert([...rows]);
}

/** Deletes the entries that happened before `before`; how many. */
export async function purgeAuditRows(db: Knex, engine: Engine, before: Date): Promise<number> {
  return Number(await db(TABLE).where('occurred_at', '<', toDbTime(engine, before)).delete());
}

/** The entries about one target, oldest first (tests and the events wing's own checks). */
export async function auditEntriesFor(db: Knex, targetType: string, target: string): Promise<Array<{ action: string; actorKeyId: string | null; actor: string; detail: Record<string, unknown>; at: Date; outcome: string }>> {
  const rows = await db(TABLE).where({ target_type: targetType, target }).orderBy('seq');
  return rows.map((r: any) => ({
    action: String(r.action),
    actorKeyId: r.actor_key_id ?? null,
    actor: String(r.actor),
    detail: r.detail ? JSON.parse(r.detail) : {},
    at: fromDbTime(r.occurred_at)!,
    outcome: String(r.outcome),
  }));
}
