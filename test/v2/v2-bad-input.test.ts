/**
 * v2 is no back door: the v3 bad-value cases (test/support/bad-values.ts, the generator of
 * test/http/bad-values-property.test.ts and bench/fuzz.ts), translated to v2 paths and names, never
 * answer a 5xx and write nothing when refused; rate limit (one bucket with v3), body limit and
 * media type hold on /api/v2 as on /api/v3.
 *
 * V2_BAD_VALUES_RUNS (default 500) sets the number of generated cases per engine.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestApp, type TestApp } from '../support/app';
import { countRows, installPostingFixture } from '../support/posting-fixture';
import { BODY_OPERATIONS, POSTING_TABLES, WRITE_OPERATIONS, buildCase, caseArbitrary, type Case } from '../support/bad-values';
import { V2_WRITES } from '../../src/v2/routes';
import { v2NameOf } from '../../src/v2/document';

const RUNS = Number(process.env.V2_BAD_VALUES_RUNS ?? 500);

let t: TestApp;
before(async () => {
  t = await startTestApp({ config: { rateLimitPerMinute: 0, lockAdminOnly: true } });
  await installPostingFixture(t.knex);
});
after(async () => t.close());

const V3_TO_V2_WRITE = new Map(Object.entries(V2_WRITES).map(([v2, v3]) => [v3, v2]));

/** The v2 path of a v3 operation path. */
function v2Path(v3: string): string {
  const read = /^\/([^/]+)\/(query|match)$/.exec(v3);
  if (read) return `/${read[2]}/${v2NameOf(read[1]!)}`;
  return V3_TO_V2_WRITE.get(v3) ?? v3;
}

/** The v2 body of a v3 body: select/filters/children/page renamed (src/v2/fields.ts); anything else as sent. */
function v2Body(text: string): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return text;
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return text;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === 'select') out.selectFields = v;
    else if (k === 'filters') out.filter = v;
    else if (k === 'children') out.withChildren = Array.isArray(v) ? v.length > 0 : v;
    else if (k === 'page' && v && typeof v === 'object') {
      const p = v as { pageNumber?: unknown; pageSize?: unknown };
      if (p.pageSize !== undefined) out.pageSize = p.pageSize;
      if (p.pageNumber !== undefined) out.offset = typeof p.pageNumber === 'number' && typeof p.pageSize === 'number' ? (p.pageNumber - 1) * p.pageSize : p.pageNumber;
    } else out[k] = v;
  }
  return JSON.stringify(out);
}

async function postingCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of POSTING_TABLES) out[table] = await countRows(t.knex, table);
  return out;
}

async function check(c: Case): Promise<string> {
  const write = WRITE_OPERATIONS.has(c.op.operationId);
  const before = write ? await postingCounts() : undefined;
  const path = `/api/v2${v2Path(c.op.path)}${c.query}`;
  const body = v2Body(c.body);
  let req = t.http.post(path).set('x-api-key', t.apiKey).set('Content-Type', 'application/json');
  if (c.idempotencyKey) req = req.set('Idempotency-Key', c.idempotencyKey);
  const res = await req.send(body);
  const where = `${c.label}\n${path}\nbody: ${body.slice(0, 300)}\nanswer ${res.status}: ${res.text.slice(0, 400)}`;
  assert.ok(res.status < 500, `never a 5xx on v2: ${where}`);
  assert.equal(res.headers.deprecation, '@1793491200', where);
  const refused = res.status >= 400 || res.body?.responseType === 'Error';
  if (refused) {
    const code = res.headers['x-error-code'];
    assert.ok(typeof code === 'string' && /^[A-Z0-9_]+$/.test(code), `X-Error-Code: ${where}`);
    assert.equal(res.body.errorCode, code, `legacy body carries the code: ${where}`);
    if (before) assert.deepEqual(await postingCounts(), before, `nothing written: ${where}`);
  }
  return `${res.status} ${refused ? res.headers['x-error-code'] : ''}`.trim();
}

test('every v3 operation with a body, translated to v2: the deterministic refused cases, never a 5xx', async () => {
  let cases = 0;
  for (const op of BODY_OPERATIONS) {
    for (let i = 0; i < (WRITE_OPERATIONS.has(op.operationId) ? 30 : 3); i += 1) {
      await check(buildCase(op, { slot: i * 7, value: i * 3, variant: i, field: i * 5 }));
      cases += 1;
    }
  }
  assert.ok(cases > 250, `${cases} cases`);
});

test(`generated bad values through v2 (${RUNS} cases): never a 5xx, nothing written when refused`, async () => {
  const tally = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(caseArbitrary, async (c) => {
      const key = await check(c);
      tally.set(key, (tally.get(key) ?? 0) + 1);
    }),
    { numRuns: RUNS },
  );
  const refused = [...tally].filter(([k]) => k.includes(' ')).reduce((s, [, n]) => s + n, 0);
  assert.ok(refused > RUNS * 0.7, `most cases are refused: ${JSON.stringify([...tally])}`);
});

test('rate limit (one bucket with v3), body limit and media type hold on v2', async () => {
  const small = await startTestApp({ seeded: false, config: { rateLimitPerMinute: 3, bodyLimitBytes: 2048 } });
  try {
    const big = await small.post('/api/v2/query/part', { selectFields: ['x'.repeat(4000)] });
    assert.equal(big.status, 413);
    assert.equal(big.body.errorCode, 'PAYLOAD_TOO_LARGE');
    const text = await small.http.post('/api/v2/query/part').set('x-api-key', small.apiKey).set('Content-Type', 'text/plain').send('hello');
    assert.equal(text.status, 415);
    assert.equal(text.body.errorCode, 'UNSUPPORTED_MEDIA_TYPE');
    // Three calls spent (two on v2 above, one on v3): the next one, on v2, is refused.
    assert.equal((await small.post('/api/v3/utility/ping')).status, 200);
    const limited = await small.post('/api/v2/utility/ping');
    assert.equal(limited.status, 429);
    assert.equal(limited.body.errorCode, 'RATE_LIMITED');
    assert.ok(Number(limited.headers['retry-after']) > 0);
  } finally {
    await small.close();
  }
});
