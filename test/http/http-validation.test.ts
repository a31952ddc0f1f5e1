/**
 * Contract validation: unknown fields anywhere in a body are 400 naming the field as a JSON path,
 * one entry per real culprit (no echoes of the alternatives the validator tried), and filter
 * trees deeper than the bound are 400 FILTER_TOO_DEEP, however deep (never a stack overflow).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';
import { assertProblem } from '../support/http';
import { OPERATIONS } from '../../generated/operations';

let t: TestApp;
useTestApp((app) => (t = app));

const QUERY = '/api/v3/parts/query';
const leaf = (field = 'partCode') => ({ match: { field, operator: '=', value: 'x' } });

async function culprits(path: string, body: unknown): Promise<Array<[string, string]>> {
  const res = await t.post(path, body);
  const problem = assertProblem(res, 'VALIDATION_FAILED', path);
  assert.ok(Array.isArray(problem.errors) && problem.errors.length > 0, 'errors[] is present');
  for (const e of problem.errors) {
    assert.equal(typeof e.field, 'string');
    assert.equal(typeof e.code, 'string');
    assert.ok(problem.detail.includes(e.field), `detail names ${e.field}`);
  }
  return problem.errors.map((e: { field: string; code: string }) => [e.field, e.code]);
}

test('an unknown top-level field is named', async () => {
  assert.deepEqual(await culprits(QUERY, { select: ['partCode'], bogus: true }), [['bogus', 'unknown_field']]);
});

test('ping rejects unknown body fields like every other operation; no body or {} is fine', async () => {
  assert.deepEqual(await culprits('/api/v3/utility/ping', { bogus: 1 }), [['bogus', 'unknown_field']]);
  for (const res of [await t.post('/api/v3/utility/ping'), await t.post('/api/v3/utility/ping', {})]) {
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'ok');
  }
});

test('a nested unknown field is named by its JSON path (page.extra)', async () => {
  assert.deepEqual(await culprits(QUERY, { page: { pageNumber: 1, extra: 1 } }), [['page.extra', 'unknown_field']]);
});

test('unknown fields deep inside the filter tree: exactly the one culprit, at its path', async () => {
  const inLeaf = { filters: { and: [leaf(), { or: [leaf(), { match: { field: 'partName', operator: 'LIKE', value: 'a%', bogus: 1 } }] }] } };
  assert.deepEqual(await culprits(QUERY, inLeaf), [['filters.and[1].or[1].match.bogus', 'unknown_field']]);

  const inNode = { filters: { or: [leaf(), { and: [leaf(), { nope: [leaf()] }] }] } };
  assert.deepEqual(await culprits(QUERY, inNode), [['filters.or[1].and[1].nope', 'unknown_field']]);

  const beside = { filters: { match: { field: 'partCode', operator: '=', value: 'x' }, extra: 1 } };
  assert.deepEqual(await culprits(QUERY, beside), [['filters.extra', 'unknown_field']]);
});

test('several culprits are each reported once, in one answer', async () => {
  const body = {
    select: 'partCode',
    page: { pageSize: 5000, extra: true },
    filters: { and: [leaf(), { match: { field: 'partCode', operator: '=', value: { nested: 1 } } }] },
    bogus: 1,
  };
  const found = await culprits(QUERY, body);
  assert.deepEqual(
    [...found].sort(),
    [
      ['bogus', 'unknown_field'],
      ['filters.and[1].match.value', 'type'],
      ['page.extra', 'unknown_field'],
      ['page.pageSize', 'range'],
      ['select', 'type'],
    ].sort(),
  );
});

test('out-of-range page values are rejected, never clamped', async () => {
  assert.deepEqual(await culprits(QUERY, { page: { pageSize: 0 } }), [['page.pageSize', 'range']]);
  assert.deepEqual(await culprits(QUERY, { page: { pageNumber: 0 } }), [['page.pageNumber', 'range']]);
});

test('errors[] is bounded for bodies with many culprits', async () => {
  const res = await t.post(QUERY, { select: Array.from({ length: 150 }, () => 7) });
  const problem = assertProblem(res, 'VALIDATION_FAILED');
  assert.equal(problem.errors.length, 100);
  assert.deepEqual(problem.errors[0], { field: 'select[0]', code: 'type', message: 'must be string' });
});

test('body values must have their declared type: no coercion of "5" to 5 or 7 to "7"', async () => {
  assert.deepEqual(await culprits(QUERY, { page: { pageSize: '5' } }), [['page.pageSize', 'type']]);
  assert.deepEqual(await culprits(QUERY, { select: [7] }), [['select[0]', 'type']]);
});

test('journal lines: the culprit is named as lines[2].debitAmount', { skip: !OPERATIONS.some((o) => o.operationId === 'postLedgerTransaction') && 'no journal route yet' }, async () => {
  const body = {
    transactionNumber: 'JE-VALIDATION-1',
    transactionDate: '2026-11-14',
    description: 'validation only',
    sourceNumber: 1,
    lines: [
      { lineNumber: 1, ledgerAccount: 6100, debitAmount: 10 },
      { lineNumber: 2, ledgerAccount: 2100, creditAmount: 5 },
      { lineNumber: 3, ledgerAccount: 2100, debitAmount: 'ten', memo: 'x' },
    ],
  };
  const res = await t.post('/api/v3/ledger-transactions', body).set('Idempotency-Key', 'validation-test-1');
  const problem = assertProblem(res, 'VALIDATION_FAILED', '/api/v3/ledger-transactions');
  const found = problem.errors.map((e: { field: string; code: string }) => [e.field, e.code]).sort();
  assert.deepEqual(found, [
    ['lines[2].debitAmount', 'type'],
    ['lines[2].memo', 'unknown_field'],
  ]);
});

function nested(depth: number): unknown {
  let node: unknown = leaf();
  for (let i = 1; i < depth; i++) node = { and: [node] };
  return node;
}

test('a filter tree at the bound (32 levels) passes validation; one level more is 400 FILTER_TOO_DEEP', async () => {
  const atBound = await t.post(QUERY, { filters: nested(33), page: { pageSize: 1 } });
  assert.notEqual(atBound.headers['x-error-code'], 'FILTER_TOO_DEEP', atBound.text);
  assert.ok(atBound.status < 500, atBound.text);
  const over = await t.post(QUERY, { filters: nested(34) });
  const problem = assertProblem(over, 'FILTER_TOO_DEEP', QUERY);
  assert.match(problem.detail, /32/);
  assert.deepEqual(problem.errors.map((e: any) => e.field), ['filters']);
});

/** The JSON text of a tree `depth` levels deep, built as text (serialising it recursively would overflow here). */
function deepJson(depth: number, open: (i: number) => string, close: (i: number) => string): string {
  let head = '';
  let tail = '';
  for (let i = 0; i < depth; i++) {
    head += open(i);
    tail = close(i) + tail;
  }
  return `{"filters":${head}${JSON.stringify(leaf())}${tail}}`;
}

test('filter trees 5,000 and 60,000 levels deep are 400 FILTER_TOO_DEEP, not a stack overflow or 500', async () => {
  const send = (json: string) => t.http.post(QUERY).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').send(json);
  for (const depth of [5_000, 60_000]) {
    const json = deepJson(depth, () => '{"and":[', () => ']}');
    assertProblem(await send(json), 'FILTER_TOO_DEEP', QUERY);
  }
  // Mixed and/or nesting with siblings at every level.
  const leafJson = JSON.stringify(leaf());
  const mixed = deepJson(
    5_000,
    (i) => (i % 2 ? `{"and":[${leafJson},` : '{"or":['),
    (i) => (i % 2 ? ']}' : `,${leafJson}]}`),
  );
  assertProblem(await send(mixed), 'FILTER_TOO_DEEP');
  // The server is still healthy afterwards.
  assert.equal((await t.post('/api/v3/utility/ping')).status, 200);
  assert.equal(t.logs.filter((l) => l.level >= 50).length, 0, 'nothing was logged as an error');
});
