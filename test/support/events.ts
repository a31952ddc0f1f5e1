/**
 * Events wing under test control: a settable clock, a DNS stub and (optionally) an HTTP client
 * stub, installed as services.events so the HTTP routes use it too.
 */
import { Events } from '../../src/events';
import type { Sender } from '../../src/events/delivery';
import type { Resolver } from '../../src/events/targets';
import { after } from 'node:test';
import { startTestApp, type TestApp } from './app';
import type { Config } from '../../src/config';
import { readRecordsById } from '../../src/engines/query/read-records';
import { eventId, type DetectedEvent } from '../../src/events/detector';
import { eventDocument } from '../../src/events/document';
import { fromDbTime } from '../../src/storage/db-time';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export interface EventsHarness {
  events: Events;
  clock: { now: Date; advance(ms: number): void; set(d: Date): void };
  dns: Map<string, string[] | (() => string[])>;
}

export function installEvents(t: TestApp, options: { allowPrivate?: boolean; sender?: Sender; lagSeconds?: number; start?: Date; random?: () => number; feedPollMs?: number } = {}): EventsHarness {
  const clock = {
    now: options.start ?? new Date(),
    advance(ms: number) {
      this.now = new Date(this.now.getTime() + ms);
    },
    set(d: Date) {
      this.now = d;
    },
  };
  const dns = new Map<string, string[] | (() => string[])>();
  const resolver: Resolver = async (host) => {
    const entry = dns.get(host);
    if (!entry) {
      const err = new Error(`getaddrinfo ENOTFOUND ${host}`) as NodeJS.ErrnoException;
      err.code = 'ENOTFOUND';
      throw err;
    }
    const list = typeof entry === 'function' ? entry() : entry;
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  const events = new Events({
    knex: t.knex,
    engine: t.engine,
    keys: t.services.keys,
    secrets: t.services.secrets,
    audit: t.services.audit,
    logger: t.services.logger,
    config: {
      eventDetectionIntervalSeconds: 300,
      eventDetectionLagSeconds: options.lagSeconds ?? 0,
      webhookAllowPrivateTargets: options.allowPrivate ?? false,
      webhookTimeoutMs: 2000,
      ...(options.feedPollMs !== undefined ? { eventFeedPollMs: options.feedPollMs } : {}),
    },
    clock: () => clock.now,
    resolver,
    ...(options.sender ? { sender: options.sender } : {}),
    random: options.random ?? (() => 0.5),
  });
  t.services.events = events;
  return { events, clock, dns };
}

/** Ids the Events examples of openapi.yaml name (created by `seedEventExamples`). */
/** No endpoints, deliveries, attempts, cursors or lease: a test's events start from nothing. */
export async function emptyWebhookTables(t: TestApp): Promise<void> {
  for (const table of ['whkatt', 'whkdlv', 'whkept', 'whkcur', 'whklse']) await t.knex(table).delete();
}

export const EXAMPLE_IDS = {
  endpoint: '5b0c3f1e-8d6a-4e0b-9c57-2f1d7a9e4b10',
  endpointToDelete: '7d4e2a90-1c3b-4f5e-8a6d-9b0c1e2f3a40',
  delivery: '3e9a1b2c-4d5e-4f60-8a7b-9c0d1e2f3a50',
} as const;

/**
 * Webhook endpoints are not part of the demo company (they belong to the installation, not to
 * the books): test/contract/contract-examples.test.ts creates the ones its examples name, owned by the
 * admin key: a paused endpoint with a failed delivery, and one to delete.
 */
export async function seedEventExamples(t: TestApp): Promise<void> {
  const owner = (await t.services.keys.findByKey(t.adminKey))!.id;
  const store = t.services.events.store;
  const now = new Date();
  for (const [id, state] of [
    [EXAMPLE_IDS.endpoint, 'paused'],
    [EXAMPLE_IDS.endpointToDelete, 'active'],
  ] as const) {
    await t.knex('whkept').insert({
      id,
      url: 'https://hooks.example.com/accounting',
      description: 'contract example',
      event_types: JSON.stringify(['payable_invoice.created', 'payable_invoice.updated']),
      state,
      state_reason: state === 'paused' ? 'paused by an administrator' : null,
      owner_key_id: owner,
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      created_at: store.t(now),
      updated_at: store.t(now),
    });
  }
  await t.knex('whkdlv').insert({
    id: EXAMPLE_IDS.delivery,
    endpoint_id: EXAMPLE_IDS.endpoint,
    event_id: 'evt_example',
    event_type: 'payable_invoice.updated',
    payload: '{}',
    status: 'failed',
    attempts: 10,
    created_at: store.t(now),
    window_start: store.t(now),
    next_attempt_at: null,
    last_attempt_at: store.t(now),
    last_status_code: 503,
    last_error: 'HTTP 503',
  });
  await seedFeedExamples(t);
}

/** Ids the event feed examples of openapi.yaml name (created by `seedFeedExamples`). */
export const FEED_EXAMPLE_IDS = {
  feed: '6c1d4f2a-9e7b-4c3d-8a5f-3b2e1d0c9f80',
  feedToDelete: '8e2f5a3b-0c4d-4e6f-9a7b-4c3d2e1f0a91',
} as const;

/**
 * Event feeds and kept events are installation data too: the feeds the examples name (owned by
 * the admin key), and the AP invoice events of the first demo invoices in the event log, made by
 * the detector's own document function, so that POST /events/query finds events.
 */
export async function seedFeedExamples(t: TestApp, invoices = 3): Promise<void> {
  const owner = (await t.services.keys.findByKey(t.adminKey))!.id;
  const feed = t.services.events.feed;
  const now = new Date();
  for (const id of [FEED_EXAMPLE_IDS.feed, FEED_EXAMPLE_IDS.feedToDelete]) {
    await t.knex('evtfed').insert({
      id,
      description: 'contract example',
      event_types: JSON.stringify(['payable_invoice.created', 'payable_invoice.updated']),
      state: 'active',
      state_reason: null,
      owner_key_id: owner,
      last_read_at: null,
      created_at: feed.store.t(now),
      updated_at: feed.store.t(now),
    });
  }
  const rows = await t.knex('acpinv').orderBy('recnum').limit(invoices).select('_idnum', 'upddte', 'updusr');
  const records = await readRecordsById(t.knex, 'ap-invoices', rows.map((r) => String(r._idnum)));
  const events: DetectedEvent[] = rows.map((r, i) => {
    const stamp = fromDbTime(r.upddte)!;
    return { id: eventId('payable_invoice', String(r._idnum), 'updated', stamp), kind: 'payable_invoice', document: eventDocument('payable_invoice', 'updated', now, r.updusr ?? null, stamp, records[i]!) };
  });
  await t.knex.transaction((trx) => feed.append(trx, events));
}

/** The public contract, as integrators read it. */
export const PUBLIC_DOC = YAML.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.public.yaml'), 'utf8'));

/** The first request example of a POST operation of the contract (it runs on the demo company). */
export function exampleBody(operationId: string): any {
  for (const item of Object.values<any>(PUBLIC_DOC.paths)) {
    const op = item.post;
    if (op?.operationId === operationId) return Object.values<any>(op.requestBody.content['application/json'].examples)[0].value;
  }
  throw new Error(operationId);
}

/** A test app with the events wing, and every body its stub sender was given (parsed). */
export interface FreshEvents {
  t: TestApp;
  h: EventsHarness;
  sent: any[];
}

/**
 * For a test file that wants a fresh app per test: registers closing them all after the file, and
 * returns `fresh`, which starts one with the events wing under a stub sender that answers 204 and
 * keeps what it was given, hooks.example.com resolving to a public address.
 */
export function freshEventsApps(): (options?: { config?: Partial<Config>; lagSeconds?: number; start?: Date }) => Promise<FreshEvents> {
  const apps: TestApp[] = [];
  after(async () => {
    for (const t of apps) await t.close();
  });
  return async (options = {}) => {
    const t = await startTestApp(options.config ? { config: options.config } : {});
    apps.push(t);
    const sent: any[] = [];
    const h = installEvents(t, {
      ...(options.lagSeconds !== undefined ? { lagSeconds: options.lagSeconds } : {}),
      ...(options.start ? { start: options.start } : {}),
      sender: async (_url, _headers, body) => {
        sent.push(JSON.parse(body));
        return { status: 204, headers: {} };
      },
    });
    h.dns.set('hooks.example.com', ['93.184.215.14']);
    return { t, h, sent };
  };
}
