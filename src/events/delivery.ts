import { SERVICE_ACTOR } from '../audit';
import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import type { ApiKeyRepository } from '../storage/api-keys';
import { nextAttemptAt, retryAfterMs } from './schedule';
import { signedHeaders } from './signing';
import type { DeliveryRow, EndpointRow, EventStore } from './store';
import { checkTarget, guardedLookup, TargetRefused, type TargetPolicy } from './targets';
import { ownerMayReceive } from './visibility';

/**
 * Delivery from the outbox (`whkdlv`): due rows of active endpoints are claimed (a conditional
 * UPDATE only one process wins), POSTed signed, and each attempt is recorded (`whkatt`, unique
 * per delivery and attempt number) together with the delivery's next state. A process that dies
 * mid-attempt leaves a claim that expires; the row is then claimed again, so nothing is lost.
 *
 * Outcomes: 2xx succeeded; 410 Gone disables the endpoint (no retry); anything else (3xx, since
 * redirects are not followed, 4xx, 5xx, timeout, refused address, network error) is retried on
 * the schedule of ./schedule.ts, honouring Retry-After; after the last attempt the delivery failed.
 */

export interface SendResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

export type Sender = (url: URL, headers: Record<string, string>, body: string, timeoutMs: number) => Promise<SendResult>;

/** Node's http(s) client: no redirects followed, a timeout, and the address guard at connect. */
export function httpSender(policy: TargetPolicy): Sender {
  const lookup = guardedLookup(policy) as unknown as http.AgentOptions['lookup'];
  const agents = {
    'https:': new https.Agent({ keepAlive: true, maxSockets: 32, lookup } as https.AgentOptions),
    'http:': new http.Agent({ keepAlive: true, maxSockets: 32, lookup } as http.AgentOptions),
  };
  return (url, headers, body, timeoutMs) =>
    new Promise<SendResult>((resolve, reject) => {
      const client = url.protocol === 'https:' ? https : http;
      const req = client.request(
        url,
        {
          method: 'POST',
          agent: agents[url.protocol as 'https:' | 'http:'],
          headers: { 'content-type': 'application/json', 'user-agent': 'accounting-integration-webhooks/3', 'content-length': Buffer.byteLength(body), ...headers },
          timeout: timeoutMs,
        },
        (res) => {
          res.resume(); // the body is not used
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
          res.on('error', reject);
        },
      );
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      req.on('close', () => clearTimeout(timer));
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
}

export interface DeliveryOptions {
  store: EventStore;
  keys: ApiKeyRepository;
  logger: Logger;
  clock: () => Date;
  policy: TargetPolicy;
  sender: Sender;
  worker: string;
  timeoutMs: number;
  /** Deliveries claimed per cycle (sent concurrently). */
  batchSize: number;
  retentionMs: number;
  random?: () => number;
}

export interface DeliveryCycle {
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  purged: number;
}

export class DeliveryWorker {
  private lastPurge = 0;
  constructor(private readonly o: DeliveryOptions) {}

  /** Claims and sends what is due now (the timer calls this; tests call it directly). */
  async runOnce(): Promise<DeliveryCycle> {
    const { store, clock } = this.o;
    const at = clock();
    const cycle: DeliveryCycle = { claimed: 0, succeeded: 0, retried: 0, failed: 0, purged: 0 };
    if (at.getTime() - this.lastPurge >= 10 * 60_000) {
      cycle.purged = await this.purge(at);
      this.lastPurge = at.getTime();
    }
    // The claim outlives one attempt's timeout with room to record it.
    const claims = await store.claimDue(this.o.worker, at, new Date(at.getTime() + 2 * this.o.timeoutMs + 30_000), this.o.batchSize);
    cycle.claimed = claims.length;
    // Each endpoint and its owner's key are read once per cycle.
    const endpoints = new Map<string, { endpoint: EndpointRow | undefined; ownerActive: boolean }>();
    for (const d of claims) {
      if (endpoints.has(d.endpointId)) continue;
      const endpoint = await store.endpoint(d.endpointId);
      endpoints.set(d.endpointId, { endpoint, ownerActive: endpoint !== undefined && ownerMayReceive(await this.o.keys.findById(endpoint.ownerKeyId)) });
    }
    const outcomes = await Promise.all(claims.map((d) => this.attempt(d, endpoints.get(d.endpointId)!)));
    for (const o of outcomes) cycle[o]++;
    return cycle;
  }

  /** Deletes the delivery log older than the retention (30 days). */
  async purge(at: Date): Promise<number> {
    return this.o.store.purge(new Date(at.getTime() - this.o.retentionMs));
  }

  private async attempt(d: DeliveryRow, target: { endpoint: EndpointRow | undefined; ownerActive: boolean }): Promise<'succeeded' | 'retried' | 'failed'> {
    const { endpoint } = target;
    const { store, clock } = this.o;
    const at = clock();
    const attempt = d.attempts + 1;
    const started = Date.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let retryAfter: number | undefined;
    let gone = false;
    if (!endpoint || endpoint.state !== 'active') {
      error = 'endpoint is not active';
    } else if (!target.ownerActive) {
      await store.pauseEndpointsOf(endpoint.ownerKeyId, 'owner key no longer active', at);
      await store.knex('whkdlv').where({ id: d.id }).update({ claimed_by: null, claimed_until: null });
      return 'retried';
    } else {
      try {
        const url = await checkTarget(endpoint.url, this.o.policy, { resolve: false });
        // Decrypted per attempt (a secret under a key this process lacks fails this attempt only).
        const secrets = store.signingSecrets(endpoint, at);
        const res = await this.o.sender(url, signedHeaders(d.eventId, at, d.payload, secrets), d.payload, this.o.timeoutMs);
        statusCode = res.status;
        if (res.status === 410) gone = true;
        if (res.status < 200 || res.status > 299) {
          error = res.status >= 300 && res.status < 400 ? `redirect (${res.status}) not followed` : `HTTP ${res.status}`;
          const ra = res.headers['retry-after'];
          retryAfter = retryAfterMs(Array.isArray(ra) ? ra[0] : ra, at);
        }
      } catch (err) {
        error = err instanceof TargetRefused ? `refused target: ${err.message}` : err instanceof Error ? err.message : String(err);
      }
    }
    const durationMs = Date.now() - started;
    const ok = error === null;
    // The schedule counts this window's attempts; `attempt` numbers every attempt of the delivery.
    const next = ok || gone ? null : nextAttemptAt(attempt - d.attemptsAtWindowStart, at, d.windowStart, retryAfter, this.o.random);
    const status = ok ? 'succeeded' : next ? 'pending' : 'failed';
    const recorded = await store.recordAttempt(d.id, { attempt, attemptedAt: at, statusCode, outcome: ok ? 'succeeded' : gone ? 'gone' : 'failed', error, durationMs }, { status, nextAttemptAt: next }, d.windowStart);
    if (recorded && gone && endpoint) {
      await store.updateEndpoint(endpoint.id, { state: 'disabled', stateReason: 'the endpoint answered 410 Gone' }, at);
      await store.audit(endpoint.id, SERVICE_ACTOR, 'disabled', { reason: '410 Gone', deliveryId: d.id }, at);
    }
    if (!ok) this.o.logger.info({ deliveryId: d.id, eventId: d.eventId, attempt, statusCode, error, nextAttemptAt: next?.toISOString() }, 'webhook delivery attempt failed');
    return ok ? 'succeeded' : next ? 'retried' : 'failed';
  }
}
