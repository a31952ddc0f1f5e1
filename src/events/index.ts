import os from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Engine } from '../storage/database';
import type { ApiKeyRepository } from '../storage/api-keys';
import type { SecretBox } from '../storage/secret-box';
import type { AuditActor, AuditLog } from '../audit';
import { ApiProblem } from '../errors/problem';
import { Detector } from './detector';
import { DeliveryWorker, httpSender, type Sender } from './delivery';
import { EVENT_TYPES, kindOfType, TEST_EVENT_TYPE, type EventKind } from './kinds';
import { openWritesFor, type OpenWrites } from '../storage/open-writes';
import { newSecret, ROTATION_OVERLAP_MS } from './signing';
import { DELIVERY_LOG_RETENTION_MS } from './schedule';
import { EventStore, type DeliveryRow, type EndpointRow, type WebhookChange } from './store';
import { checkTarget, redactedTarget, systemResolver, TargetRefused, type Resolver, type TargetPolicy } from './targets';
import { EventFeed } from './feed';

export { EVENT_TYPES } from './kinds';
export type { EndpointRow, DeliveryRow } from './store';

/** EVENT_FEED_POLL_MS when the configuration does not say (src/config.ts). */
const DEFAULT_FEED_POLL_MS = 500;

export interface EventsOptions {
  knex: Knex;
  engine: Engine;
  keys: ApiKeyRepository;
  /** Encrypts the signing secrets at rest; every process on the database holds the same key. */
  secrets: SecretBox;
  /** Every change of an endpoint is an entry of the audit log (spec Events rule 9). */
  audit: AuditLog;
  logger: Logger;
  config: Pick<Config, 'eventDetectionIntervalSeconds' | 'eventDetectionLagSeconds' | 'webhookAllowPrivateTargets' | 'webhookTimeoutMs'> & Partial<Pick<Config, 'eventFeedPollMs'>>;
  /** Injectable for tests: the clock, DNS, the HTTP client and jitter. */
  clock?: () => Date;
  resolver?: Resolver;
  sender?: Sender;
  random?: () => number;
  /** While true (maintenance lock: the pool is dropped) the workers skip their cycles. */
  isLocked?: () => boolean;
  /**
   * This process's name on the detection lease and its delivery claims; the server passes its
   * heartbeat's boot id, so that `holderGone` can tell when the holder died. Default: host, pid
   * and a random suffix (then the lease is taken over only once it has run out).
   */
  holder?: string;
  /** Whether the process holding the detection lease is gone (src/storage/instance-heartbeat.ts, bootGone). */
  holderGone?: (holder: string) => Promise<boolean>;
  /** The oldest transaction still writing (default: storage/open-writes.ts for the engine). */
  openWrites?: OpenWrites;
}

/** A subscriber (webhook endpoint or event feed) whose active event types change. */
interface Subscriber {
  endpointId?: string;
  feedId?: string;
}

/** The document kinds of a list of event types. */
function kindsOf(types: readonly string[]): Set<EventKind> {
  const kinds = new Set<EventKind>();
  for (const t of types) {
    const kind = kindOfType(t);
    if (kind) kinds.add(kind);
  }
  return kinds;
}

/**
 * The change-events wing: endpoint management (used by src/http/routes/events.ts), the detector
 * and the delivery worker. `start()` runs both on timers; tests call `detectNow()` and
 * `deliverNow()` instead, with an injected clock.
 */
export class Events {
  readonly store: EventStore;
  readonly detector: Detector;
  readonly delivery: DeliveryWorker;
  /** The pull feed over the same events (POST /events/query, /event-feeds): src/events/feed. */
  readonly feed: EventFeed;
  readonly policy: TargetPolicy;
  readonly clock: () => Date;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<unknown>>();
  private stopped = false;
  private readonly holder: string;

  constructor(private readonly o: EventsOptions) {
    this.holder = o.holder ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.clock = o.clock ?? (() => new Date());
    this.store = new EventStore(o.knex, o.engine, o.secrets, o.audit);
    this.policy = { allowPrivate: o.config.webhookAllowPrivateTargets, resolver: o.resolver ?? systemResolver };
    const intervalMs = o.config.eventDetectionIntervalSeconds * 1000;
    this.feed = new EventFeed({
      knex: o.knex,
      engine: o.engine,
      keys: o.keys,
      logger: o.logger,
      clock: this.clock,
      pollMs: o.config.eventFeedPollMs ?? DEFAULT_FEED_POLL_MS,
      startDetection: (feed, before, after) => this.startDetection(feed, before, after),
      audit: o.audit,
      ...(o.isLocked ? { isLocked: o.isLocked } : {}),
    });
    this.detector = new Detector({
      store: this.store,
      keys: o.keys,
      logger: o.logger,
      clock: this.clock,
      lagMs: o.config.eventDetectionLagSeconds * 1000,
      openWrites: o.openWrites ?? openWritesFor(o.knex, o.engine, o.logger),
      leaseMs: Math.max(2 * intervalMs, 60_000),
      holder: this.holder,
      feed: this.feed,
      ...(o.holderGone ? { holderGone: o.holderGone } : {}),
    });
    this.delivery = new DeliveryWorker({
      store: this.store,
      keys: o.keys,
      logger: o.logger,
      clock: this.clock,
      policy: this.policy,
      sender: o.sender ?? httpSender(this.policy),
      worker: this.holder,
      timeoutMs: o.config.webhookTimeoutMs,
      batchSize: 50,
      retentionMs: DELIVERY_LOG_RETENTION_MS,
      ...(o.random ? { random: o.random } : {}),
    });
  }

  detectNow() {
    // Requests long polling the feed in this process look at once (others poll the database).
    return this.detector.runOnce().finally(() => this.feed.detected());
  }

  deliverNow() {
    return this.delivery.runOnce();
  }

  /** Starts the detector (every EVENT_DETECTION_INTERVAL_SECONDS) and the delivery poll (every second). */
  start(): void {
    if (this.o.config.webhookAllowPrivateTargets) {
      this.o.logger.warn('WEBHOOK_ALLOW_PRIVATE_TARGETS is on: webhooks may be sent over http and to private and loopback addresses (development only)');
    }
    const loop = (name: string, everyMs: number, run: () => Promise<unknown>) => {
      const tick = () => {
        if (this.stopped) return;
        const cycle: Promise<unknown> = (this.o.isLocked?.() ? Promise.resolve() : run())
          .catch((err) => this.o.logger.warn({ err, worker: name }, 'events worker cycle failed'))
          .finally(() => {
            this.running.delete(cycle);
            if (!this.stopped) this.timers.set(name, setTimeout(tick, everyMs).unref());
          });
        this.running.add(cycle);
      };
      this.timers.set(name, setTimeout(tick, Math.min(everyMs, 1000)).unref());
    };
    loop('detector', this.o.config.eventDetectionIntervalSeconds * 1000, () => this.detectNow());
    loop('feed-retention', 10 * 60_000, () => this.feed.purge());
    loop('delivery', 1000, async () => {
      // Drain what is due, batch after batch.
      while (!this.stopped && (await this.deliverNow()).claimed > 0);
    });
  }

  /** Stops the timers and waits for the cycle in flight; lets another process take the detection lease at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.feed.stop();
    for (const t of this.timers.values()) clearTimeout(t);
    await Promise.all([...this.running]);
    await this.store.releaseLease('detector', this.holder).catch(() => undefined);
  }

  // ------------------------------------------------------------------ management

  /** Every change of a subscription: an entry of the audit log (which also writes a log line). */
  private async audit(endpointId: string | null, by: AuditActor, action: WebhookChange, detail: Record<string, unknown>, at: Date): Promise<void> {
    // No secret of a target's query in the audit log or the log line it writes.
    const kept = typeof detail.url === 'string' ? { ...detail, url: redactedTarget(detail.url) } : detail;
    await this.store.audit(endpointId, by, action, kept, at);
  }

  private async targetOrProblem(url: string): Promise<string> {
    try {
      return (await checkTarget(url, this.policy)).toString();
    } catch (err) {
      if (err instanceof TargetRefused) {
        throw new ApiProblem('WEBHOOK_TARGET_REFUSED', `The webhook url is refused: ${err.message}`, { errors: [{ field: 'url', code: 'target_refused', message: err.message }], extensions: { reason: err.reason } });
      }
      throw err;
    }
  }

  private eventTypesOrProblem(types: string[]): string[] {
    const unknown = types.filter((t) => !EVENT_TYPES.includes(t));
    if (unknown.length > 0) {
      throw new ApiProblem('VALIDATION_FAILED', `Unknown event type ${unknown[0]}.`, { errors: unknown.map((t) => ({ field: 'eventTypes', code: 'unknown_event_type', message: `unknown event type ${t}` })) });
    }
    return [...new Set(types)];
  }

  /**
   * A subscriber's active event types change from `before` to `after` (none while it is not active):
   * called BEFORE the change is saved, so no detection cycle reads for it from an old cursor. A kind
   * it gains that no other active endpoint or feed has starts detection now: its cursor moves
   * forward to where a window read now ends (Detector.upperBound), so a change made while nobody
   * subscribed to the kind is never sent (no history: docs/decisions/0467-no-history-for-a-first-subscriber.md).
   * A kind others subscribe to keeps its cursor: they are owed what lies after it.
   */
  private async startDetection(subscriber: Subscriber, before: readonly string[], after: readonly string[]): Promise<void> {
    const had = kindsOf(before);
    const gained = [...kindsOf(after)].filter((k) => !had.has(k));
    if (gained.length === 0) return;
    const others = new Set<EventKind>();
    for (const e of (await this.store.endpoints({ states: ['active'] })).rows) if (e.id !== subscriber.endpointId) for (const k of kindsOf(e.eventTypes)) others.add(k);
    for (const f of (await this.feed.store.feeds({ states: ['active'] })).rows) if (f.id !== subscriber.feedId) for (const k of kindsOf(f.eventTypes)) others.add(k);
    const at = this.clock();
    const from = (await this.detector.upperBound(at)) ?? new Date(at.getTime() - this.o.config.eventDetectionLagSeconds * 1000);
    for (const kind of gained) {
      if (others.has(kind)) await this.store.ensureCursor(kind, from);
      else await this.store.advanceCursor(kind, from, at);
    }
  }

  /** The new endpoint and its secret, in plain text this once (stored encrypted). */
  async createEndpoint(by: AuditActor & { keyId: string }, input: { url: string; eventTypes: string[]; description?: string | null }): Promise<EndpointRow & { secret: string }> {
    const url = await this.targetOrProblem(input.url);
    const eventTypes = this.eventTypesOrProblem(input.eventTypes);
    await this.startDetection({}, [], eventTypes);
    const at = this.clock();
    const secret = newSecret();
    const e = await this.store.createEndpoint({ url, description: input.description ?? null, eventTypes, ownerKeyId: by.keyId, secret }, at);
    await this.audit(e.id, by, 'created', { url, eventTypes, description: e.description }, at);
    return { ...e, secret };
  }

  async endpointOrProblem(id: string): Promise<EndpointRow> {
    const e = /^[0-9a-f-]{36}$/i.test(id) ? await this.store.endpoint(id.toLowerCase()) : undefined;
    if (!e) throw new ApiProblem('WEBHOOK_ENDPOINT_NOT_FOUND', `No webhook endpoint has the id ${id}.`);
    return e;
  }

  async updateEndpoint(by: AuditActor, id: string, input: { url?: string; eventTypes?: string[]; description?: string | null; paused?: boolean }): Promise<EndpointRow> {
    const e = await this.endpointOrProblem(id);
    const change: Parameters<EventStore['updateEndpoint']>[1] = {};
    if (input.url !== undefined) change.url = await this.targetOrProblem(input.url);
    if (input.eventTypes !== undefined) change.eventTypes = this.eventTypesOrProblem(input.eventTypes);
    if (input.description !== undefined) change.description = input.description;
    if (input.paused === true) Object.assign(change, { state: 'paused', stateReason: 'paused by an administrator' });
    // Resuming (also a 410-disabled or owner-paused endpoint) makes it active again; resuming
    // an endpoint whose owner still may not read pauses it again at the next cycle.
    if (input.paused === false) Object.assign(change, { state: 'active', stateReason: null });
    const after = change.state ?? e.state;
    await this.startDetection({ endpointId: e.id }, e.state === 'active' ? e.eventTypes : [], after === 'active' ? (change.eventTypes ?? e.eventTypes) : []);
    const at = this.clock();
    await this.store.updateEndpoint(e.id, change, at);
    await this.audit(e.id, by, 'updated', { ...input, ...(change.url ? { url: change.url } : {}) }, at);
    return (await this.store.endpoint(e.id))!;
  }

  async deleteEndpoint(by: AuditActor, id: string): Promise<EndpointRow> {
    const e = await this.endpointOrProblem(id);
    const at = this.clock();
    // Its pending deliveries fail with it (decision 0468): the delivery log says what will happen.
    const failedDeliveries = await this.store.deleteEndpoint(e.id, at);
    await this.audit(e.id, by, 'deleted', { failedDeliveries }, at);
    return { ...e, state: 'deleted' };
  }

  async rotateSecret(by: AuditActor, id: string): Promise<{ endpoint: EndpointRow; secret: string; previousSecretExpiresAt: Date }> {
    const e = await this.endpointOrProblem(id);
    const at = this.clock();
    const secret = newSecret();
    const until = new Date(at.getTime() + ROTATION_OVERLAP_MS);
    await this.store.updateEndpoint(e.id, { secret, storedPreviousSecret: e.storedSecret, previousSecretUntil: until }, at);
    await this.audit(e.id, by, 'secret-rotated', { previousSecretExpiresAt: until.toISOString() }, at);
    return { endpoint: (await this.store.endpoint(e.id))!, secret, previousSecretExpiresAt: until };
  }

  /** Queues a test event for the endpoint (sent by the delivery worker like any other). */
  async sendTest(by: AuditActor, id: string): Promise<DeliveryRow> {
    const e = await this.endpointOrProblem(id);
    const at = this.clock();
    const eventId = `evt_test_${randomUUID().replace(/-/g, '')}`;
    const payload = JSON.stringify({ type: TEST_EVENT_TYPE, timestamp: at.toISOString(), data: { entity: 'webhook_endpoint', source: 'test', changedAt: at.toISOString(), changedBy: `api:${by.name}`.slice(0, 30), record: { endpointId: e.id } } });
    const deliveryId = (await this.store.enqueue(this.store.knex, { endpointId: e.id, eventId, eventType: TEST_EVENT_TYPE, payload }, at))!;
    await this.audit(e.id, by, 'test-sent', { eventId }, at);
    return (await this.store.delivery(deliveryId))!;
  }

  async deliveryOrProblem(id: string): Promise<DeliveryRow> {
    const d = /^[0-9a-f-]{36}$/i.test(id) ? await this.store.delivery(id.toLowerCase()) : undefined;
    if (!d) throw new ApiProblem('WEBHOOK_DELIVERY_NOT_FOUND', `No webhook delivery has the id ${id}.`);
    return d;
  }

  async resend(by: AuditActor, id: string): Promise<DeliveryRow> {
    const d = await this.deliveryOrProblem(id);
    const at = this.clock();
    // A deleted endpoint is not found, as resend-failed naming it answers (decision 0468).
    if (!(await this.store.resend(d.id, at))) throw new ApiProblem('WEBHOOK_ENDPOINT_NOT_FOUND', `The webhook endpoint ${d.endpointId} of delivery ${d.id} was deleted: nothing can be sent to it.`);
    await this.audit(d.endpointId, by, 'delivery-resent', { deliveryId: d.id, eventId: d.eventId }, at);
    return (await this.store.delivery(d.id))!;
  }

  async resendFailed(by: AuditActor, since: Date, endpointId: string | undefined): Promise<number> {
    if (endpointId) await this.endpointOrProblem(endpointId);
    const at = this.clock();
    const n = await this.store.resendFailed(since, endpointId?.toLowerCase(), at);
    // Resending across every endpoint is logged too (target: none).
    await this.audit(endpointId?.toLowerCase() ?? null, by, 'failed-deliveries-resent', { since: since.toISOString(), count: n }, at);
    return n;
  }
}
