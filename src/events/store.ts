import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Engine } from '../storage/database';
import { fromDbTime, toDbTime } from '../storage/db-time';
import { insertUnlessExists } from '../storage/insert-or-ignore';
import { queryDialectFor, type QueryDialect } from '../storage/dialect';
import { applyCondition, BASE, col } from '../engines/query/sql';
import { INLINE_PARAM_BUDGET } from '../storage/parameter-budget';
import type { QueryPlan } from '../engines/query/types';
import type { SecretBox } from '../storage/secret-box';
import { SERVICE_ACTOR, type AuditAction, type AuditActor, type AuditLog } from '../audit';
import { auditEntriesFor } from '../audit/store';
import { liveRow, liveRows } from './live-rows';

/**
 * SQL of the events wing (tables of db/migrations/20261124000010_webhooks.ts). Every timestamp
 * is written through toDbTime so that comparisons work on every engine; callers pass the time
 * (an injectable clock), never the database's.
 */

export type EndpointState = 'active' | 'paused' | 'disabled' | 'deleted';
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** `lastError` of the deliveries that failed because their endpoint was deleted (decision 0468). */
export const ENDPOINT_DELETED = 'endpoint deleted';

/** The detection cursor of a kind moved while a window was read from it (a first subscriber advanced it). */
export class CursorMoved extends Error {
  constructor(readonly kind: string) {
    super(`the detection cursor of ${kind} moved`);
    this.name = 'CursorMoved';
  }
}

export interface EndpointRow {
  id: string;
  url: string;
  description: string | null;
  eventTypes: string[];
  state: EndpointState;
  stateReason: string | null;
  ownerKeyId: string;
  /**
   * The signing secrets as stored: encrypted (SecretBox), never usable as they are. The delivery
   * worker asks `signingSecrets` for the plaintext; the secret is shown once, at creation or rotation.
   */
  storedSecret: string;
  storedPreviousSecret: string | null;
  previousSecretUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface DeliveryRow {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  payload: string;
  status: DeliveryStatus;
  /** Every attempt made, over all windows (the delivery log's `attempts`; `whkatt` numbers them). */
  attempts: number;
  /**
   * `attempts` when the current retry window opened (0 at creation, `attempts` at a resend): the
   * schedule counts the attempts after it (decisions/0428-a-resend-restarts-the-retry-schedule.md).
   */
  attemptsAtWindowStart: number;
  createdAt: Date;
  windowStart: Date;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
}

export interface AttemptRow {
  attempt: number;
  attemptedAt: Date;
  statusCode: number | null;
  outcome: string;
  error: string | null;
  durationMs: number;
}

function endpointOf(r: any): EndpointRow {
  return {
    id: r.id,
    url: r.url,
    description: r.description ?? null,
    eventTypes: JSON.parse(r.event_types),
    state: r.state,
    stateReason: r.state_reason ?? null,
    ownerKeyId: r.owner_key_id,
    storedSecret: r.secret,
    storedPreviousSecret: r.previous_secret ?? null,
    previousSecretUntil: fromDbTime(r.previous_secret_until),
    createdAt: fromDbTime(r.created_at)!,
    updatedAt: fromDbTime(r.updated_at)!,
  };
}

function deliveryOf(r: any): DeliveryRow {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    eventId: r.event_id,
    eventType: r.event_type,
    payload: r.payload,
    status: r.status,
    attempts: Number(r.attempts),
    attemptsAtWindowStart: Number(r.attempts_at_window_start),
    createdAt: fromDbTime(r.created_at)!,
    windowStart: fromDbTime(r.window_start)!,
    nextAttemptAt: fromDbTime(r.next_attempt_at),
    lastAttemptAt: fromDbTime(r.last_attempt_at),
    lastStatusCode: r.last_status_code === null || r.last_status_code === undefined ? null : Number(r.last_status_code),
    lastError: r.last_error ?? null,
  };
}

/**
 * The statements of a list planned by the query engine (src/events/lists.ts): its conditions over
 * its table through the engine's SQL (sql.ts), counted, and the page in the plan's order.
 */
export function listQueries(knex: Knex, qd: QueryDialect, plan: QueryPlan): { count: Knex.QueryBuilder; page: Knex.QueryBuilder } {
  const filtered = () => {
    const qb = knex({ [BASE]: plan.entity.table });
    if (plan.where) applyCondition(qb, plan.where, { qd, alias: BASE, budget: INLINE_PARAM_BUDGET });
    return qb;
  };
  const page = filtered().select(`${BASE}.*`);
  for (const t of plan.order) page.orderBy(col(BASE, t.column), t.direction);
  return { count: filtered().count({ n: '*' }), page: page.limit(plan.pageSize).offset(plan.offset) };
}

/** The changes of an endpoint the audit log records (`webhook-endpoint.<change>`, src/audit/actions.ts). */
type ChangeOf<A> = A extends `webhook-endpoint.${infer C}` ? C : never;
export type WebhookChange = ChangeOf<AuditAction>;

/**
 * What an endpoint's secrets are authenticated with: a stored value only opens on its own row.
 * Lower-case: SQL Server returns uniqueidentifier in upper case.
 */
function secretContext(endpointId: string): string {
  return `whkept:${endpointId.toLowerCase()}`;
}

export class EventStore {
  /** The query engine's SQL over these tables: timestamps compared as this store writes them (toDbTime). */
  private readonly qd: QueryDialect;

  constructor(
    readonly knex: Knex,
    readonly engine: Engine,
    /** Encrypts the signing secrets at rest (docs/decisions/0260-webhook-secrets-encrypted-at-rest.md). */
    private readonly secrets: SecretBox,
    /** Where every change of an endpoint is recorded (spec Events rule 9): the one audit log. */
    private readonly audits: AuditLog,
  ) {
    const qd = queryDialectFor(engine);
    this.qd = { ...qd, encodeValue: (kind, value, scale) => (kind === 'datetime' ? toDbTime(engine, value as Date) : qd.encodeValue(kind, value, scale)) };
  }

  t(at: Date): Date | string {
    return toDbTime(this.engine, at);
  }

  // ------------------------------------------------------------------ endpoints

  async createEndpoint(e: { url: string; description: string | null; eventTypes: string[]; ownerKeyId: string; secret: string }, at: Date): Promise<EndpointRow> {
    const id = randomUUID();
    await this.knex('whkept').insert({
      id,
      url: e.url,
      description: e.description,
      event_types: JSON.stringify(e.eventTypes),
      state: 'active',
      state_reason: null,
      owner_key_id: e.ownerKeyId,
      secret: this.secrets.seal(e.secret, secretContext(id)),
      created_at: this.t(at),
      updated_at: this.t(at),
    });
    return (await this.endpoint(id))!;
  }

  /** An endpoint that is not deleted. */
  async endpoint(id: string): Promise<EndpointRow | undefined> {
    const row = await liveRow(this.knex, 'whkept', id);
    return row ? endpointOf(row) : undefined;
  }

  async endpoints(options: { states?: EndpointState[]; limit?: number; offset?: number } = {}): Promise<{ total: number; rows: EndpointRow[] }> {
    const { total, rows } = await liveRows(this.knex, 'whkept', options);
    return { total, rows: rows.map(endpointOf) };
  }

  /**
   * `secret` is a new plaintext secret (encrypted here); `storedPreviousSecret` a value as stored
   * (the current one moves there on rotation: it opens on the same row, nothing is decrypted).
   */
  async updateEndpoint(id: string, change: Partial<{ url: string; description: string | null; eventTypes: string[]; state: EndpointState; stateReason: string | null; secret: string; storedPreviousSecret: string | null; previousSecretUntil: Date | null }>, at: Date): Promise<void> {
    const row: Record<string, unknown> = { updated_at: this.t(at) };
    if (change.url !== undefined) row.url = change.url;
    if (change.description !== undefined) row.description = change.description;
    if (change.eventTypes !== undefined) row.event_types = JSON.stringify(change.eventTypes);
    if (change.state !== undefined) row.state = change.state;
    if (change.stateReason !== undefined) row.state_reason = change.stateReason;
    if (change.secret !== undefined) row.secret = this.secrets.seal(change.secret, secretContext(id));
    if (change.storedPreviousSecret !== undefined) row.previous_secret = change.storedPreviousSecret;
    if (change.previousSecretUntil !== undefined) row.previous_secret_until = change.previousSecretUntil ? this.t(change.previousSecretUntil) : null;
    await this.knex('whkept').where({ id }).update(row);
  }

  /**
   * Deletes the endpoint (a state: its delivery log stays) and, in the same transaction, fails its
   * pending deliveries: nothing will send them. Returns how many failed.
   */
  async deleteEndpoint(id: string, at: Date): Promise<number> {
    return this.knex.transaction(async (trx) => {
      await trx('whkept').where({ id }).update({ state: 'deleted', state_reason: 'deleted', updated_at: this.t(at) });
      return this.failDeletedEndpoints(trx, { endpointId: id });
    });
  }

  /**
   * Fails the pending deliveries of deleted endpoints (of one endpoint, or one delivery): a
   * delivery an attempt in flight, a resend or a resend-all put back in the queue as its endpoint
   * was being deleted would otherwise stay pending for ever (claimDue claims active endpoints only).
   * Its own statement, so it sees a deletion committed since the caller's previous one.
   */
  private async failDeletedEndpoints(db: Knex | Knex.Transaction, which: { endpointId?: string; deliveryId?: string }): Promise<number> {
    const q = db('whkdlv').where({ status: 'pending' }).whereIn('endpoint_id', db('whkept').select('id').where({ state: 'deleted' }));
    if (which.endpointId) q.where({ endpoint_id: which.endpointId });
    if (which.deliveryId) q.where({ id: which.deliveryId });
    return Number(await q.update({ status: 'failed', next_attempt_at: null, last_error: ENDPOINT_DELETED, claimed_by: null, claimed_until: null }));
  }

  /**
   * The secrets an attempt at `at` is signed with: the current one, and the previous one during
   * the overlap after a rotation. Throws SecretUnreadable when a value is under a key this
   * process does not hold.
   */
  signingSecrets(e: EndpointRow, at: Date): string[] {
    const secrets = [this.secrets.open(e.storedSecret, secretContext(e.id))];
    if (e.storedPreviousSecret && e.previousSecretUntil && e.previousSecretUntil > at) secrets.push(this.secrets.open(e.storedPreviousSecret, secretContext(e.id)));
    return secrets;
  }

  /** Pauses every active endpoint of an owner (its key was disabled or revoked). */
  async pauseEndpointsOf(ownerKeyId: string, reason: string, at: Date): Promise<string[]> {
    const ids = (await this.knex('whkept').where({ owner_key_id: ownerKeyId, state: 'active' }).select('id')).map((r: any) => r.id as string);
    if (ids.length === 0) return [];
    await this.knex('whkept').whereIn('id', ids).where({ state: 'active' }).update({ state: 'paused', state_reason: reason, updated_at: this.t(at) });
    for (const id of ids) await this.audit(id, SERVICE_ACTOR, 'paused', { reason }, at);
    return ids;
  }

  /** One change of an endpoint, as the audit log entry `webhook-endpoint.<action>` (target: the endpoint id). */
  async audit(endpointId: string | null, by: AuditActor, action: WebhookChange, detail: Record<string, unknown>, at: Date): Promise<void> {
    await this.audits.record(by, { action: `webhook-endpoint.${action}`, target: endpointId?.toLowerCase() ?? null, outcome: 'succeeded', detail }, at);
  }

  /** The logged changes of one endpoint, oldest first. */
  async auditLog(endpointId: string): Promise<Array<{ action: string; keyId: string | null; detail: Record<string, unknown>; at: Date }>> {
    const entries = await auditEntriesFor(this.knex, 'webhook-endpoint', endpointId.toLowerCase());
    return entries.map((e) => ({ action: e.action.replace(/^webhook-endpoint\./, ''), keyId: e.actorKeyId, detail: e.detail, at: e.at }));
  }

  // ------------------------------------------------------------------ detection cursor and lease

  async cursors(): Promise<Map<string, Date>> {
    const rows = await this.knex('whkcur').select('kind', 'cursor');
    return new Map(rows.map((r: any) => [r.kind as string, fromDbTime(r.cursor)!]));
  }

  /** Starts detection of `kind` at `at` unless it already has a cursor. */
  async ensureCursor(kind: string, at: Date): Promise<void> {
    await insertUnlessExists(this.knex, 'whkcur', { kind, cursor: this.t(at), updated_at: this.t(at) }, ['kind'], 'kind');
  }

  /**
   * Moves detection of `kind` forward to `to` (never back), or starts it there: a kind that gains
   * its first active subscriber sends nothing older (no history).
   */
  async advanceCursor(kind: string, to: Date, at: Date): Promise<void> {
    if (await insertUnlessExists(this.knex, 'whkcur', { kind, cursor: this.t(to), updated_at: this.t(at) }, ['kind'], 'kind')) return;
    await this.knex('whkcur').where({ kind }).andWhere('cursor', '<', this.t(to)).update({ cursor: this.t(to), updated_at: this.t(at) });
  }

  /** Moves the cursor of `kind` from `from` to `to`; throws CursorMoved when it is no longer at `from`. */
  async setCursor(db: Knex | Knex.Transaction, kind: string, from: Date, to: Date, at: Date): Promise<void> {
    const n = await db('whkcur').where({ kind, cursor: this.t(from) }).update({ cursor: this.t(to), updated_at: this.t(at) });
    if (Number(n) !== 1) throw new CursorMoved(kind);
  }

  /**
   * Takes (or renews) the named lease for `holder` until `until`: true when this holder has it.
   * One conditional UPDATE (or the first INSERT) decides, so two processes never both hold it.
   */
  async acquireLease(name: string, holder: string, at: Date, until: Date): Promise<boolean> {
    if (await insertUnlessExists(this.knex, 'whklse', { name, holder, expires_at: this.t(until) }, ['name'], 'name')) return true;
    const n = await this.knex('whklse')
      .where({ name })
      .andWhere((q) => q.where({ holder }).orWhere('expires_at', '<', this.t(at)))
      .update({ holder, expires_at: this.t(until) });
    return Number(n) === 1;
  }

  /** The named lease's holder, if any holds it. */
  async leaseHolder(name: string): Promise<string | undefined> {
    const row = await this.knex('whklse').where({ name }).first('holder');
    return row ? String(row.holder) : undefined;
  }

  /** Takes the lease over from `from` (a holder found gone): one conditional UPDATE, so one taker wins. */
  async takeOverLease(name: string, from: string, holder: string, until: Date): Promise<boolean> {
    const n = await this.knex('whklse').where({ name, holder: from }).update({ holder, expires_at: this.t(until) });
    return Number(n) === 1;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.knex('whklse').where({ name, holder }).delete();
  }

  // ------------------------------------------------------------------ outbox

  /** Queues one event for one endpoint; false when this event was queued for it before (same id). */
  async enqueue(db: Knex | Knex.Transaction, d: { endpointId: string; eventId: string; eventType: string; payload: string }, at: Date): Promise<string | undefined> {
    const id = randomUUID();
    const inserted = await insertUnlessExists(
      db,
      'whkdlv',
      {
        id,
        endpoint_id: d.endpointId,
        event_id: d.eventId,
        event_type: d.eventType,
        payload: d.payload,
        status: 'pending',
        attempts: 0,
        created_at: this.t(at),
        window_start: this.t(at),
        next_attempt_at: this.t(at),
      },
      ['endpoint_id', 'event_id'],
      'id',
    );
    return inserted ? id : undefined;
  }

  async delivery(id: string): Promise<DeliveryRow | undefined> {
    const row = await this.knex('whkdlv').where({ id }).first();
    return row ? deliveryOf(row) : undefined;
  }

  /** A page of endpoints as planned by src/events/lists.ts (conditions, order, page). */
  async endpointsPage(plan: QueryPlan): Promise<{ total: number; rows: EndpointRow[] }> {
    const { total, rows } = await this.listPage(plan);
    return { total, rows: rows.map(endpointOf) };
  }

  /** A page of the delivery log as planned by src/events/lists.ts. */
  async deliveriesPage(plan: QueryPlan): Promise<{ total: number; rows: DeliveryRow[] }> {
    const { total, rows } = await this.listPage(plan);
    return { total, rows: rows.map(deliveryOf) };
  }

  /** The plan's rows counted, then its page in its order. */
  private async listPage(plan: QueryPlan): Promise<{ total: number; rows: any[] }> {
    const { count, page } = listQueries(this.knex, this.qd, plan);
    const [c] = await count;
    const total = Number(c!.n);
    if (plan.offset >= total) return { total, rows: [] };
    return { total, rows: await page };
  }

  async attempts(deliveryId: string): Promise<AttemptRow[]> {
    const rows = await this.knex('whkatt').where({ delivery_id: deliveryId }).orderBy('attempt');
    return rows.map((r: any) => ({
      attempt: Number(r.attempt),
      attemptedAt: fromDbTime(r.attempted_at)!,
      statusCode: r.status_code === null || r.status_code === undefined ? null : Number(r.status_code),
      outcome: r.outcome,
      error: r.error ?? null,
      durationMs: Number(r.duration_ms),
    }));
  }

  /**
   * Claims up to `limit` due deliveries of active endpoints for `worker` until `until`. Each row
   * is claimed by a conditional UPDATE that only one process can win, so no attempt is sent twice.
   */
  async claimDue(worker: string, at: Date, until: Date, limit: number): Promise<DeliveryRow[]> {
    const now = this.t(at);
    const candidates = await this.knex('whkdlv as d')
      .join('whkept as e', 'e.id', 'd.endpoint_id')
      .where('d.status', 'pending')
      .where('e.state', 'active')
      .where('d.next_attempt_at', '<=', now)
      .andWhere((q) => q.whereNull('d.claimed_until').orWhere('d.claimed_until', '<', now))
      .orderBy('d.next_attempt_at')
      .limit(limit)
      .select('d.id', 'd.attempts');
    const claimed: string[] = [];
    for (const c of candidates) {
      const n = await this.knex('whkdlv')
        .where({ id: c.id, status: 'pending', attempts: c.attempts })
        .andWhere((q) => q.whereNull('claimed_until').orWhere('claimed_until', '<', now))
        .update({ claimed_by: worker, claimed_until: this.t(until) });
      if (Number(n) === 1) claimed.push(c.id);
    }
    if (claimed.length === 0) return [];
    return (await this.knex('whkdlv').whereIn('id', claimed).orderBy('next_attempt_at')).map(deliveryOf);
  }

  /**
   * Records one attempt and the delivery's next state; false if another worker recorded this attempt.
   * `windowStart` is the retry window the attempt was made in: when a resend opened a new one while
   * the attempt was in flight, the attempt is logged but the resend's state stands (pending, due at
   * the resend), and the new window counts its attempts from the next one, which the resend asked for.
   */
  async recordAttempt(
    deliveryId: string,
    attempt: AttemptRow,
    next: { status: DeliveryStatus; nextAttemptAt: Date | null },
    windowStart: Date,
  ): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      const ok = await insertUnlessExists(
        trx,
        'whkatt',
        {
          id: randomUUID(),
          delivery_id: deliveryId,
          attempt: attempt.attempt,
          attempted_at: this.t(attempt.attemptedAt),
          status_code: attempt.statusCode,
          outcome: attempt.outcome,
          error: attempt.error?.slice(0, 500) ?? null,
          duration_ms: attempt.durationMs,
        },
        ['delivery_id', 'attempt'],
        'id',
      );
      if (!ok) return false;
      const logged = {
        attempts: attempt.attempt,
        last_attempt_at: this.t(attempt.attemptedAt),
        last_status_code: attempt.statusCode,
        last_error: attempt.error?.slice(0, 500) ?? null,
        claimed_by: null,
        claimed_until: null,
      };
      const sameWindow = await trx('whkdlv')
        .where({ id: deliveryId, window_start: this.t(windowStart) })
        .update({ ...logged, status: next.status, next_attempt_at: next.nextAttemptAt ? this.t(next.nextAttemptAt) : null });
      if (Number(sameWindow) === 0) await trx('whkdlv').where({ id: deliveryId }).update({ ...logged, attempts_at_window_start: attempt.attempt });
      // Its endpoint deleted while the attempt was in flight: no retry will be sent.
      await this.failDeletedEndpoints(trx, { deliveryId });
      return true;
    });
  }

  /**
   * Puts a delivery back in the queue now, with a new three-day window (same event id); false when
   * its endpoint is deleted (nothing would send it).
   */
  async resend(id: string, at: Date): Promise<boolean> {
    const n = await this.knex('whkdlv').where({ id }).whereNotIn('endpoint_id', this.deletedEndpoints()).update(this.newWindow(at));
    return Number(n) === 1 && (await this.failDeletedEndpoints(this.knex, { deliveryId: id })) === 0;
  }

  /** Every failed delivery since `since` (of one endpoint) back in the queue, but those of deleted endpoints. */
  async resendFailed(since: Date, endpointId: string | undefined, at: Date): Promise<number> {
    const q = this.knex('whkdlv').where({ status: 'failed' }).where('created_at', '>=', this.t(since)).whereNotIn('endpoint_id', this.deletedEndpoints());
    if (endpointId) q.where({ endpoint_id: endpointId });
    const n = Number(await q.update(this.newWindow(at)));
    return n - (await this.failDeletedEndpoints(this.knex, endpointId ? { endpointId } : {}));
  }

  private deletedEndpoints(): Knex.QueryBuilder {
    return this.knex('whkept').select('id').where({ state: 'deleted' });
  }

  /**
   * The columns of a retry window opened at `at`: due now, and the schedule starting from its first
   * delay, its attempts counted from the attempts made so far (read in the same UPDATE). A claim is
   * left as it is: a live one is an attempt in flight, which no second worker may send beside
   * (recordAttempt then keeps this window); an expired one is free to claim anyway.
   */
  private newWindow(at: Date): Record<string, unknown> {
    return { status: 'pending', window_start: this.t(at), attempts_at_window_start: this.knex.ref('attempts'), next_attempt_at: this.t(at) };
  }

  /**
   * Deletes deliveries (and their attempts) created before `before`: finished ones, and pending
   * ones whose retry window also started before it (an endpoint paused or deleted for a month).
   * A delivery resent lately keeps its log until its window is over.
   */
  async purge(before: Date): Promise<number> {
    const cutoff = this.t(before);
    const old = (db: Knex | Knex.Transaction) =>
      db('whkdlv')
        .where('created_at', '<', cutoff)
        .andWhere((q) => q.whereNot({ status: 'pending' }).orWhere('window_start', '<', cutoff));
    return this.knex.transaction(async (trx) => {
      await trx('whkatt').whereIn('delivery_id', old(trx).select('id')).delete();
      return Number(await old(trx).delete());
    });
  }
}

/**
 * Encrypts under the current key every secret that is not yet: stored in plain text (before
 * encryption, or by an older instance during an upgrade) or under a previous key (after a
 * rotation of SECRETS_KEY). Run at every start after the migrations; idempotent, and each row is
 * changed only if it still holds the value read (a concurrent start changes it once).
 * Values no configured key opens are listed, not changed.
 */
export async function resealSecrets(knex: Knex, secrets: SecretBox): Promise<{ resealed: number; unreadable: Array<{ endpointId: string; keyId: string | undefined }> }> {
  const rows = await knex('whkept').select('id', 'secret', 'previous_secret');
  let resealed = 0;
  const unreadable: Array<{ endpointId: string; keyId: string | undefined }> = [];
  for (const r of rows as Array<{ id: string; secret: string; previous_secret: string | null }>) {
    for (const column of ['secret', 'previous_secret'] as const) {
      const stored = r[column];
      if (stored === null || stored === undefined || secrets.isCurrent(stored)) continue;
      let plaintext: string;
      try {
        plaintext = secrets.open(stored, secretContext(r.id));
      } catch (err) {
        unreadable.push({ endpointId: r.id, keyId: (err as { keyId?: string }).keyId });
        continue;
      }
      const n = await knex('whkept')
        .where({ id: r.id, [column]: stored })
        .update({ [column]: secrets.seal(plaintext, secretContext(r.id)) });
      resealed += Number(n);
    }
  }
  return { resealed, unreadable };
}
