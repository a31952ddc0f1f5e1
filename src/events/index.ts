import os from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Engine } from '../storage/database';
import type { ApiKeyRepository } from '../storage/api-keys';
import { ApiProblem } from '../errors/problem';
import { Detector } from './detector';
import { DeliveryWorker, httpSender, type Sender } from './delivery';
import { EVENT_TYPES, kindOfType, TEST_EVENT_TYPE } from './kinds';
import { newSecret, ROTATION_OVERLAP_MS } from './signing';
import { EventStore, type DeliveryRow, type EndpointRow } from './store';
import { checkTarget, systemResolver, TargetRefused, type Resolver, type TargetPolicy } from './targets';

export { EVENT_TYPES } from './kinds';
export type { EndpointRow, DeliveryRow } from './store';

export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 3_600_000;

export interface EventsOptions {
  knex: Knex;
  engine: Engine;
  keys: ApiKeyRepository;
  logger: Logger;
  config: Pick<Config, 'eventDetectionIntervalSeconds' | 'eventDetectionLagSeconds' | 'webhookAllowPrivateTargets' | 'webhookTimeoutMs'>;
  /** Injectable for tests: the clock, DNS, the HTTP client and jitter. */
  clock?: () => Date;
  resolver?: Resolver;
  sender?: Sender;
  random?: () => number;
  /** While true (maintenance lock: the pool is dropped) the workers skip their cycles. */
  isLocked?: () => boolean;
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
  readonly policy: TargetPolicy;
  readonly clock: () => Date;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<unknown>>();
  private stopped = false;
  private readonly holder = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  constructor(private readonly o: EventsOptions) {
    this.clock = o.clock ?? (() => new Date());
    this.store = new EventStore(o.knex, o.engine);
    this.policy = { allowPrivate: o.config.webhookAllowPrivateTargets, resolver: o.resolver ?? systemResolver };
    const intervalMs = o.config.eventDetectionIntervalSeconds * 1000;
    this.detector = new Detector({
      store: this.store,
      keys: o.keys,
      logger: o.logger,
      clock: this.clock,
      lagMs: o.config.eventDetectionLagSeconds * 1000,
      leaseMs: Math.max(2 * intervalMs, 60_000),
      holder: this.holder,
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
    return this.detector.runOnce();
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
    loop('delivery', 1000, async () => {
      // Drain what is due, batch after batch.
      while (!this.stopped && (await this.deliverNow()).claimed > 0);
    });
  }

  /** Stops the timers and waits for the cycle in flight; lets another process take the detection lease at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    await Promise.all([...this.running]);
    await this.store.releaseLease('detector', this.holder).catch(() => undefined);
  }

  // ------------------------------------------------------------------ management

  /** Every change of a subscription: a row of the audit log (whkaud) and a log line. */
  private async audit(endpointId: string, keyId: string | null, action: string, detail: Record<string, unknown>, at: Date): Promise<void> {
    await this.store.audit(endpointId, keyId, action, detail, at);
    this.o.logger.info({ endpointId, keyId, action, detail }, 'webhook endpoint changed');
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

  /** Starts detection of newly subscribed kinds from now (minus the lag), not from the beginning of time. */
  private async startCursors(types: string[]): Promise<void> {
    const from = new Date(this.clock().getTime() - this.o.config.eventDetectionLagSeconds * 1000);
    for (const kind of new Set(types.map(kindOfType))) if (kind) await this.store.ensureCursor(kind, from);
  }

  async createEndpoint(keyId: string, input: { url: string; eventTypes: string[]; description?: string | null }): Promise<EndpointRow> {
    const url = await this.targetOrProblem(input.url);
    const eventTypes = this.eventTypesOrProblem(input.eventTypes);
    const at = this.clock();
    const e = await this.store.createEndpoint({ url, description: input.description ?? null, eventTypes, ownerKeyId: keyId, secret: newSecret() }, at);
    await this.startCursors(eventTypes);
    await this.audit(e.id, keyId, 'created', { url, eventTypes, description: e.description }, at);
    return e;
  }

  async endpointOrProblem(id: string): Promise<EndpointRow> {
    const e = /^[0-9a-f-]{36}$/i.test(id) ? await this.store.endpoint(id.toLowerCase()) : undefined;
    if (!e) throw new ApiProblem('WEBHOOK_ENDPOINT_NOT_FOUND', `No webhook endpoint has the id ${id}.`);
    return e;
  }

  async updateEndpoint(keyId: string, id: string, input: { url?: string; eventTypes?: string[]; description?: string | null; paused?: boolean }): Promise<EndpointRow> {
    const e = await this.endpointOrProblem(id);
    const change: Parameters<EventStore['updateEndpoint']>[1] = {};
    if (input.url !== undefined) change.url = await this.targetOrProblem(input.url);
    if (input.eventTypes !== undefined) change.eventTypes = this.eventTypesOrProblem(input.eventTypes);
    if (input.description !== undefined) change.description = input.description;
    if (input.paused === true) Object.assign(change, { state: 'paused', stateReason: 'paused by an administrator' });
    // Resuming (also a 410-disabled or owner-paused endpoint) makes it active again; resuming
    // an endpoint whose owner still may not read pauses it again at the next cycle.
    if (input.paused === false) Object.assign(change, { state: 'active', stateReason: null });
    const at = this.clock();
    await this.store.updateEndpoint(e.id, change, at);
    if (change.eventTypes) await this.startCursors(change.eventTypes);
    await this.audit(e.id, keyId, 'updated', { ...input, ...(change.url ? { url: change.url } : {}) }, at);
    return (await this.store.endpoint(e.id))!;
  }

  async deleteEndpoint(keyId: string, id: string): Promise<EndpointRow> {
    const e = await this.endpointOrProblem(id);
    const at = this.clock();
    await this.store.updateEndpoint(e.id, { state: 'deleted', stateReason: 'deleted' }, at);
    await this.audit(e.id, keyId, 'deleted', {}, at);
    return { ...e, state: 'deleted' };
  }

  async rotateSecret(keyId: string, id: string): Promise<{ endpoint: EndpointRow; secret: string; previousSecretExpiresAt: Date }> {
    const e = await this.endpointOrProblem(id);
    const at = this.clock();
    const secret = newSecret();
    const until = new Date(at.getTime() + ROTATION_OVERLAP_MS);
    await this.store.updateEndpoint(e.id, { secret, previousSecret: e.secret, previousSecretUntil: until }, at);
    await this.audit(e.id, keyId, 'secret-rotated', { previousSecretExpiresAt: until.toISOString() }, at);
    return { endpoint: (await this.store.endpoint(e.id))!, secret, previousSecretExpiresAt: until };
  }

  /** Queues a test event for the endpoint (sent by the delivery worker like any other). */
  async sendTest(keyId: string, id: string, keyName = keyId): Promise<DeliveryRow> {
    const e = await this.endpointOrProblem(id);
    const at = this.clock();
    const eventId = `evt_test_${randomUUID().replace(/-/g, '')}`;
    const payload = JSON.stringify({ type: TEST_EVENT_TYPE, timestamp: at.toISOString(), data: { entity: 'webhook_endpoint', source: 'test', changedAt: at.toISOString(), changedBy: `api:${keyName}`.slice(0, 30), record: { endpointId: e.id } } });
    const deliveryId = (await this.store.enqueue(this.store.knex, { endpointId: e.id, eventId, eventType: TEST_EVENT_TYPE, payload }, at))!;
    await this.audit(e.id, keyId, 'test-sent', { eventId }, at);
    return (await this.store.delivery(deliveryId))!;
  }

  async deliveryOrProblem(id: string): Promise<DeliveryRow> {
    const d = /^[0-9a-f-]{36}$/i.test(id) ? await this.store.delivery(id.toLowerCase()) : undefined;
    if (!d) throw new ApiProblem('WEBHOOK_DELIVERY_NOT_FOUND', `No webhook delivery has the id ${id}.`);
    return d;
  }

  async resend(keyId: string, id: string): Promise<DeliveryRow> {
    const d = await this.deliveryOrProblem(id);
    const at = this.clock();
    await this.store.resend(d.id, at);
    await this.audit(d.endpointId, keyId, 'delivery-resent', { deliveryId: d.id, eventId: d.eventId }, at);
    return (await this.store.delivery(d.id))!;
  }

  async resendFailed(keyId: string, since: Date, endpointId: string | undefined): Promise<number> {
    if (endpointId) await this.endpointOrProblem(endpointId);
    const at = this.clock();
    const n = await this.store.resendFailed(since, endpointId?.toLowerCase(), at);
    if (endpointId) await this.audit(endpointId.toLowerCase(), keyId, 'failed-deliveries-resent', { since: since.toISOString(), count: n }, at);
    return n;
  }
}
