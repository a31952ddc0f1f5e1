/**
 * Bad values never reach the database: for every operation with a body (the writes as dry runs
 * and for real, with and without an Idempotency-Key), a value outside its rule (boundary
 * integers 2^31, -2^31-1, 2^53; 1e308 and 1e-308; NUL and lone surrogates sent as JSON escapes;
 * impossible dates; over-long strings; wrong types at every depth; filter values outside the
 * column of their field) answers a 4xx problem document, never a 500, and writes nothing.
 *
 * BAD_VALUES_RUNS (default 2000) sets the number of generated cases per engine.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestApp, type TestApp } from '../support/app';
import { countRows, installPostingFixture } from '../support/posting-fixture';
import { BODY_OPERATIONS, POSTING_TABLES, WRITE_OPERATIONS, buildCase, caseArbitrary, type Case } from '../support/bad-values';

const RUNS = Number(process.env.BAD_VALUES_RUNS ?? 2000);
const BASE = '/api/v3';

let t: TestApp;
before(async () => {
  // Admin-only locking (the operator opt-in): a value the lock accepts would otherwise lock the
  // database mid-run (any key may lock by default) and every later case would answer 423.
  t = await startTestApp({ config: { rateLimitPerMinute: 0, lockAdminOnly: true } });
  await installPostingFixture(t.knex);
});
after(async () => {
  await t.close();
});

async function postingCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of POSTING_TABLES) out[table] = await countRows(t.knex, table);
  return out;
}

interface Outcome {
  status: number;
  code?: string;
}

/** Sends `c`, asserts the rules, returns what came back. */
async function check(c: Case): Promise<Outcome> {
  const write = WRITE_OPERATIONS.has(c.op.operationId);
  const before = write ? await postingCounts() : undefined;
  let req = t.http
    .post(`${BASE}${c.op.path}${c.query}`)
    .set('x-api-key', t.apiKey)
    .set('Content-Type', 'application/json');
  if (c.idempotencyKey) req = req.set('Idempotency-Key', c.idempotencyKey);
  const res = await req.send(c.body);
  const where = `${c.label}\nbody: ${c.body.slice(0, 300)}\nanswer ${res.status}: ${res.text.slice(0, 400)}`;
  assert.ok(res.status < 500, `never a 5xx: ${where}`);
  if (c.mustFail) assert.ok(res.status >= 400, `must be refused: ${where}`);
  if (res.status >= 400) {
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `problem document: ${where}`);
    const code = res.headers['x-error-code'];
    assert.ok(typeof code === 'string' && /^[A-Z_]+$/.test(code), `X-Error-Code: ${where}`);
    assert.equal(res.body.status, res.status, where);
    if (c.field !== undefined) {
      assert.equal(code, 'VALIDATION_FAILED', where);
      const fields = (res.body.errors ?? []).map((e: { field: string }) => e.field);
      assert.ok(fields.includes(c.field), `errors[] names ${c.field} (got ${fields.join(', ')}): ${where}`);
    }
    if (before) assert.deepEqual(await postingCounts(), before, `nothing written: ${where}`);
    return { status: res.status, code };
  }
  if (before && c.query.includes('dryRun=true')) assert.deepEqual(await postingCounts(), before, `a dry run writes nothing: ${where}`);
  return { status: res.status };
}

test('every operation with a body, every kind of slot: one refused case each (deterministic)', async () => {
  let cases = 0;
  for (const op of BODY_OPERATIONS) {
    for (let i = 0; i < (WRITE_OPERATIONS.has(op.operationId) ? 60 : 4); i += 1) {
      const c = buildCase(op, { slot: i * 7, value: i * 3, variant: i, field: i * 5 });
      await check(c);
      cases += 1;
    }
  }
  assert.ok(cases > 300, `${cases} cases`);
});

test('a journal line number or source number past int32, an IN list past int32, NUL in a description: 400 naming the field', async () => {
  const cases: Array<[string, unknown, string]> = [
    ['/ledger-transactions', { transactionNumber: 'BV-INT', transactionDate: '2026-11-14', sourceNumber: 2 ** 31, lines: [{ lineNumber: 1, ledgerAccount: 1 }] }, 'sourceNumber'],
    ['/ledger-transactions', { transactionNumber: 'BV-INT', transactionDate: '2026-11-14', sourceNumber: 1, lines: [{ lineNumber: 99999999999, ledgerAccount: 1 }] }, 'lines[0].lineNumber'],
    ['/ledger-transactions', { transactionNumber: 'BV-NUL', transactionDate: '2026-11-14', sourceNumber: 1, description: 'a\u0000b', lines: [{ lineNumber: 1, ledgerAccount: 1 }] }, 'description'],
    ['/ledger-transactions', { transactionNumber: 'BV-DATE', transactionDate: '0000-01-01', sourceNumber: 1, lines: [{ lineNumber: 1, ledgerAccount: 1 }] }, 'transactionDate'],
    ['/ap-invoices/query', { filters: { match: { field: 'vendorNumber', operator: 'in', values: [1, 99999999999] } } }, 'filters.match.values[1]'],
    ['/ap-invoices/query', { filters: { match: { field: 'vendorNumber', operator: '=', value: 1e308 } } }, 'filters.match.value'],
    ['/ap-invoices/query', { filters: { match: { field: 'invoiceTotal', operator: '>', value: 1e308 } } }, 'filters.match.value'],
    ['/ap-invoices/query', { filters: { match: { field: 'description', operator: 'LIKE', value: '%\u0000%' } } }, 'filters.match.value'],
    ['/ap-invoices/query', { filters: { match: { field: 'invoiceNumber', operator: '=', value: 'x'.repeat(21) } } }, 'filters.match.value'],
    ['/ap-invoices/query', { filters: { match: { field: 'invoiceDate', operator: '>=', value: '0000-01-01' } } }, 'filters.match.value'],
    ['/ap-invoices/query', { vendorNumber: 2 ** 31 }, 'vendorNumber'],
  ];
  for (const [route, body, field] of cases) {
    const before = await postingCounts();
    const res = await t.post(`${BASE}${route}`, body);
    assert.equal(res.status, 400, `${route} ${JSON.stringify(body)}: ${res.text}`);
    assert.equal(res.headers['x-error-code'], 'VALIDATION_FAILED', res.text);
    const fields = res.body.errors.map((e: { field: string }) => e.field);
    assert.ok(fields.includes(field), `${field} named: ${res.text}`);
    assert.deepEqual(await postingCounts(), before);
  }
  // A lone surrogate travels as a JSON escape (JSON.stringify writes it so).
  const raw = '{"transactionNumber":"BV-SUR","transactionDate":"2026-11-14","sourceNumber":1,"description":"x\\ud800","lines":[{"lineNumber":1,"ledgerAccount":1}]}';
  const res = await t.http.post(`${BASE}/ledger-transactions`).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').send(raw);
  assert.equal(res.status, 400, res.text);
  assert.ok(res.body.errors.some((e: { field: string }) => e.field === 'description'), res.text);
  // An astral character (a surrogate pair) is text like any other.
  const ok = await t.post(`${BASE}/ap-invoices/query`, { filters: { match: { field: 'description', operator: '=', value: 'pipe \u{1F527}' } } });
  assert.equal(ok.status, 200, ok.text);
});

test(`generated bad values (${RUNS} cases): 4xx problem, never 5xx, nothing written`, async () => {
  const tally = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(caseArbitrary, async (c) => {
      const o = await check(c);
      const key = `${o.status} ${o.code ?? ''}`.trim();
      tally.set(key, (tally.get(key) ?? 0) + 1);
    }),
    { numRuns: RUNS },
  );
  const refused = [...tally].filter(([k]) => Number(k.slice(0, 3)) >= 400).reduce((s, [, n]) => s + n, 0);
  assert.ok(refused > RUNS * 0.8, `most cases are refused: ${JSON.stringify([...tally])}`);
});
