/**
 * The migration comparison (scripts/compare-v2.ts): the same filter through v2 and v3 gives the
 * same counts on every entity of the demo company; a difference is reported with keys and fails.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startTestApp, type TestApp } from '../support/app';
import { serveOnLoopback } from '../support/net';
import { compareV2, formatReport, httpCaller, type Caller } from '../../scripts/compare-v2';
import { CATALOG } from '../../generated/catalog';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

const supertestCaller: Caller = async (p, body) => {
  const res = await t.post(p, body);
  return { status: res.status, body: res.body, errorCode: res.headers['x-error-code'] };
};

test('every one of the 82 entities: v2 and v3 agree on the unfiltered count (in-process)', async () => {
  const rows = await compareV2(supertestCaller);
  assert.equal(rows.length, 82);
  assert.deepEqual(rows.filter((r) => r.outcome !== 'same'), []);
  for (const r of rows) assert.equal(r.v2Count, r.v3Count, r.entity);
  assert.ok(rows.filter((r) => (r.v3Count ?? 0) > 0).length > 40, 'the demo company has rows in most entities');
  assert.match(formatReport(rows), /82 entities compared, 0 mismatches/);
});

test('a filter: same count on the entity it fits, "refused by both" where it names a field the entity lacks', async () => {
  const filter = { and: [{ match: { field: 'partCode', operator: 'LIKE', value: '%1%' } }] };
  const rows = await compareV2(supertestCaller, { filter, entities: ['parts', 'vendors'] });
  assert.equal(rows[0]!.outcome, 'same');
  const full = await t.post('/api/v3/parts/query', { page: { pageSize: 1 } });
  assert.ok(rows[0]!.v3Count! > 0 && rows[0]!.v3Count! < full.body.page.totalCount);
  assert.equal(rows[1]!.outcome, 'both-failed');
  assert.equal(rows[1]!.v3Error, 'UNKNOWN_FIELD');
});

test('a difference is a mismatch with a sample of the differing keys', async () => {
  // A v2 side that loses one record (a doctored server), to prove the check can fail.
  let dropped: string | undefined;
  const lossy: Caller = async (p, body) => {
    const r = await supertestCaller(p, body);
    if (p.startsWith('/api/v2/') && r.body?.page) {
      r.body.page.count -= 1;
      const i = r.body.data.findIndex((row: Record<string, unknown>) => (dropped ??= String(row.id)) === String(row.id));
      if (i >= 0) r.body.data.splice(i, 1);
    }
    return r;
  };
  const [row] = await compareV2(lossy, { entities: ['vendors'] });
  assert.equal(row!.outcome, 'mismatch');
  assert.equal(row!.v2Count, row!.v3Count! - 1);
  assert.deepEqual(row!.onlyInV3, [dropped]);
  assert.match(formatReport([row!]), /only in v3: /);
});

test('remote mode: the same comparison over HTTP with a base URL and a key', async () => {
  const server = await serveOnLoopback(t.app);
  try {
    const base = server.url;
    const rows = await compareV2(httpCaller(base, t.apiKey), { entities: ['parts', 'jobs', 'ledger-transactions'] });
    assert.deepEqual(rows.map((r) => r.outcome), ['same', 'same', 'same']);
    const unauth = await compareV2(httpCaller(base, '00000000-0000-4000-8000-000000000000'), { entities: ['parts'] });
    assert.equal(unauth[0]!.outcome, 'both-failed');
    assert.equal(unauth[0]!.v3Error, 'UNAUTHORIZED');
  } finally {
    await server.close();
  }
});

test('the command (npm run compare-v2) in-process over the database: all 82 entities, exit 0; bad arguments exit 2', () => {
  const root = path.join(__dirname, '..', '..');
  const tsx = path.join(root, 'node_modules', '.bin', 'tsx');
  const ok = spawnSync(tsx, ['scripts/compare-v2.ts', '--database-url', t.services.config.databaseUrl], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  assert.equal(ok.status, 0, ok.stderr + ok.stdout);
  assert.match(ok.stdout, /82 entities compared, 0 mismatches/);
  // One line an entity, the header and the summary; the whole output on failure (a PostgreSQL run
  // under load once printed 90 lines, and the assertion alone did not tell which).
  assert.equal(ok.stdout.trim().split('\n').length, 84, `stdout:\n${ok.stdout}\nstderr:\n${ok.stderr}`);
  const bad = spawnSync(tsx, ['scripts/compare-v2.ts', '--filter', '{nope'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  assert.equal(bad.status, 2);
  assert.equal(Object.keys(CATALOG).length, 82);
});
