/**
 * Idempotency of writes (spec, Writes rules 1-7 and the key states), over HTTP, checked against
 * what is in the database: a key posts once, replays its recorded response, is scoped to the API
 * key, refuses another body or route, survives validation failures unconsumed, stores 422/502,
 * answers concurrent duplicates with 409 in flight, is taken over when its owner is dead, and
 * writes without deduplication (Idempotency-Status unavailable) when the store cannot answer.
 * Idempotency-Status is sent only where a write happened or was recorded: never on a refusal
 * decided before the write (docs/decisions/0221-idempotency-status-only-what-happened.md).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { FX, apInvoice, balanceOf, countRows, journal } from '../../support/posting-fixture';
import { requestFingerprint } from '../../../src/engines/idempotency/fingerprint';
import type { IdempotencyStore } from '../../../src/engines/idempotency/store';
import { toDbTime } from '../../../src/storage/db-time';

let t: TestApp;
const PATH = '/api/v3/ledger-transactions';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

usePostingApp((app) => (t = app), { invariants: false });

/**
 * Holds the posting of `key` right after it has claimed the key, until `release()`: `claimed`
 * resolves once it holds the claim. A duplicate sent after `claimed` meets the claim in flight
 * however slow the machine, and nothing waits longer than the duplicate's answer.
 */
function holdAfterClaim(key: string): { claimed: Promise<void>; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  // A posting that waited for its own duplicate would otherwise hang the file: it goes on after 30 s.
  setTimeout(() => release(), 30_000).unref();
  let claimed!: () => void;
  const hasClaimed = new Promise<void>((r) => (claimed = r));
  t.services.writes.hooks.afterClaim = (info) => {
    if (info.key !== key) return;
    claimed();
    return released;
  };
  return { claimed: hasClaimed, release };
}

function keyed(path: string, body: unknown, key: string, apiKey = t.apiKey) {
  return t.http.post(path).set('x-api-key', apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

async function apiKeyId(key: string): Promise<string> {
  return (await t.services.keys.findByKey(key))!.id;
}

test('first write applied, repeat replayed: same status and body, posted once, balances moved once', async () => {
  const key = `k-${randomUUID()}`;
  const first = await keyed(PATH, journal('JI-1'), key);
  assert.equal(first.status, 200, first.text);
  assert.equal(first.headers['idempotency-status'], 'applied');
  const balance = await balanceOf(t.knex, FX.accounts.overhead, FX.year, FX.openPeriod);
  const again = await keyed(PATH, journal('JI-1'), key);
  assert.equal(again.status, 200);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(again.body, first.body);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-1' }), 1);
  assert.deepEqual(await balanceOf(t.knex, FX.accounts.overhead, FX.year, FX.openPeriod), balance);
  const record = await t.knex('idmkey').where({ idem_key: key }).first();
  assert.equal(record.state, 'completed');
  assert.equal(Number(record.status_code), 200);
});

test('re-serialising the same payload (key order, whitespace) is the same request', async () => {
  const key = `k-${randomUUID()}`;
  const body = journal('JI-2') as Record<string, any>;
  const first = await keyed(PATH, body, key);
  assert.equal(first.status, 200);
  const reordered = Object.fromEntries(Object.entries(body).reverse());
  const text = JSON.stringify(reordered, null, 4).replace(/\n/g, '\r\n  ');
  const again = await t.http.post(PATH).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(text);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.equal(again.body.document.recordNumber, first.body.document.recordNumber);
});

test('same key with another body or another route is 409 IDEMPOTENCY_KEY_REUSED', async () => {
  const key = `k-${randomUUID()}`;
  assert.equal((await keyed(PATH, journal('JI-3'), key)).status, 200);
  for (const res of [await keyed(PATH, journal('JI-3', { description: 'other' }), key), await keyed('/api/v3/ap-invoices', apInvoice('JI-3-INV'), key)]) {
    assertProblem(res, 'IDEMPOTENCY_KEY_REUSED');
    // Nothing applied, nothing replayed: no Idempotency-Status (docs/decisions/0221-idempotency-status-only-what-happened.md).
    assert.equal(res.headers['idempotency-status'], undefined);
  }
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-3' }), 1);
  assert.equal(await countRows(t.knex, 'acpinv', { invnum: 'JI-3-INV' }), 0);
});

test('keys are scoped to the API key', async () => {
  const other = await t.services.keys.create('second integration', 'integration');
  const key = `k-${randomUUID()}`;
  const a = await keyed(PATH, journal('JI-4a'), key);
  const b = await keyed(PATH, journal('JI-4b'), key, other.key);
  assert.equal(a.status, 200);
  assert.equal(b.status, 200);
  assert.equal(b.headers['idempotency-status'], 'applied');
  assert.notEqual(a.body.document.recordNumber, b.body.document.recordNumber);
});

test('an invalid key is 400 IDEMPOTENCY_KEY_INVALID (too long, not printable ASCII, empty) and nothing is written', async () => {
  for (const bad of ['x'.repeat(129), 'clé-1', '']) {
    const res = await keyed(PATH, journal('JI-5'), bad);
    const body = assertProblem(res, 'IDEMPOTENCY_KEY_INVALID');
    assert.equal(body.errors[0].field, 'Idempotency-Key');
    assert.equal(res.headers['idempotency-status'], undefined);
  }
  const ok = await keyed(PATH, journal('JI-5'), 'x'.repeat(128));
  assert.equal(ok.status, 200, ok.text);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-5' }), 1);
});

test('failures decided before dispatch (400) do not consume the key', async () => {
  const key = `k-${randomUUID()}`;
  const bad = await keyed(PATH, journal('JI-6', { bogus: true }), key);
  assertProblem(bad, 'VALIDATION_FAILED');
  assert.equal(bad.headers['idempotency-status'], undefined, 'no write ran, nothing recorded: no Idempotency-Status');
  const decimals = await keyed(PATH, journal('JI-6', { lines: [{ lineNumber: 1, ledgerAccount: FX.accounts.cash, debitAmount: 1.001 }] }), key);
  assertProblem(decimals, 'VALIDATION_FAILED');
  assert.equal(decimals.headers['idempotency-status'], undefined);
  const malformed = await t.http.post(PATH).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send('{"transactionNumber":');
  assertProblem(malformed, 'MALFORMED_JSON');
  assert.equal(malformed.headers['idempotency-status'], undefined);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-6' }), 0);
  assert.equal(await countRows(t.knex, 'idmkey', { idem_key: key }), 0);
  const good = await keyed(PATH, journal('JI-6'), key);
  assert.equal(good.status, 200);
  assert.equal(good.headers['idempotency-status'], 'applied');
});

test('a 422 from the engine is stored and replayed; the corrected body needs a new key', async () => {
  const key = `k-${randomUUID()}`;
  const unbalanced = journal('JI-7', {
    lines: [
      { lineNumber: 1, ledgerAccount: FX.accounts.overhead, debitAmount: 5 },
      { lineNumber: 2, ledgerAccount: FX.accounts.cash, creditAmount: 4 },
    ],
  });
  const first = await keyed(PATH, unbalanced, key);
  const body1 = assertProblem(first, 'JOURNAL_UNBALANCED');
  assert.equal(first.headers['idempotency-status'], 'applied');
  const again = await keyed(PATH, unbalanced, key);
  const body2 = assertProblem(again, 'JOURNAL_UNBALANCED');
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.equal(body2.detail, body1.detail);
  assert.equal(body2.originalCorrelationId, body1.correlationId);
  assertProblem(await keyed(PATH, journal('JI-7'), key), 'IDEMPOTENCY_KEY_REUSED');
  const record = await t.knex('idmkey').where({ idem_key: key }).first();
  assert.equal(Number(record.status_code), 422);
});

test('Idempotency-Status is absent on every refusal decided before the write (400, 401, 403, 413, 415, 423, 429, 409 reused and in flight): nothing was written or recorded', async () => {
  // Every refusal kind is checked before any assertion on the header fails, so that a failure lists them all.
  const carrying: string[] = [];
  const none = (res: { status: number; headers: Record<string, string>; text: string }, code: string) => {
    assert.equal(res.headers['x-error-code'], code, `${code}: ${res.status} ${res.text}`);
    if (res.headers['idempotency-status'] !== undefined) carrying.push(`${res.status} ${code}: Idempotency-Status ${res.headers['idempotency-status']}`);
  };
  // Every key sent with a refusal: none may be recorded.
  const refusedKeys: string[] = [];
  const key = () => {
    const k = `k-${randomUUID()}`;
    refusedKeys.push(k);
    return k;
  };
  const post = (body: unknown, apiKey: string | null = t.apiKey, path = PATH) => {
    const req = t.http.post(path).set('Content-Type', 'application/json').set('Idempotency-Key', key());
    if (apiKey !== null) req.set('x-api-key', apiKey);
    return req.send(body as object);
  };
  // 400: the contract (unknown field), the body rules (more than 2 decimals), the JSON, the key, and a receipt without its required key.
  none(await post(journal('JS-1', { bogus: true })), 'VALIDATION_FAILED');
  none(await post(journal('JS-1', { lines: [{ lineNumber: 1, ledgerAccount: FX.accounts.cash, debitAmount: 1.001 }] })), 'VALIDATION_FAILED');
  none(await t.http.post(PATH).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key()).send('{"transactionNumber":'), 'MALFORMED_JSON');
  none(await keyed(PATH, journal('JS-1'), 'x'.repeat(129)), 'IDEMPOTENCY_KEY_INVALID');
  none(await keyed(PATH, journal('JS-1'), ''), 'IDEMPOTENCY_KEY_INVALID');
  none(
    await t.http.post('/api/v3/purchase-order-receipts').set('x-api-key', t.apiKey).set('Content-Type', 'application/json').send({ orderNumber: 'PO26-000065', receiptDate: FX.openDate, lines: [{ lineNumber: 1, updateQuantity: 1 }] }),
    'IDEMPOTENCY_KEY_INVALID',
  );
  // 401, 403 (a key without the write scope), 413, 415.
  none(await post(journal('JS-1'), null), 'UNAUTHORIZED');
  none(await post(journal('JS-1'), randomUUID()), 'UNAUTHORIZED');
  const readOnly = (await t.services.keys.create('read only', 'integration', undefined, ['read'])).key;
  none(await post(journal('JS-1'), readOnly), 'SCOPE_MISSING');
  none(await post(journal('JS-1', { description: 'x'.repeat(t.services.config.bodyLimitBytes + 1) })), 'PAYLOAD_TOO_LARGE');
  none(await t.http.post(PATH).set('x-api-key', t.apiKey).set('Content-Type', 'text/plain').set('Idempotency-Key', key()).send('transactionNumber=JS-1'), 'UNSUPPORTED_MEDIA_TYPE');
  // 409 reused: the key of an earlier write with another body.
  const used = `k-${randomUUID()}`;
  assert.equal((await keyed(PATH, journal('JS-2'), used)).status, 200);
  none(await keyed(PATH, journal('JS-2', { description: 'other' }), used), 'IDEMPOTENCY_KEY_REUSED');
  none(await keyed('/api/v3/ap-invoices', apInvoice('JS-2-INV'), used), 'IDEMPOTENCY_KEY_REUSED');
  // 409 in flight: the same key while its first request holds the claim.
  const flying = `k-${randomUUID()}`;
  const hold = holdAfterClaim(flying);
  try {
    const first = keyed(PATH, journal('JS-3'), flying).then((r) => r);
    await Promise.race([hold.claimed, first]);
    none(await keyed(PATH, journal('JS-3'), flying), 'IDEMPOTENCY_KEY_IN_FLIGHT');
    hold.release();
    assert.equal((await first).headers['idempotency-status'], 'applied');
  } finally {
    hold.release();
    delete t.services.writes.hooks.afterClaim;
  }
  // 423: the maintenance lock.
  assert.equal((await t.post('/api/v3/utility/lock', { userName: 'ops' }, t.adminKey)).status, 200);
  try {
    none(await post(journal('JS-4')), 'MAINTENANCE_LOCK');
  } finally {
    assert.equal((await t.post('/api/v3/utility/un-lock', { userName: 'ops' }, t.adminKey)).status, 200);
  }
  // 429: a second instance on the same database allowing one request a minute per key.
  const limited = await startTestApp({ databaseUrl: t.services.config.databaseUrl, config: { rateLimitPerMinute: 1 } });
  try {
    const send = () => limited.http.post(PATH).set('x-api-key', limited.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key()).send(journal('JS-5', { bogus: true }));
    assert.equal((await send()).status, 400);
    none(await send(), 'RATE_LIMITED');
  } finally {
    await limited.detach();
  }
  assert.deepEqual(carrying, [], 'no refusal decided before the write carries Idempotency-Status');
  for (const n of ['JS-1', 'JS-4', 'JS-5']) assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: n }), 0, `${n}: nothing written`);
  assert.equal(await countRows(t.knex, 'acpinv', { invnum: 'JS-2-INV' }), 0);
  for (const k of refusedKeys) assert.equal(await countRows(t.knex, 'idmkey', { idem_key: k }), 0, `nothing recorded under ${k}`);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JS-2' }), 1, 'the reused key posted its own write once');
});

test('refusals recorded under the key carry applied, then replayed: 404 REFERENCE_NOT_FOUND and 409 TRANSACTION_NUMBER_CONFLICT', async () => {
  const missing = journal('JR-1', {
    lines: [
      { lineNumber: 1, ledgerAccount: 1234567, debitAmount: 5 },
      { lineNumber: 2, ledgerAccount: FX.accounts.cash, creditAmount: 5 },
    ],
  });
  const k404 = `k-${randomUUID()}`;
  const first404 = await keyed(PATH, missing, k404);
  assertProblem(first404, 'REFERENCE_NOT_FOUND');
  assert.equal(first404.headers['idempotency-status'], 'applied');
  const again404 = await keyed(PATH, missing, k404);
  assertProblem(again404, 'REFERENCE_NOT_FOUND');
  assert.equal(again404.headers['idempotency-status'], 'replayed');
  assert.equal(Number((await t.knex('idmkey').where({ idem_key: k404 }).first()).status_code), 404);

  assert.equal((await keyed(PATH, journal('JR-2'), `k-${randomUUID()}`)).status, 200);
  const changed = journal('JR-2', { description: 'Other content' }) as any;
  changed.lines[0].debitAmount = 100.11;
  changed.lines[2].creditAmount = 120.16;
  const k409 = `k-${randomUUID()}`;
  const first409 = await keyed(PATH, changed, k409);
  assertProblem(first409, 'TRANSACTION_NUMBER_CONFLICT');
  assert.equal(first409.headers['idempotency-status'], 'applied');
  const again409 = await keyed(PATH, changed, k409);
  assertProblem(again409, 'TRANSACTION_NUMBER_CONFLICT');
  assert.equal(again409.headers['idempotency-status'], 'replayed');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JR-2' }), 1);
});

test('v2 writes carry no Idempotency-Status (v2 has no Idempotency-Key): neither a posting nor a refusal', async () => {
  const posted = await t.post('/api/v2/post/ledger-transaction', journal('JV-1'));
  assert.equal(posted.status, 200, posted.text);
  assert.equal(posted.headers['idempotency-status'], undefined);
  // A known field of the wrong type (v2 ignores unknown fields: decision 0405).
  const refused = await t.post('/api/v2/post/ledger-transaction', journal('JV-2', { lines: 'x' }));
  assert.equal(refused.status, 400, refused.text);
  assert.equal(refused.headers['idempotency-status'], undefined);
  const unauthorized = await t.http.post('/api/v2/post/ledger-transaction').set('Content-Type', 'application/json').send(journal('JV-3'));
  assert.equal(unauthorized.status, 401);
  assert.equal(unauthorized.headers['idempotency-status'], undefined);
});

test('a dry run ignores the key and does not consume it', async () => {
  const key = `k-${randomUUID()}`;
  const dry = await keyed(`${PATH}?dryRun=true`, journal('JI-8'), key);
  assert.equal(dry.status, 200);
  assert.equal(dry.body.dryRun, true);
  assert.equal(await countRows(t.knex, 'idmkey', { idem_key: key }), 0);
  const real = await keyed(PATH, journal('JI-8'), key);
  assert.equal(real.status, 200);
  assert.equal(real.headers['idempotency-status'], 'applied');
  assert.equal(real.body.dryRun, false);
  const dryAgain = await keyed(`${PATH}?dryRun=true`, journal('JI-8'), key);
  assert.equal(dryAgain.body.dryRun, true, 'a dry run is never answered from the store');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-8' }), 1);
});

test('the store cannot answer: the write goes ahead without deduplication (Idempotency-Status unavailable)', async () => {
  const real = t.services.writes.store;
  const failing: IdempotencyStore = {
    ...real,
    claim: async () => {
      throw new Error('idempotency store down');
    },
    complete: real.complete.bind(real),
    completeAlone: real.completeAlone.bind(real),
    markUnknown: real.markUnknown.bind(real),
    release: real.release.bind(real),
    purgeExpired: real.purgeExpired.bind(real),
  };
  t.services.writes.store = failing;
  try {
    const key = `k-${randomUUID()}`;
    const res = await keyed(PATH, journal('JI-9'), key);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['idempotency-status'], 'unavailable');
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-9' }), 1);
    assert.equal(await countRows(t.knex, 'idmkey', { idem_key: key }), 0);
  } finally {
    t.services.writes.store = real;
  }
});

test('a concurrent duplicate is 409 IDEMPOTENCY_KEY_IN_FLIGHT with a short Retry-After', async () => {
  const key = `k-${randomUUID()}`;
  // The first request holds its claim (no connection) while the duplicate arrives.
  const hold = holdAfterClaim(key);
  try {
    const first = keyed(PATH, journal('JI-10'), key).then((r) => r);
    await Promise.race([hold.claimed, first]);
    const second = await keyed(PATH, journal('JI-10'), key);
    hold.release();
    const body = assertProblem(second, 'IDEMPOTENCY_KEY_IN_FLIGHT');
    assert.equal(second.headers['retry-after'], '1');
    assert.equal(second.headers['idempotency-status'], undefined);
    assert.match(body.detail, /still being processed/);
    assert.equal((await first).status, 200);
  } finally {
    hold.release();
    delete t.services.writes.hooks.afterClaim;
  }
  const after = await keyed(PATH, journal('JI-10'), key);
  assert.equal(after.headers['idempotency-status'], 'replayed');
});

test('50 identical requests with one key at once post exactly once; the others are in flight or replays', async () => {
  const key = `k-${randomUUID()}`;
  const results = await Promise.all(Array.from({ length: 50 }, () => keyed(PATH, journal('JI-11'), key)));
  const applied = results.filter((r) => r.status === 200 && r.headers['idempotency-status'] === 'applied');
  const replayed = results.filter((r) => r.status === 200 && r.headers['idempotency-status'] === 'replayed');
  const inFlight = results.filter((r) => r.status === 409 && r.headers['x-error-code'] === 'IDEMPOTENCY_KEY_IN_FLIGHT');
  assert.equal(applied.length, 1, results.map((r) => `${r.status} ${r.headers['x-error-code'] ?? r.headers['idempotency-status']}`).join(', '));
  assert.equal(applied.length + replayed.length + inFlight.length, 50);
  for (const r of replayed) assert.equal(r.body.document.recordNumber, applied[0]!.body.document.recordNumber);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-11' }), 1);
});

test('two service instances on one database: the unique (api key, key) decides, posted once', async () => {
  const second = await startTestApp({ databaseUrl: t.services.config.databaseUrl });
  try {
    // Warm the second instance's validator so that its request arrives while the first is in flight.
    assert.equal((await second.post(PATH, journal('JI-12w'))).status, 200);
    const key = `k-${randomUUID()}`;
    const hold = holdAfterClaim(key);
    const first = keyed(PATH, journal('JI-12'), key).then((r) => r);
    await Promise.race([hold.claimed, first]);
    const other = await second.http.post(PATH).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(journal('JI-12'));
    hold.release();
    const results = [await first, other];
    delete t.services.writes.hooks.afterClaim;
    const codes = results.map((r) => `${r.status}:${r.headers['x-error-code'] ?? r.headers['idempotency-status']}`).sort();
    assert.ok(
      codes.includes('200:applied') && codes.includes('409:IDEMPOTENCY_KEY_IN_FLIGHT'),
      codes.join(', '),
    );
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-12' }), 1);
  } finally {
    delete t.services.writes.hooks.afterClaim;
    await second.detach();
  }
});

test('a record in flight whose owner is dead (lease expired) is taken over by the retry; a live one is in flight', async () => {
  const scope = await apiKeyId(t.apiKey);
  const now = Date.now();
  const put = async (key: string, state: string, lockedUntil: number, body: unknown, route = '/ledger-transactions') => {
    await t.knex('idmkey').insert({
      id: randomUUID(),
      api_key_id: scope,
      idem_key: key,
      fingerprint: requestFingerprint(route, body),
      state,
      created_at: toDbTime(t.engine, new Date(now - 60_000)),
      updated_at: toDbTime(t.engine, new Date(now - 60_000)),
      expires_at: toDbTime(t.engine, new Date(now + 3_600_000)),
      locked_until: toDbTime(t.engine, new Date(lockedUntil)),
      ...(state === 'unknown' ? { status_code: 504, response_headers: '{}', response_body: JSON.stringify({ type: 'x', title: 'x', status: 504, detail: 'unknown', instance: PATH, correlationId: 'old' }) } : {}),
    });
  };
  const dead = `k-${randomUUID()}`;
  await put(dead, 'in_flight', now - 1000, journal('JI-13'));
  const res = await keyed(PATH, journal('JI-13'), dead);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-13' }), 1);

  const deadUnknown = `k-${randomUUID()}`;
  await put(deadUnknown, 'unknown', now - 1000, journal('JI-13b'));
  const taken = await keyed(PATH, journal('JI-13b'), deadUnknown);
  assert.equal(taken.status, 200, taken.text);
  assert.equal(taken.headers['idempotency-status'], 'applied');

  const live = `k-${randomUUID()}`;
  await put(live, 'in_flight', now + 60_000, journal('JI-14'));
  const busy = await keyed(PATH, journal('JI-14'), live);
  assertProblem(busy, 'IDEMPOTENCY_KEY_IN_FLIGHT');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-14' }), 0);

  const unknown = `k-${randomUUID()}`;
  await put(unknown, 'unknown', now + 60_000, journal('JI-15'));
  const replay = await keyed(PATH, journal('JI-15'), unknown);
  assert.equal(replay.status, 504);
  assert.equal(replay.headers['idempotency-status'], 'replayed');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-15' }), 0);
});

test('expired records are as good as absent and are purged', async () => {
  const scope = await apiKeyId(t.apiKey);
  const key = `k-${randomUUID()}`;
  const old = new Date(Date.now() - 25 * 3_600_000);
  await t.knex('idmkey').insert({
    id: randomUUID(),
    api_key_id: scope,
    idem_key: key,
    fingerprint: 'f'.repeat(64),
    state: 'completed',
    status_code: 200,
    response_headers: '{}',
    response_body: '{}',
    created_at: toDbTime(t.engine, old),
    updated_at: toDbTime(t.engine, old),
    expires_at: toDbTime(t.engine, new Date(old.getTime() + 24 * 3_600_000)),
    locked_until: null,
  });
  const res = await keyed(PATH, journal('JI-16'), key);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied', 'an expired record does not make the key reused');
  for (let i = 0; i < 3; i += 1) {
    await t.knex('idmkey').insert({
      id: randomUUID(),
      api_key_id: scope,
      idem_key: `expired-${i}-${randomUUID()}`,
      fingerprint: 'f'.repeat(64),
      state: 'completed',
      created_at: toDbTime(t.engine, old),
      updated_at: toDbTime(t.engine, old),
      expires_at: toDbTime(t.engine, new Date(Date.now() - 1000)),
    });
  }
  const purged = await t.services.writes.store.purgeExpired();
  assert.ok(purged >= 3, `purged ${purged}`);
  assert.equal(await countRows(t.knex, 'idmkey', { state: 'completed', status_code: null }), 0);
  const live = await t.knex('idmkey').where({ idem_key: key }).first();
  assert.ok(live, 'live records stay');
});

test('the database refusing (a real unique violation) is 502 DATABASE_REFUSED without Retry-After, stored and replayed', async () => {
  // A unique index the accounting system might have (partial, so the seed's rows satisfy it): two
  // lines of one journal with the probe's description violate it. Not a record-number collision,
  // which the runner recovers from (test/engines/posting/record-number-collision.test.ts).
  const probe = 'unique refusal probe';
  await t.knex.raw(`CREATE UNIQUE INDEX zz_refusal_probe ON lgtnln (dscrpt) WHERE dscrpt = '${probe}'`);
  const colliding = (n: string) =>
    journal(n, {
      lines: [
        { lineNumber: 1, ledgerAccount: FX.accounts.overhead, description: probe, debitAmount: 100.1 },
        { lineNumber: 2, ledgerAccount: FX.accounts.cash, description: probe, creditAmount: 100.1 },
      ],
    });
  try {
    const key = `k-${randomUUID()}`;
    const first = await keyed(PATH, colliding('JI-17'), key);
    const body = assertProblem(first, 'DATABASE_REFUSED');
    assert.equal(first.headers['retry-after'], undefined);
    assert.equal(body.refusal, 'constraint');
    assert.equal(first.headers['idempotency-status'], 'applied');
    const again = await keyed(PATH, colliding('JI-17'), key);
    assertProblem(again, 'DATABASE_REFUSED');
    assert.equal(again.headers['idempotency-status'], 'replayed');
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-17' }), 0);
    // Without a key: the same 502, nothing stored.
    assertProblem(await t.post(PATH, colliding('JI-17b')), 'DATABASE_REFUSED');
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-17b' }), 0);
  } finally {
    await t.knex.raw('DROP INDEX zz_refusal_probe');
  }
});

test('a deadlock (502 DATABASE_REFUSED) or dropped connection (502 DATABASE_UNAVAILABLE) from the driver is never 500', async () => {
  const code = t.engine === 'postgres' ? '40P01' : 'SQLITE_BUSY';
  t.services.writes.hooks.beforeCommit = () => {
    throw Object.assign(new Error('simulated driver refusal'), { code });
  };
  try {
    assertProblem(await t.post(PATH, journal('JI-18')), 'DATABASE_REFUSED');
    t.services.writes.hooks.beforeCommit = () => {
      throw Object.assign(new Error('Connection terminated unexpectedly'), {});
    };
    // A connection lost before COMMIT: 502 DATABASE_UNAVAILABLE, and the key is given back (nothing committed) so the retry executes.
    const lostKey = `k-${randomUUID()}`;
    assertProblem(await keyed(PATH, journal('JI-18'), lostKey), 'DATABASE_UNAVAILABLE');
    // Released in the background (the DELETE may wait for the lost transaction's row lock).
    for (let i = 0; i < 40 && (await countRows(t.knex, 'idmkey', { idem_key: lostKey })) > 0; i += 1) await sleep(25);
    assert.equal(await countRows(t.knex, 'idmkey', { idem_key: lostKey }), 0, 'the key is released');
    t.services.writes.hooks.beforeCommit = () => {
      throw new TypeError('a bug');
    };
    const key = `k-${randomUUID()}`;
    assertProblem(await keyed(PATH, journal('JI-18'), key), 'INTERNAL_ERROR');
    assert.equal(await countRows(t.knex, 'idmkey', { idem_key: key }), 0, 'an unexpected failure releases the key');
  } finally {
    delete t.services.writes.hooks.beforeCommit;
  }
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'JI-18' }), 0);
});
