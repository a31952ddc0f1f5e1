/**
 * LIKE and NOT LIKE through HTTP on both engines: the pattern's length bound (decision 0462) on
 * /query, on match's `filters` pre-filter and on /api/v2 (which the contract validator does not
 * check); and the case folding every engine applies (decision 0463), on awkward stored text set in
 * the database, cross-checked against the rows read from the database and the suite's oracle
 * (test/support/filter-eval.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { postFails, postOk } from '../../support/http';
import { LIKE_PATTERN_MAX_CHARACTERS } from '../../../src/catalog/bounds';

let t: TestApp;
useTestApp((app) => (t = app));

const fails = (path: string, body: unknown, fields: string[]) => postFails(t, path, body, 400, 'VALIDATION_FAILED', fields);
const like = (field: string, value: string, operator = 'LIKE') => ({ match: { field, operator, value } });

describe('the length of a LIKE pattern (decision 0462)', () => {
  test('2,000 characters are read on every engine, escaped characters and astral ones included', async () => {
    assert.equal(LIKE_PATTERN_MAX_CHARACTERS, 2000);
    for (const value of ['a'.repeat(2000), '_'.repeat(2000), '!['.repeat(1000), '\u{1F527}'.repeat(2000), `%${'é'.repeat(1998)}%`]) {
      for (const operator of ['LIKE', 'NOT LIKE']) {
        const env = await postOk(t, '/api/v3/parts/query', { select: ['id'], filters: like('partName', value, operator), page: { pageSize: 1 } });
        assert.equal(env.page.totalCount, operator === 'LIKE' ? 0 : Number((await t.knex('tkfprt').whereNotNull('prtnme').count({ n: '*' }))[0]!.n));
      }
    }
  });

  test('a longer pattern is 400 naming the value, never a 500 (SQLite refused 50,000 bytes: LIKE or GLOB pattern too complex)', async () => {
    const cases: Array<[unknown, string]> = [
      [like('partName', 'a'.repeat(2001)), 'filters.match.value'],
      [like('partName', 'a'.repeat(50_001)), 'filters.match.value'],
      [like('partName', '_'.repeat(26_000), 'NOT LIKE'), 'filters.match.value'],
      [like('partName', `${'é'.repeat(26_000)}%`), 'filters.match.value'],
      [{ and: [like('partName', 'a%'), like('description', 'a'.repeat(50_001), 'not like')] }, 'filters.and[1].match.value'],
    ];
    for (const [filters, field] of cases) await fails('/api/v3/parts/query', { select: ['id'], filters }, [field]);
  });

  test("match's filters pre-filter: the same bound", async () => {
    const match = (value: string) => ({ matchString: 'zeta lower', matchFields: ['vendorName'], select: ['recordNumber'], maxDistance: 2, filters: like('vendorName', value) });
    await postOk(t, '/api/v3/vendors/match', match('z'.repeat(LIKE_PATTERN_MAX_CHARACTERS)));
    await fails('/api/v3/vendors/match', match('z'.repeat(LIKE_PATTERN_MAX_CHARACTERS + 1)), ['filters.match.value']);
    await fails('/api/v3/vendors/match', match('z'.repeat(50_001)), ['filters.match.value']);
  });

  test('/api/v2 (no schema on its filter): the engine refuses it naming the value', async () => {
    for (const path of ['/api/v2/query/part', '/api/v2/match/vendor']) {
      const body = path.includes('match')
        ? { matchString: 'zeta', matchFields: ['vendorName'], selectFields: ['recordNumber'], maxDistance: 2, filter: like('vendorName', 'a'.repeat(50_001)) }
        : { selectFields: ['id'], filter: like('partName', 'a'.repeat(50_001)) };
      const res = await t.post(path, body);
      assert.ok(res.status < 500, `${path}: ${res.status} ${res.text.slice(0, 300)}`);
      assert.equal(res.headers['x-error-code'], 'VALIDATION_FAILED', res.text.slice(0, 300));
      assert.match(res.text, /at most 2000 characters/);
    }
  });
});
