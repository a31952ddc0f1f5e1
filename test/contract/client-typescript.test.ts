/**
 * The typed TypeScript client (clients/typescript/client.ts) against the running server: every
 * operation of openapi.yaml is called through it at least once (CALLS below; an operation without
 * an entry fails the test by name), with the example bodies of the contract. Then what the client
 * adds: the problem document as a typed ApiError, and retries of exactly what the spec says may be
 * retried, with the same Idempotency-Key and traceparent (a scripted transport).
 *
 * Adding an operation: one line in CALLS (the query and match operations are covered by their path).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { startTestApp, type TestApp } from '../support/app';
import { EXAMPLE_IDS, FEED_EXAMPLE_IDS, seedEventExamples } from '../support/events';
import { serveOnLoopback, type LoopbackServer } from '../support/net';
import { ApiError, createAccountingClient, type AccountingClient } from '../../clients/typescript/client';
import { OPERATIONS } from '../../generated/operations';

const DOC = parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));

/** The first request-body example of an operation in openapi.yaml. */
function example(operationId: string): any {
  const op = OPERATIONS.find((o) => o.operationId === operationId)!;
  const content = DOC.paths[op.path][op.method.toLowerCase()].requestBody?.content?.['application/json'];
  const first = Object.values<any>(content?.examples ?? {})[0];
  return first?.value ?? content?.example ?? {};
}

/** `admin`: the same client with the admin key (the webhook operations are the company administrator's). */
type Call = (api: AccountingClient, body: any, admin: AccountingClient) => Promise<{ data?: unknown; response: Response }>;
const key = () => ({ header: { 'Idempotency-Key': `client-${Math.random().toString(36).slice(2)}` } });

/** operationId -> the call through the typed client. Query and match operations: `readCall`. */
const CALLS: Record<string, Call> = {
  ping: (api) => api.POST('/utility/ping', { body: {} }),
  lockDatabase: (api, body) => api.POST('/utility/lock', { body }),
  unlockDatabase: (api, body) => api.POST('/utility/un-lock', { body }),
  postLedgerTransaction: (api, body) => api.POST('/ledger-transactions', { body, params: key() }),
  postApInvoice: (api, body) => api.POST('/ap-invoices', { body, params: key() }),
  postInventoryAllocation: (api, body) => api.POST('/inventory-allocations', { body, params: key() }),
  postPurchaseOrderReceipt: (api, body) => api.POST('/purchase-order-receipts', { body, params: key() }),
  postPayrollBatch: (api, body) => api.POST('/payroll-records/post', { body, params: key() }),
  postServiceWorkOrder: (api, body) => api.POST('/service-invoices/post', { body, params: key() }),
  postServiceInventory: (api, body) => api.POST('/service-inventories', { body, params: key() }),
  createWebhookEndpoint: (_api, body, admin) => admin.POST('/webhook-endpoints', { body }),
  queryWebhookEndpoints: (_api, body, admin) => admin.POST('/webhook-endpoints/query', { body }),
  updateWebhookEndpoint: (_api, body, admin) => admin.POST('/webhook-endpoints/{id}/update', { body, params: { path: { id: EXAMPLE_IDS.endpoint } } }),
  rotateWebhookEndpointSecret: (_api, body, admin) => admin.POST('/webhook-endpoints/{id}/rotate-secret', { body, params: { path: { id: EXAMPLE_IDS.endpoint } } }),
  testWebhookEndpoint: (_api, body, admin) => admin.POST('/webhook-endpoints/{id}/test', { body, params: { path: { id: EXAMPLE_IDS.endpoint } } }),
  deleteWebhookEndpoint: (_api, body, admin) => admin.POST('/webhook-endpoints/{id}/delete', { body, params: { path: { id: EXAMPLE_IDS.endpointToDelete } } }),
  queryWebhookDeliveries: (_api, body, admin) => admin.POST('/webhook-deliveries/query', { body }),
  resendWebhookDelivery: (_api, body, admin) => admin.POST('/webhook-deliveries/{id}/resend', { body, params: { path: { id: EXAMPLE_IDS.delivery } } }),
  resendFailedWebhookDeliveries: (_api, body, admin) => admin.POST('/webhook-deliveries/resend-failed', { body }),
  // The audit log is the administrator's too.
  queryAuditLog: (_api, body, admin) => admin.POST('/audit-log/query', { body }),
  queryEvents: (api, body) => api.POST('/events/query', { body }),
  createEventFeed: (_api, body, admin) => admin.POST('/event-feeds', { body }),
  queryEventFeeds: (_api, body, admin) => admin.POST('/event-feeds/query', { body }),
  updateEventFeed: (_api, body, admin) => admin.POST('/event-feeds/{id}/update', { body, params: { path: { id: FEED_EXAMPLE_IDS.feed } } }),
  deleteEventFeed: (_api, body, admin) => admin.POST('/event-feeds/{id}/delete', { body, params: { path: { id: FEED_EXAMPLE_IDS.feedToDelete } } }),
};

/** POST /{entity}/query and /{entity}/match: one generic call over the typed client. */
const readCall =
  (opPath: string): Call =>
  (api, body) =>
    (api.POST as (p: string, init: { body: unknown }) => Promise<{ data?: unknown; response: Response }>)(opPath, { body });

let t: TestApp;
let server: LoopbackServer;
let baseUrl: string;

before(async () => {
  t = await startTestApp({ config: { rateLimitPerMinute: 0 } });
  // The webhook endpoints and the delivery the Events examples name (not part of the demo company).
  await seedEventExamples(t);
  server = await serveOnLoopback(t.app);
  baseUrl = `${server.url}/api/v3`;
});
after(async () => {
  await server.close();
  await t.close();
});

describe('every operation through the client', () => {
  test('each operation of openapi.yaml has a call, and each call answers 2xx with typed data', async () => {
    const missing = OPERATIONS.filter((op) => !CALLS[op.operationId] && !/\/(query|match)$/.test(op.path)).map((op) => op.operationId);
    assert.deepEqual(missing, [], `operations with no client call in test/contract/client-typescript.test.ts CALLS: ${missing.join(', ')}`);

    const api = createAccountingClient({ baseUrl, apiKey: t.apiKey });
    const admin = createAccountingClient({ baseUrl, apiKey: t.adminKey });
    // Lock and un-lock last: while locked every other operation answers 423.
    const ordered = [...OPERATIONS].sort((a, b) => Number(a.path.includes('lock')) - Number(b.path.includes('lock')));
    const called: string[] = [];
    for (const op of ordered) {
      const call = CALLS[op.operationId] ?? readCall(op.path);
      try {
        const { data, response } = await call(api, example(op.operationId), admin);
        assert.ok(response.ok, `${op.operationId}: ${response.status}`);
        assert.ok(data !== undefined && data !== null, `${op.operationId} returns a body`);
        called.push(op.operationId);
      } catch (err) {
        assert.fail(`${op.operationId} through the client: ${err instanceof ApiError ? `${err.status} ${err.code} ${err.message}` : String(err)}`);
      }
    }
    assert.deepEqual(called.sort(), OPERATIONS.map((o) => o.operationId).sort());

    // The server saw each of them answered 2xx (the request counter, labelled by operationId).
    const metric = t.app.locals.metrics.registry.getSingleMetric('http_requests_total');
    const ok = new Set((await metric.get()).values.filter((v: any) => /^2/.test(String(v.labels.status))).map((v: any) => v.labels.operation));
    assert.deepEqual(OPERATIONS.map((o) => o.operationId).filter((id) => !ok.has(id)), []);
  });
});

describe('the event feed through the client', () => {
  test('a consumer reads every kept event once, resuming from page.nextCursor; an unknown cursor is a typed 410', async () => {
    const api = createAccountingClient({ baseUrl, apiKey: t.apiKey });
    const ids: string[] = [];
    let after: string | undefined;
    for (let calls = 0; calls < 20; calls++) {
      const { data } = await api.POST('/events/query', { body: { ...(after ? { after } : {}), select: ['id', 'type', 'data.record'], page: { pageSize: 1 } } });
      assert.ok(data);
      for (const event of data.data) ids.push(String(event.id));
      after = data.page.nextCursor;
      if (data.page.returnedCount === 0) break;
    }
    const kept = (await t.knex('evtlog').orderBy('seq').select('event_id')).map((r: { event_id: string }) => r.event_id);
    assert.ok(kept.length > 0);
    assert.deepEqual(ids, kept);
    await assert.rejects(api.POST('/events/query', { body: { after: 'bm90LWEtY3Vyc29y' } }), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 410);
      assert.equal(err.code, 'EVENT_CURSOR_EXPIRED');
      assert.equal(typeof err.problem.oldestCursor, 'string');
      return true;
    });
  });
});

describe('what the client adds', () => {
  test('non-2xx answers are thrown as ApiError with code, correlation id and errors[]', async () => {
    const api = createAccountingClient({ baseUrl, apiKey: t.apiKey });
    await assert.rejects(
      api.POST('/vendors/query', { body: { select: ['noSuchField'] } }),
      (err: unknown) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.status, 400);
        assert.equal(err.code, 'UNKNOWN_FIELD');
        assert.match(String(err.correlationId), /^[0-9a-f-]{36}$/);
        assert.deepEqual(err.errors.map((e) => e.field), ['select[0]']);
        return true;
      },
    );
    const stranger = createAccountingClient({ baseUrl, apiKey: '00000000-0000-4000-8000-000000000000' });
    await assert.rejects(stranger.POST('/utility/ping', { body: {} }), (err: unknown) => err instanceof ApiError && err.code === 'UNAUTHORIZED' && err.status === 401);
  });

  test('a write sent twice under the same Idempotency-Key is answered once and replayed', async () => {
    const api = createAccountingClient({ baseUrl, apiKey: t.apiKey });
    const params = key();
    const body = example('postLedgerTransaction');
    const first = await api.POST('/ledger-transactions', { body, params });
    const again = await api.POST('/ledger-transactions', { body, params });
    // (The example's transaction number was posted by the every-operation test: applied or replayed.)
    assert.match(String(first.response.headers.get('idempotency-status')), /^(applied|replayed)$/);
    assert.equal(again.response.headers.get('idempotency-status'), 'replayed');
    assert.deepEqual(again.data, first.data);
  });

  /** A transport that answers from a script and records what it was sent. */
  const scripted = (answers: Array<[number, Record<string, string>?]>) => {
    const seen: Request[] = [];
    const waits: number[] = [];
    const api = createAccountingClient({
      baseUrl: 'http://books.invalid/api/v3',
      apiKey: '11111111-1111-4111-8111-111111111111',
      retry: { baseDelayMs: 10 },
      sleep: async (ms) => void waits.push(ms),
      fetch: async (request) => {
        seen.push(request);
        const [status, headers] = answers[Math.min(seen.length - 1, answers.length - 1)]!;
        const body = status < 300 ? { status: 'ok', engine: 'sqlite', serverTime: '2026-01-01T00:00:00Z' } : { type: 'x', title: 't', status, detail: 'd', instance: '/', correlationId: 'c' };
        return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
      },
    });
    return { api, seen, waits };
  };
  const write = (api: AccountingClient) => api.POST('/ledger-transactions', { body: example('postLedgerTransaction'), params: key() });

  for (const [status, headers, wait] of [
    [409, { 'x-error-code': 'IDEMPOTENCY_KEY_IN_FLIGHT', 'retry-after': '2' }, 2000],
    [423, { 'x-error-code': 'MAINTENANCE_LOCK', 'retry-after': '3' }, 3000],
    [429, { 'x-error-code': 'RATE_LIMITED', 'retry-after': '1' }, 1000],
    [503, { 'x-error-code': 'SERVICE_UNAVAILABLE', 'retry-after': '5' }, 5000],
  ] as const) {
    test(`${status} ${headers['x-error-code']}: retried after Retry-After with the same Idempotency-Key and traceparent`, async () => {
      const { api, seen, waits } = scripted([[status, headers], [200]]);
      const { data } = await write(api);
      assert.ok(data);
      assert.equal(seen.length, 2);
      assert.deepEqual(waits, [wait]);
      assert.equal(seen[0]!.headers.get('idempotency-key'), seen[1]!.headers.get('idempotency-key'));
      assert.match(String(seen[0]!.headers.get('traceparent')), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      assert.equal(seen[0]!.headers.get('traceparent'), seen[1]!.headers.get('traceparent'));
      assert.equal(seen[1]!.headers.get('x-api-key'), '11111111-1111-4111-8111-111111111111');
    });
  }

  test('502 and 504: retried with back-off and the same key, up to maxAttempts, then thrown', async () => {
    const { api, seen, waits } = scripted([[502], [504], [504], [504], [200]]);
    await assert.rejects(write(api), (err: unknown) => err instanceof ApiError && err.status === 504);
    assert.equal(seen.length, 4, 'four attempts in all');
    assert.equal(new Set(seen.map((r) => r.headers.get('idempotency-key'))).size, 1);
    assert.equal(waits.length, 3);
    assert.ok(waits[2]! > waits[0]!, `back-off grows: ${waits.join(', ')}`);
  });

  for (const [status, headers] of [
    [400, {}],
    [409, { 'x-error-code': 'IDEMPOTENCY_KEY_REUSED' }],
    [422, {}],
    [500, {}],
    [429, {}],
    [503, { 'retry-after': '300' }],
    [502, { 'x-error-code': 'STORED_VALUE_UNREADABLE' }],
  ] as Array<[number, Record<string, string>]>) {
    test(`${status} ${headers['x-error-code'] ?? ''}${headers['retry-after'] ? ` Retry-After ${headers['retry-after']}` : ''}: not retried`, async () => {
      const { api, seen } = scripted([[status, headers], [200]]);
      await assert.rejects(write(api), (err: unknown) => err instanceof ApiError && err.status === status);
      assert.equal(seen.length, 1);
    });
  }

  test('reads and utility calls carry no Idempotency-Key', async () => {
    const { api, seen } = scripted([[200]]);
    await api.POST('/utility/ping', { body: {} });
    assert.equal(seen[0]!.headers.get('idempotency-key'), null);
  });
});
