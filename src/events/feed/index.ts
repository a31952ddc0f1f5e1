import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { ApiKeyRecord, ApiKeyRepository } from '../../storage/api-keys';
import type { Engine } from '../../storage/database';
import { SERVICE_ACTOR, type AuditActor, type AuditLog } from '../../audit';
import { ApiProblem } from '../../errors/problem';
import type { DetectedEvent, DetectedEventSink } from '../detector';
import type { EventDocument } from '../document';
import { EVENT_TYPES, kindOfType, type EventKind } from '../kinds';
import { DELIVERY_LOG_RETENTION_MS } from '../schedule';
import { ownerMayReceive, visibleFieldNames, visibleRecord } from '../visibility';
import { encodeCursor } from './cursor';
import { planEventQuery, selectFields, type EventQueryBody } from './request';
import { FeedStore, PositionOutOfRange, type FeedRow, type LogPage, type LogPosition } from './store';
import { HighWaterWatch } from './watch';

export type { FeedRow } from './store';

/**
 * The pull feed of change events (issue 28; docs/decisions/0280-the-event-feed.md): the same
 * events the webhooks carry, read by the consumer from a cursor with POST /events/query.
 *
 * - Feeds (POST /event-feeds) are subscriptions without a url: detection includes their event
 *   types (the spec's rule 2, "only for subscribed document kinds"), and the detector hands every
 *   event of those types to the log (`append`, in its transaction). A feed is paused when its
 *   owner key is switched off or when nobody has read its types for 30 days.
 * - Reading applies the rules of delivery to the READING key (src/events/visibility.ts): its
 *   scopes decide what it sees, personal fields are removed without `pii`; payroll is no event kind.
 * - The log keeps 30 days, as the delivery log; a cursor before that is 410 EVENT_CURSOR_EXPIRED.
 */

/** Events are kept as long as the webhook delivery log (the spec: 30 days). */
export const EVENT_LOG_RETENTION_MS = DELIVERY_LOG_RETENTION_MS;
/** A feed nobody has read for this long is paused (its types are no longer detected for it). */
export const FEED_UNREAD_PAUSE_MS = 30 * 24 * 3_600_000;
/** A process records a read of the same feeds at most this often (one UPDATE, not one per page). */
const MARK_READ_EVERY_MS = 60_000;

export interface EventFeedOptions {
  knex: Knex;
  engine: Engine;
  keys: ApiKeyRepository;
  logger: Logger;
  clock: () => Date;
  /** How often a process polls the log's high-water mark while requests wait (EVENT_FEED_POLL_MS). */
  pollMs: number;
  /**
   * A feed's active event types change from `before` to `after` (none while not active), before the
   * change is saved: a kind no other subscriber has starts detection now (the webhook endpoints' rule: no history).
   */
  startDetection: (feed: { feedId?: string }, before: readonly string[], after: readonly string[]) => Promise<void>;
  /** The one audit log of administrative actions: every feed change is an `event-feed.<change>` entry. */
  audit: AuditLog;
  isLocked?: () => boolean;
}

/** What a read runs its database work through (the route passes the on-premise boundary). */
export interface ReadContext {
  run<T>(fn: (db: Knex) => Promise<T>): Promise<T>;
  maxFilterDepth: number;
  /** The client went away: stop waiting. */
  signal?: AbortSignal;
  /** The server is draining: stop waiting (answer what there is). */
  stopping?: () => boolean;
}

export interface EventPageResult {
  asOf: string;
  page: { pageNumber: 1; pageSize: number; totalCount: number; returnedCount: number; nextCursor: string };
  data: Array<Record<string, unknown>>;
}

export class EventFeed implements DetectedEventSink {
  readonly store: FeedStore;
  readonly watch: HighWaterWatch;
  private readonly lastMarked = new Map<string, number>();

  constructor(private readonly o: EventFeedOptions) {
    this.store = new FeedStore(o.knex, o.engine);
    this.watch = new HighWaterWatch({ read: async () => (await this.store.position()).seq, pollMs: o.pollMs, logger: o.logger, ...(o.isLocked ? { isLocked: o.isLocked } : {}) });
  }

  // ------------------------------------------------------------------ management

  /** Every change of a feed, by a key or by the service: the one place feed changes are logged (the audit log). */
  async logFeedChange(feedId: string, by: AuditActor, change: 'created' | 'updated' | 'deleted' | 'paused', detail: Record<string, unknown>, at: Date): Promise<void> {
    await this.o.audit.record(by, { action: `event-feed.${change}`, target: feedId.toLowerCase(), outcome: 'succeeded', detail }, at);
  }

  private eventTypesOrProblem(types: string[]): string[] {
    const unknown = types.filter((t) => !EVENT_TYPES.includes(t));
    if (unknown.length > 0) {
      throw new ApiProblem('VALIDATION_FAILED', `Unknown event type ${unknown[0]}.`, { errors: unknown.map((t) => ({ field: 'eventTypes', code: 'unknown_event_type', message: `unknown event type ${t}` })) });
    }
    return [...new Set(types)];
  }

  async createFeed(by: AuditActor & { keyId: string }, input: { eventTypes: string[]; description?: string | null }): Promise<FeedRow> {
    const eventTypes = this.eventTypesOrProblem(input.eventTypes);
    await this.o.startDetection({}, [], eventTypes);
    const at = this.o.clock();
    const f = await this.store.createFeed({ description: input.description ?? null, eventTypes, ownerKeyId: by.keyId }, at);
    await this.logFeedChange(f.id, by, 'created', { eventTypes, description: f.description }, at);
    return f;
  }

  async feedOrProblem(id: string): Promise<FeedRow> {
    const f = /^[0-9a-f-]{36}$/i.test(id) ? await this.store.feed(id.toLowerCase()) : undefined;
    if (!f) throw new ApiProblem('EVENT_FEED_NOT_FOUND', `No event feed has the id ${id}.`);
    return f;
  }

  async updateFeed(by: AuditActor, id: string, input: { eventTypes?: string[]; description?: string | null; paused?: boolean }): Promise<FeedRow> {
    const f = await this.feedOrProblem(id);
    const at = this.o.clock();
    const change: Parameters<FeedStore['updateFeed']>[1] = {};
    if (input.eventTypes !== undefined) change.eventTypes = this.eventTypesOrProblem(input.eventTypes);
    if (input.description !== undefined) change.description = input.description;
    if (input.paused === true) Object.assign(change, { state: 'paused', stateReason: 'paused by an administrator' });
    // Resuming counts as a read, or a feed paused for being unread would be paused again at once.
    if (input.paused === false) Object.assign(change, { state: 'active', stateReason: null, lastReadAt: at });
    const after = change.state ?? f.state;
    await this.o.startDetection({ feedId: f.id }, f.state === 'active' ? f.eventTypes : [], after === 'active' ? (change.eventTypes ?? f.eventTypes) : []);
    await this.store.updateFeed(f.id, change, at);
    await this.logFeedChange(f.id, by, 'updated', { ...input }, at);
    return (await this.store.feed(f.id))!;
  }

  async deleteFeed(by: AuditActor, id: string): Promise<FeedRow> {
    const f = await this.feedOrProblem(id);
    const at = this.o.clock();
    await this.store.updateFeed(f.id, { state: 'deleted', stateReason: 'deleted' }, at);
    await this.logFeedChange(f.id, by, 'deleted', {}, at);
    return { ...f, state: 'deleted' };
  }

  // ------------------------------------------------------------------ detection (DetectedEventSink)

  /**
   * The types of the active feeds, for this detection cycle. Pauses first the feeds whose owner
   * key was disabled, revoked or deleted (the spec's rule 4 for subscriptions) and those nobody
   * has read for 30 days.
   */
  async subscribedTypes(at: Date): Promise<ReadonlySet<string>> {
    const { rows } = await this.store.feeds({ states: ['active'] });
    const types = new Set<string>();
    const owners = new Map<string, ApiKeyRecord | undefined>();
    for (const f of rows) {
      if (!owners.has(f.ownerKeyId)) owners.set(f.ownerKeyId, await this.o.keys.findById(f.ownerKeyId));
      const owner = owners.get(f.ownerKeyId);
      const reason = !ownerMayReceive(owner)
        ? `owner key ${(owner as ApiKeyRecord | undefined)?.state ?? 'deleted'}`
        : at.getTime() - (f.lastReadAt ?? f.createdAt).getTime() >= FEED_UNREAD_PAUSE_MS
          ? 'not read for 30 days'
          : undefined;
      if (reason) {
        if (await this.store.pauseFeed(f.id, reason, at)) await this.logFeedChange(f.id, SERVICE_ACTOR, 'paused', { reason }, at);
        continue;
      }
      for (const t of f.eventTypes) types.add(t);
    }
    return types;
  }

  append(trx: Knex.Transaction, events: DetectedEvent[]): Promise<void> {
    return this.store.append(trx, events).then(() => undefined);
  }

  /** A detection cycle of this process ended: waiting requests look at once. */
  detected(): void {
    this.watch.poke();
  }

  /** Retention: the events detected more than 30 days ago. */
  purge(): Promise<number> {
    return this.store.purge(new Date(this.o.clock().getTime() - EVENT_LOG_RETENTION_MS));
  }

  stop(): void {
    this.watch.stop();
  }

  // ------------------------------------------------------------------ reading

  /**
   * POST /events/query for `key`: a page of events after the cursor, oldest first. With
   * `waitSeconds`, an empty page is not answered before that time unless an event arrives.
   */
  async query(key: ApiKeyRecord, body: EventQueryBody, ctx: ReadContext): Promise<EventPageResult> {
    const plan = planEventQuery(body ?? {}, key.id, { maxFilterDepth: ctx.maxFilterDepth });
    let after: number | undefined;
    if (plan.cursor?.kind === 'unknown') throw this.expired(key, await ctx.run((db) => this.store.position(db)), 'The cursor in `after` is not one this service issued (or its database was replaced).');
    if (plan.cursor?.kind === 'position') after = plan.cursor.position;
    await this.markRead(plan.types);
    const deadline = Date.now() + plan.waitMs;
    for (;;) {
      const page = await this.readPage(key, after, plan.where, plan.pageSize, ctx);
      if (page.rows.length > 0 || plan.waitMs === 0 || ctx.stopping?.() || ctx.signal?.aborted) return this.render(key, page, plan.select, plan.pageSize);
      const woke = await this.watch.waitAbove(page.next, deadline - Date.now(), { ...(ctx.signal ? { signal: ctx.signal } : {}), ...(ctx.stopping ? { interrupted: ctx.stopping } : {}) });
      // Past the events that did not match: the next look starts where this one ended.
      after = page.next;
      if (woke !== 'advanced') {
        // Timed out or interrupted: one last look (an event may have come with the wake-up), then answer.
        return this.render(key, await this.readPage(key, after, plan.where, plan.pageSize, ctx), plan.select, plan.pageSize);
      }
    }
  }

  /** A page of the log, with `asOf`: the clock before its snapshot, as every read envelope's (decision 0400). */
  private async readPage(key: ApiKeyRecord, after: number | undefined, where: Parameters<FeedStore['page']>[2], pageSize: number, ctx: ReadContext): Promise<LogPage & { asOf: Date }> {
    try {
      return await ctx.run(async (db) => {
        const asOf = new Date();
        return { ...(await this.store.qd.readSnapshot(db, (reader) => this.store.page(reader, after, where, pageSize))), asOf };
      });
    } catch (err) {
      if (err instanceof PositionOutOfRange) {
        throw this.expired(key, err.log, err.position < err.log.purgedThrough ? 'The cursor in `after` points before the oldest event still kept (events are kept 30 days).' : 'The cursor in `after` is not one this service issued (or its database was replaced).');
      }
      throw err;
    }
  }

  private expired(key: ApiKeyRecord, log: LogPosition, detail: string): ApiProblem {
    const oldestCursor = encodeCursor(key.id, log.purgedThrough);
    return new ApiProblem('EVENT_CURSOR_EXPIRED', `${detail} Resume from oldestCursor (the oldest event still kept); events in between are gone.`, {
      errors: [{ field: 'after', code: 'expired', message: 'unknown or expired cursor' }],
      extensions: { oldestCursor },
    });
  }

  /** The rows as the reading key may see them: the webhook's document with its id, the record through the delivery rule. */
  private render(key: ApiKeyRecord, page: LogPage & { asOf: Date }, select: Parameters<typeof selectFields>[1], pageSize: number): EventPageResult {
    const data: Array<Record<string, unknown>> = [];
    for (const row of page.rows) {
      const doc = JSON.parse(row.document) as EventDocument;
      const kind = kindOfType(doc.type) as EventKind;
      const record = visibleRecord(key, kind, doc.data.record);
      if (!record) continue; // not readable by this key (a key without `read` is refused before this)
      const { unreadableFields, ...rest } = doc.data;
      const unreadable = visibleFieldNames(key, kind, unreadableFields ?? []);
      data.push(selectFields({ id: row.eventId, type: doc.type, timestamp: doc.timestamp, data: { ...rest, record, ...(unreadable.length > 0 ? { unreadableFields: unreadable } : {}) } }, select));
    }
    return {
      asOf: page.asOf.toISOString(),
      page: { pageNumber: 1, pageSize, totalCount: page.totalCount, returnedCount: data.length, nextCursor: encodeCursor(key.id, page.next) },
      data,
    };
  }

  /**
   * Records that the feeds whose types this read can return were read (the 30-day pause). At
   * most once a minute per process for the same types; a failure never fails the read.
   */
  private async markRead(types: ReadonlySet<string>): Promise<void> {
    if (types.size === 0 || this.o.isLocked?.()) return;
    const at = this.o.clock();
    const key = [...types].sort().join(',');
    const last = this.lastMarked.get(key);
    if (last !== undefined && at.getTime() - last < MARK_READ_EVERY_MS && at.getTime() >= last) return;
    this.lastMarked.set(key, at.getTime());
    if (this.lastMarked.size > 1000) this.lastMarked.clear();
    try {
      const { rows } = await this.store.feeds({ states: ['active'] });
      const ids = rows.filter((f) => f.eventTypes.some((t) => types.has(t)) && (!f.lastReadAt || at.getTime() - f.lastReadAt.getTime() >= MARK_READ_EVERY_MS)).map((f) => f.id);
      await this.store.markRead(ids, at);
    } catch (err) {
      this.lastMarked.delete(key);
      this.o.logger.warn({ err }, 'event feed: recording the read failed');
    }
  }
}
