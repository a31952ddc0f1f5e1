/**
 * POST /{entity}/match over HTTP on the seeded demo company: distance, normalisation, order,
 * pre-filter, errors (status, X-Error-Code, errors[].field).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { postFails, postOk } from '../../support/http';
import { normalise } from '../../../src/engines/match/normalize';

let t: TestApp;
const M = (entity: string) => `/api/v3/${entity}/match`;

useTestApp((app) => (t = app));

const ok = (path: string, body: unknown) => postOk(t, path, body);
const fails = (path: string, body: unknown, status: number, code: string, fields?: string[]) => postFails(t, path, body, status, code, fields);

async function allParts(): Promise<any[]> {
  const out: any[] = [];
  for (let page = 1; ; page++) {
    const res = await t.post('/api/v3/parts/query', { select: ['id', 'partCode', 'partName', 'inactive'], page: { pageNumber: page, pageSize: 1000 } });
    out.push(...res.body.data);
    if (res.body.data.length < 1000) return out;
  }
}

function lev(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length]![b.length]!;
}

describe('match', () => {
  test('an exact name is distance 0 and first; answer has asOf and data only', async () => {
    const parts = await allParts();
    const p = parts[Math.floor(parts.length / 2)];
    const body = await ok(M('parts'), { matchString: p.partName, matchFields: ['partName'], select: ['id', 'partName'], maxDistance: 2 });
    assert.deepEqual(Object.keys(body).sort(), ['asOf', 'data']);
    assert.equal(body.data[0].distance, 0);
    assert.equal(normalise(body.data[0].partName), normalise(p.partName));
    assert.ok(body.data.some((r: any) => r.id === p.id));
  });

  test('normalisation: case, accents, punctuation and spacing do not count', async () => {
    const parts = await allParts();
    const p = parts.find((x) => /\s/.test(x.partName)) ?? parts[0];
    const mangled = `  ${p.partName.toUpperCase().split(' ').join(' - ')}!! `;
    const body = await ok(M('parts'), { matchString: mangled, matchFields: ['partName'], select: ['id', 'partName'], maxDistance: 1 });
    assert.ok(body.data.some((r: any) => r.id === p.id && r.distance === 0), JSON.stringify(body.data.slice(0, 3)));
  });

  test('distances, order (distance, then key) and cap against a brute-force oracle; min over match fields', async () => {
    const parts = await allParts();
    const target = parts[0].partCode.slice(0, -1);
    const body = await ok(M('parts'), { matchString: target, matchFields: ['partCode', 'partName'], select: ['id', 'partCode', 'partName'], maxDistance: 3 });
    const n = normalise(target);
    const want = parts
      .map((p) => ({ id: p.id, distance: Math.min(lev(n, normalise(p.partCode)), lev(n, normalise(p.partName))) }))
      .filter((x) => x.distance <= 3)
      .sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : 1))
      .slice(0, 100);
    assert.deepEqual(body.data.map((r: any) => ({ id: r.id, distance: r.distance })), want);
  });

  test('filters pre-filter the candidates', async () => {
    const parts = await allParts();
    const p = parts[0];
    const body = await ok(M('parts'), {
      matchString: p.partName,
      matchFields: ['partName'],
      select: ['id', 'inactive'],
      maxDistance: 5,
      filters: { match: { field: 'inactive', operator: '=', value: !p.inactive } },
    });
    assert.ok(body.data.every((r: any) => r.inactive === !p.inactive));
    assert.ok(!body.data.some((r: any) => r.id === p.id));
  });

  test('vendors, clients, jobs, employees answer too', async () => {
    for (const [entity, field] of [
      ['vendors', 'vendorName'],
      ['clients', 'clientName'],
      ['jobs', 'jobName'],
      ['employees', 'lastName'],
    ] as const) {
      const q = await t.post(`/api/v3/${entity}/query`, { select: [field], page: { pageSize: 1 } });
      const name = q.body.data[0]?.[field] ?? 'x';
      const body = await ok(M(entity), { matchString: name, matchFields: [field], select: ['recordNumber', field], maxDistance: 1 });
      assert.equal(body.data[0].distance, 0, entity);
    }
  });

  test('the cap: a cut answer says X-Result-Truncated: true, a whole one false (at exactly 100 matches too, with and without filters)', async () => {
    const parts = await allParts();
    // Part codes (LUM-000001, ...) are all a few edits apart.
    const target = 'LUM-000010';
    const n = normalise(target);
    const within = parts
      .map((p) => ({ id: p.id as string, distance: lev(n, normalise(p.partCode)) }))
      .filter((x) => x.distance <= 6)
      .sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : 1));
    assert.ok(within.length > 101, `${within.length} parts within 6 edits`);
    const match = (extra: Record<string, unknown> = {}) =>
      t.post(M('parts'), { matchString: target, matchFields: ['partCode'], select: ['id'], maxDistance: 6, ...extra });
    // More than the cap match: the closest 100, marked cut.
    const cut = await match();
    assert.equal(cut.status, 200, cut.text);
    assert.equal(cut.headers['x-result-truncated'], 'true');
    assert.deepEqual(cut.body.data.map((r: any) => r.id), within.slice(0, 100).map((x) => x.id));
    // A filter leaving exactly 100: whole; 101: cut.
    const only = (k: number) => ({ filters: { match: { field: 'id', operator: 'IN', values: within.slice(0, k).map((x) => x.id) } } });
    const hundred = await match(only(100));
    assert.equal(hundred.headers['x-result-truncated'], 'false');
    assert.equal(hundred.body.data.length, 100);
    const hundredOne = await match(only(101));
    assert.equal(hundredOne.headers['x-result-truncated'], 'true');
    assert.equal(hundredOne.body.data.length, 100);
    // Few matches: whole.
    const few = await t.post(M('parts'), { matchString: parts[0].partName, matchFields: ['partName'], select: ['id'], maxDistance: 1 });
    assert.equal(few.headers['x-result-truncated'], 'false');
    assert.ok(few.body.data.length < 100);
    assert.deepEqual(Object.keys(few.body).sort(), ['asOf', 'data'], 'the body keeps its shape');
  });

  test('errors: unknown match field or select name, maxDistance below 1, missing fields, bad filters', async () => {
    const base = { matchString: 'pipe', matchFields: ['partName'], select: ['id'], maxDistance: 2 };
    await fails(M('parts'), { ...base, matchFields: ['partName', 'partCost'] }, 400, 'UNKNOWN_FIELD', ['matchFields[1]']);
    await fails(M('parts'), { ...base, select: ['id', 'cost'] }, 400, 'UNKNOWN_FIELD', ['select[1]']);
    await fails(M('parts'), { ...base, maxDistance: 0 }, 400, 'VALIDATION_FAILED', ['maxDistance']);
    await fails(M('parts'), { matchFields: ['partName'], select: ['id'], maxDistance: 2 }, 400, 'VALIDATION_FAILED', ['matchString']);
    await fails(M('parts'), { ...base, filters: { match: { field: 'partCost', operator: '>', value: 'x' } } }, 400, 'VALIDATION_FAILED', ['filters.match.value']);
    await fails(M('parts'), { ...base, page: { pageNumber: 1 } }, 400, 'VALIDATION_FAILED', ['page']);
  });
});
