/**
 * /api/v2, the frozen compatibility surface (spec, Versioning): v2 shapes in, legacy bodies out,
 * the same engines and guards as v3. Asserted through HTTP and the database.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

const journal = (n: string, over: Record<string, unknown> = {}) => ({
  transactionNumber: n,
  transactionDate: '2026-11-30',
  description: 'v2 adapter journal',
  sourceNumber: 102,
  lines: [
    { lineNumber: 1, ledgerAccount: 7050, description: 'debit', debitAmount: 12.34 },
    { lineNumber: 2, ledgerAccount: 1310, description: 'credit', creditAmount: 12.34 },
  ],
  ...over,
});

function assertDeprecated(res: { headers: Record<string, any> }): void {
  assert.equal(res.headers.deprecation, '@1793491200');
  assert.match(String(res.headers.link), /<\/openapi\.yaml>; rel="successor-version"/);
  assert.equal(res.headers.sunset, undefined, 'no Sunset until an operator fixes the date (docs/decisions/0028-the-frozen-v2-surface-and-the-migration-comparison.md)');
}

test('query/part: v2 request names, page.count = v3 totalCount, same records as v3', async () => {
  const v3 = await t.post('/api/v3/parts/query', { select: ['id', 'partCode'], orderBy: ['partCode ASC'], page: { pageNumber: 2, pageSize: 3 } });
  assert.equal(v3.status, 200);
  const v2 = await t.post('/api/v2/query/part', { selectFields: ['id', 'partCode'], orderBy: ['partCode ASC'], offset: 3, pageSize: 3 });
  assert.equal(v2.status, 200, v2.text);
  assertDeprecated(v2);
  assert.equal(v2.body.responseType, 'Success');
  assert.equal(v2.body.entity, 'part');
  assert.deepEqual(v2.body.page, { offset: 3, pageSize: 3, count: v3.body.page.totalCount, returnedCount: 3 });
  assert.deepEqual(v2.body.data, v3.body.data);
  // offset is a row offset, not a page index: offset 4 starts one row later.
  const shifted = await t.post('/api/v2/query/part', { selectFields: ['id'], orderBy: ['partCode ASC'], offset: 4, pageSize: 2 });
  assert.equal(shifted.body.data[0].id, v3.body.data[1].id);
});

test('filter (singular) and withChildren: true map to filters and every child collection', async () => {
  const filters = { match: { field: 'vendorNumber', operator: '>', value: 0 } };
  const v3 = await t.post('/api/v3/ap-invoices/query', { filters, children: ['lines'], page: { pageSize: 2 } });
  assert.equal(v3.status, 200, v3.text);
  const v2 = await t.post('/api/v2/query/ap-invoice', { filter: filters, withChildren: true, pageSize: 2 });
  assert.equal(v2.status, 200, v2.text);
  assert.equal(v2.body.page.count, v3.body.page.totalCount);
  assert.deepEqual(v2.body.data, v3.body.data);
  assert.ok(Array.isArray(v2.body.data[0].lines));
});

test('unknown request fields are ignored (v2 never rejected them) and logged; v3 names are not read on v2', async () => {
  const all = await t.post('/api/v2/query/part', {});
  const res = await t
    .post('/api/v2/query/part', { filters: { match: { field: 'partCode', operator: '=', value: 'nope' } }, bogus: 1 })
    .set('x-context-id', 'ctx-42')
    .set('x-integration-id', 'erp-7');
  assert.equal(res.status, 200);
  assert.equal(res.body.page.count, all.body.page.count);
  const line = t.logs.find((l) => l.msg === 'request' && l.correlationId === res.headers['x-correlation-id']);
  assert.deepEqual(line?.v2, { contextId: 'ctx-42', integrationId: 'erp-7', ignoredFields: ['filters', 'bogus'] });
  assert.equal(line?.operationId, 'v2Query');
  // v3 keeps not knowing those headers.
  const v3 = await t.post('/api/v3/parts/query', { page: { pageSize: 1 } }).set('x-context-id', 'ctx-43');
  const v3line = t.logs.find((l) => l.msg === 'request' && l.correlationId === v3.headers['x-correlation-id']);
  assert.equal(v3line?.v2, undefined);
});

test('unknown entity: 200 responseType Error (no 404 in v2); match on an entity without match likewise', async () => {
  for (const path of ['/api/v2/query/parts', '/api/v2/query/nothing', '/api/v2/match/ledger-account']) {
    const res = await t.post(path, path.includes('match') ? { matchString: 'a', matchFields: ['x'], selectFields: ['id'], maxDistance: 1 } : {});
    assert.equal(res.status, 200, path);
    assert.equal(res.body.responseType, 'Error');
    assert.equal(res.body.errorCode, 'UNKNOWN_ENTITY');
    assert.equal(res.headers['x-error-code'], 'UNKNOWN_ENTITY');
    assert.match(res.body.message, /entity/);
  }
  const route = await t.post('/api/v2/nowhere', {});
  assert.equal(route.status, 200);
  assert.equal(route.body.errorCode, 'ROUTE_NOT_FOUND');
});

test('validation failures keep 400 with the legacy body naming the v2 field', async () => {
  const res = await t.post('/api/v2/query/part', { selectFields: ['noSuchField'] });
  assert.equal(res.status, 400);
  assertDeprecated(res);
  assert.equal(res.body.responseType, undefined);
  assert.equal(res.body.errorCode, 'UNKNOWN_FIELD');
  assert.equal(res.body.errors[0].field, 'selectFields[0]');
  assert.equal(res.body.correlationId, res.headers['x-correlation-id']);
  for (const [body, field] of [
    [{ offset: -1 }, 'offset'],
    [{ pageSize: 0 }, 'pageSize'],
    [{ withChildren: 'yes' }, 'withChildren'],
    [{ offset: 1e300 }, 'offset'],
  ] as const) {
    const r = await t.post('/api/v2/query/part', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.errorCode, 'VALIDATION_FAILED');
    assert.ok(JSON.stringify(r.body.errors).includes(field), r.text);
  }
  const malformed = await t.http.post('/api/v2/query/part').set('x-api-key', t.apiKey).set('Content-Type', 'application/json').send('{"selectFields":');
  assert.equal(malformed.status, 400);
  assert.equal(malformed.body.errorCode, 'MALFORMED_JSON');
});

test('authentication holds on v2: 401 with the legacy body, Deprecation included', async () => {
  const res = await t.http.post('/api/v2/query/part').set('Content-Type', 'application/json').send({});
  assert.equal(res.status, 401);
  assertDeprecated(res);
  assert.equal(res.body.errorCode, 'UNAUTHORIZED');
  assert.ok(res.headers['x-correlation-id']);
});

test('filter depth holds on v2 (the guard reads `filter`)', async () => {
  let node: Record<string, unknown> = { match: { field: 'partCode', operator: '=', value: 'x' } };
  for (let i = 0; i < t.services.config.maxFilterDepth + 1; i += 1) node = { and: [node] };
  const res = await t.post('/api/v2/query/part', { filter: node });
  assert.equal(res.status, 400);
  assert.equal(res.body.errorCode, 'FILTER_TOO_DEEP');
  assert.equal(res.body.errors[0].field, 'filter');
});

test('match/vendor: selectFields and filter, same result as v3', async () => {
  const v3 = await t.post('/api/v3/vendors/match', { matchString: 'supply', matchFields: ['vendorName'], select: ['id', 'vendorName'], maxDistance: 5 });
  assert.equal(v3.status, 200, v3.text);
  const v2 = await t.post('/api/v2/match/vendor', { matchString: 'supply', matchFields: ['vendorName'], selectFields: ['id', 'vendorName'], maxDistance: 5 });
  assert.equal(v2.status, 200, v2.text);
  assert.equal(v2.body.responseType, 'Success');
  assert.deepEqual(v2.body.data, v3.body.data);
});

test('post/ledger-transaction: posts through the same runner; business failures are 200 responseType Error; no Idempotency-Key, no dry run', async () => {
  // v2 has no dry run: ?dryRun is refused (400), never silently posted for real.
  const dry = await t.post('/api/v2/post/ledger-transaction?dryRun=true', journal('V2-0001'));
  assert.equal(dry.status, 400, dry.text);
  assert.equal(dry.body.errors[0].field, 'query.dryRun');
  assert.equal((await t.knex('lgrtrn').where({ trnnum: 'V2-0001' })).length, 0);
  // An Idempotency-Key header is ignored: v2 writes are not deduplicated.
  const res = await t.post('/api/v2/post/ledger-transaction', journal('V2-0001')).set('Idempotency-Key', 'ignored-by-v2');
  assert.equal(res.status, 200, res.text);
  assertDeprecated(res);
  assert.equal(res.body.responseType, 'Success');
  assert.equal(res.headers['idempotency-status'], undefined);
  assert.equal(res.body.response.dryRun, undefined);
  const rows = await t.knex('lgrtrn').where({ recnum: res.body.response.document.recordNumber });
  assert.equal(rows.length, 1);

  const unbalanced = await t.post('/api/v2/post/ledger-transaction', journal('V2-0002', { lines: [
    { lineNumber: 1, ledgerAccount: 7050, debitAmount: 10 },
    { lineNumber: 2, ledgerAccount: 1310, creditAmount: 5 },
  ] }));
  assert.equal(unbalanced.status, 200, unbalanced.text);
  assert.equal(unbalanced.body.responseType, 'Error');
  assert.equal(unbalanced.body.errorCode, 'JOURNAL_UNBALANCED');

  const closed = await t.post('/api/v2/post/ledger-transaction', journal('V2-0003', { transactionDate: '2027-06-30' }));
  assert.equal(closed.status, 200, closed.text);
  assert.equal(closed.body.responseType, 'Error');
  assert.equal(closed.body.errorCode, 'PERIOD_CLOSED');
  const none = await t.knex('lgrtrn').whereIn('trnnum', ['V2-0002', 'V2-0003']);
  assert.equal(none.length, 0);

  const bad = await t.post('/api/v2/post/ledger-transaction', { ...journal('V2-0004'), lines: 'x' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errorCode, 'VALIDATION_FAILED');
});

test('utility paths: legacy bodies; the lock gate holds on v2 reads', async () => {
  const ping = await t.post('/api/v2/utility/ping');
  assert.equal(ping.status, 200, ping.text);
  assert.equal(ping.body.responseType, 'Success');
  assert.equal(ping.body.status, 'ok');
  const lock = await t.post('/api/v2/utility/lock', { userName: 'v2 maintainer' }, t.adminKey);
  assert.equal(lock.status, 200, lock.text);
  assert.equal(lock.body.responseType, 'Success');
  assert.equal(lock.body.status, 'locked');
  try {
    const read = await t.post('/api/v2/query/part', {});
    assert.equal(read.status, 423);
    assert.equal(read.body.errorCode, 'MAINTENANCE_LOCK');
    const other = await t.post('/api/v2/utility/un-lock', { userName: 'someone else' });
    assert.equal(other.status, 200);
    assert.equal(other.body.responseType, 'Error');
  } finally {
    const unlock = await t.post('/api/v2/utility/un-lock', { userName: 'v2 maintainer' }, t.adminKey);
    assert.equal(unlock.status, 200, unlock.text);
    assert.equal(unlock.body.responseType, 'Success');
  }
});

test('v3 keeps refusing v2 fields with V2_FIELD_REJECTED', async () => {
  const res = await t.post('/api/v3/parts/query', { selectFields: ['id'] });
  assert.equal(res.status, 400);
  assert.equal(res.headers['x-error-code'], 'V2_FIELD_REJECTED');
});

test('post/purchase-order-receipt: no Idempotency-Key in v2 (v3 requires one); an unknown order is 200 responseType Error', async () => {
  const body = { orderNumber: 'PO26-000065', receiptDate: '2026-11-20', vendorInvoiceNumber: 'INV-V2-1', lines: [{ lineNumber: 1, updateQuantity: 2 }] };
  const v3 = await t.post('/api/v3/purchase-order-receipts', body);
  assert.equal(v3.status, 400);
  assert.equal(v3.headers['x-error-code'], 'IDEMPOTENCY_KEY_INVALID');
  const v2 = await t.post('/api/v2/post/purchase-order-receipt', body);
  assert.equal(v2.status, 200, v2.text);
  assert.equal(v2.body.responseType, 'Success');
  assert.equal(v2.body.response.document.orderNumber, 'PO26-000065');
  assert.equal(v2.body.response.document.lines[0].receivedToDate >= 2, true);
  const unknown = await t.post('/api/v2/post/purchase-order-receipt', { ...body, orderNumber: 'PO-NOPE' });
  assert.equal(unknown.status, 200, unknown.text);
  assert.equal(unknown.body.responseType, 'Error');
});

test('every v2 write posts the v3 contract example through the same runner: 200 Success, in the books', async () => {
  const { parse } = await import('yaml');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const { V2_WRITES } = await import('../../src/v2/routes');
  const doc = parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));
  const written = async () => Number((await t.knex('lgrtrn').count({ n: '*' }))[0]!.n) + Number((await t.knex('srvivt').count({ n: '*' }))[0]!.n);
  for (const [v2Path, v3Route] of Object.entries(V2_WRITES)) {
    const content = doc.paths[v3Route].post.requestBody.content['application/json'];
    const example = (Object.values(content.examples ?? {})[0] as { value: unknown } | undefined)?.value ?? content.example;
    assert.ok(example, `${v3Route} has a request example`);
    const before = await written();
    // The receipt's key is required on v3 only: v2 never had Idempotency-Key.
    const res = await t.post(`/api/v2${v2Path}`, example);
    assert.equal(res.status, 200, `${v2Path}: ${res.text}`);
    assert.equal(res.body.responseType, 'Success', `${v2Path}: ${res.text}`);
    assertDeprecated(res);
    assert.ok((await written()) > before, `${v2Path} wrote a journal or a service inventory row`);
  }
});
