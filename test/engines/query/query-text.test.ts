/**
 * Text filters through HTTP on both engines. LIKE and NOT LIKE: the pattern's length bound
 * (decision 0462) on /query, on match's `filters` pre-filter and on /api/v2 (which the contract
 * validator does not check), and the case folding every engine applies (decision 0463). `=`, `!=`,
 * IN and inPairs: exact (decision 0464; SQL Server's T-SQL is proven in query-mssql.test.ts). On
 * awkward stored text set in the database, cross-checked against the rows read from the database
 * and the suite's oracle (test/support/filter-eval.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { postFails, postOk } from '../../support/http';
import { LIKE_PATTERN_MAX_CHARACTERS } from '../../../src/catalog/bounds';
import { evaluate, type Node } from '../../support/filter-eval';

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

/**
 * Vendor names set in the database (recordNumber: name), the awkward text of the audit: accents
 * in NFC and (23) NFD, case, ß, İ, a ligature, Greek, `%` and `_` in the text, spaces.
 */
const NAMES: Record<number, string> = {
  1: 'Émile Bâtiment',
  2: 'émile bâtiment',
  3: 'EMILE BATIMENT',
  4: '100% Supply',
  5: '100_ Supply',
  6: 'Back\\slash Co',
  8: ' Leading Space',
  9: 'Trailing Space ',
  10: '',
  11: 'Ångström Ltd',
  12: 'ÅNGSTRÖM LTD',
  13: 'straße GmbH',
  14: 'STRASSE GMBH',
  15: 'zeta lower',
  16: 'Zeta lower',
  17: 'İstanbul Tiles',
  18: 'ﬁne Fixtures',
  19: 'Mixed [bracket] Co',
  22: 'Émile Bâtiment',
  23: 'e\u0301mile ba\u0302timent',
  24: 'αβγ Greek',
  25: 'ΑΒΓ GREEK',
  26: 'ΟΔΟΣ Paving',
};

/**
 * Pattern -> the records LIKE finds, as PostgreSQL's ILIKE found them (C.UTF-8) in the audit and
 * SQL Server's CI collation would: case folded for every letter, accents and canonical forms kept
 * apart (23 is NFD), ß not ss, the ligature not fi.
 */
const FOUND: Array<[string, number[]]> = [
  ['émile%', [1, 2, 22]],
  ['ÉMILE%', [1, 2, 22]],
  ['%BÂTIMENT', [1, 2, 22]],
  ['emile%', [3]],
  ['ångström%', [11, 12]],
  ['%ÅNGSTRÖM%', [11, 12]],
  ['αβγ%', [24, 25]],
  ['%greek', [24, 25]],
  ['istanbul%', [17]],
  ['İSTANBUL%', [17]],
  ['straße%', [13]],
  ['STRASSE%', [14]],
  ['ﬁne%', [18]],
  ['fine%', []],
  ['οδοσ%', [26]],
  ['%ΟΔΟΣ%', [26]],
  ['οδος%', []],
  ['100%', [4, 5]],
  ['%_ supply', [5]],
  ['%[bracket]%', [19]],
  ['%\\%', [6]],
  ['% ', [9]],
  ['', [10]],
];

describe('LIKE folds case for all of Unicode, on every engine (decision 0463)', () => {
  const ids = (env: { data: Array<{ recordNumber: number }> }) => env.data.map((r) => r.recordNumber).sort((a, b) => a - b);

  /** The stored vendors, read from the database (recordNumber, vendorName). */
  async function stored(): Promise<Array<{ recordNumber: number; vendorName: string | null }>> {
    const rows = (await t.knex('actpay').select({ recordNumber: 'recnum', vendorName: 'vndnme' })) as Array<{ recordNumber: number; vendorName: string | null }>;
    return rows.map((r) => ({ recordNumber: Number(r.recordNumber), vendorName: r.vendorName }));
  }

  test('the text is stored as given', async () => {
    for (const [recnum, name] of Object.entries(NAMES)) await t.knex('actpay').where({ recnum: Number(recnum) }).update({ vndnme: name });
    await t.knex('actpay').whereIn('recnum', [2, 27]).update({ cntnme: null });
    const rows = await stored();
    for (const [recnum, name] of Object.entries(NAMES)) assert.equal(rows.find((r) => r.recordNumber === Number(recnum))?.vendorName, name);
  });

  test('LIKE and NOT LIKE on /query: the records PostgreSQL finds, the oracle over the stored rows agreeing', async () => {
    const rows = await stored();
    for (const [pattern, found] of FOUND) {
      for (const operator of ['LIKE', 'not like']) {
        const filters: Node = { match: { field: 'vendorName', operator, value: pattern } };
        const env = await postOk(t, '/api/v3/vendors/query', { select: ['recordNumber'], filters, page: { pageSize: 1000 } });
        const expected = operator === 'LIKE' ? found : rows.filter((r) => r.vendorName !== null && !found.includes(r.recordNumber)).map((r) => r.recordNumber).sort((a, b) => a - b);
        assert.deepEqual(ids(env), expected, `${operator} ${JSON.stringify(pattern)}`);
        assert.equal(env.page.totalCount, expected.length, `${operator} ${JSON.stringify(pattern)} totalCount`);
        const oracle = rows.filter((r) => evaluate(filters, r)).map((r) => r.recordNumber).sort((a, b) => a - b);
        assert.deepEqual(oracle, expected, `the oracle: ${operator} ${JSON.stringify(pattern)}`);
      }
    }
  });

  test('a null field matches neither LIKE nor NOT LIKE', async () => {
    const nulls = (await t.knex('actpay').whereNull('cntnme').pluck('recnum')).map(Number).sort((a, b) => a - b);
    assert.deepEqual(nulls.filter((n) => n === 2 || n === 27), [2, 27]);
    const total = Number((await t.knex('actpay').count({ n: '*' }))[0]!.n);
    for (const operator of ['LIKE', 'NOT LIKE']) {
      const env = await postOk(t, '/api/v3/vendors/query', { select: ['recordNumber'], filters: { match: { field: 'contactName', operator, value: operator === 'LIKE' ? '%' : 'zzz%' } }, page: { pageSize: 1000 } });
      assert.equal(env.page.totalCount, total - nulls.length, operator);
      for (const n of nulls) assert.ok(!ids(env).includes(n), `${operator}: ${n}`);
    }
  });

  test("match's filters pre-filter folds the same way", async () => {
    const env = await postOk(t, '/api/v3/vendors/match', {
      matchString: 'emile batiment',
      matchFields: ['vendorName'],
      select: ['recordNumber'],
      maxDistance: 1,
      filters: { match: { field: 'vendorName', operator: 'LIKE', value: 'ÉMILE%' } },
    });
    assert.deepEqual(ids(env), [1, 2, 22]);
    const without = await postOk(t, '/api/v3/vendors/match', { matchString: 'emile batiment', matchFields: ['vendorName'], select: ['recordNumber'], maxDistance: 1, filters: { match: { field: 'vendorName', operator: 'NOT LIKE', value: 'émile%' } } });
    assert.deepEqual(ids(without), [3, 23]);
  });
});

describe('=, !=, IN and inPairs compare text exactly: case, accents, canonical forms, spaces (decision 0464)', () => {
  const ids = (env: { data: Array<{ recordNumber: number }> }) => env.data.map((r) => r.recordNumber).sort((a, b) => a - b);
  const EQUAL: Array<[string, number[]]> = [
    ['EMILE BATIMENT', [3]],
    ['emile batiment', []],
    ['émile bâtiment', [2]],
    ['e\u0301mile ba\u0302timent', [23]],
    ['Émile Bâtiment', [1, 22]],
    ['Trailing Space', []],
    ['Trailing Space ', [9]],
    [' Leading Space', [8]],
    ['Leading Space', []],
    ['', [10]],
    [' ', []],
    ['STRASSE GMBH', [14]],
    ['strasse gmbh', []],
  ];

  test('the text is stored as the LIKE tests left it', async () => {
    const names = (await t.knex('actpay').whereIn('recnum', [3, 9, 10, 23]).orderBy('recnum').pluck('vndnme')) as string[];
    assert.deepEqual(names, ['EMILE BATIMENT', 'Trailing Space ', '', 'e\u0301mile ba\u0302timent']);
  });

  test('= and != on /query: only the very text, the oracle over the stored rows agreeing', async () => {
    const rows = (await t.knex('actpay').select({ recordNumber: 'recnum', vendorName: 'vndnme' })).map((r: { recordNumber: number; vendorName: string }) => ({ recordNumber: Number(r.recordNumber), vendorName: r.vendorName }));
    for (const [value, found] of EQUAL) {
      for (const operator of ['=', '!=']) {
        const filters: Node = { match: { field: 'vendorName', operator, value } };
        const env = await postOk(t, '/api/v3/vendors/query', { select: ['recordNumber'], filters, page: { pageSize: 1000 } });
        const expected = operator === '=' ? found : rows.filter((r) => !found.includes(r.recordNumber)).map((r) => r.recordNumber).sort((a, b) => a - b);
        assert.deepEqual(ids(env), expected, `${operator} ${JSON.stringify(value)}`);
        assert.deepEqual(rows.filter((r) => evaluate(filters, r)).map((r) => r.recordNumber).sort((a, b) => a - b), expected, `the oracle: ${operator} ${JSON.stringify(value)}`);
      }
    }
  });

  test('IN and inPairs, inlined and as one JSON list', async () => {
    const padding = Array.from({ length: 70 }, (_, i) => `no such vendor ${i}`);
    for (const extra of [[], padding]) {
      const inList = await postOk(t, '/api/v3/vendors/query', { select: ['recordNumber'], filters: { match: { field: 'vendorName', operator: 'IN', values: ['émile bâtiment', 'Trailing Space', 'emile batiment', ...extra] } } });
      assert.deepEqual(ids(inList), [2], `IN with ${extra.length} more`);
      const pairs = [{ vendorName: 'Émile Bâtiment', recordNumber: 1 }, { vendorName: 'trailing space ', recordNumber: 9 }, { vendorName: 'Emile Bâtiment', recordNumber: 22 }, ...extra.map((v, i) => ({ vendorName: v, recordNumber: 100 + i }))];
      const inPairs = await postOk(t, '/api/v3/vendors/query', { select: ['recordNumber'], filters: { match: { operator: 'inPairs', fields: ['vendorName', 'recordNumber'], pairs } } });
      assert.deepEqual(ids(inPairs), [1], `inPairs with ${extra.length} more`);
    }
  });
});

describe('the order of text and nulls follows the engine, as openapi.yaml OrderBy says (decision 0465)', () => {
  test('the published document says it, and nulls sort where it says for this engine', async () => {
    const doc = await t.http.get('/openapi.json');
    assert.equal(doc.status, 200);
    const description = String(doc.body.components.schemas.OrderBy.description);
    assert.match(description, /Text sorts by the database's collation/);
    assert.match(description, /Nulls sort lowest on SQL Server and SQLite \(first in `ASC`, last in `DESC`\) and highest on PostgreSQL \(last in `ASC`, first in `DESC`\)/);
    const nulls = (await t.knex('actpay').whereNull('cntnme').pluck('recnum')).map(Number);
    assert.ok(nulls.length >= 2, 'the LIKE tests left null contact names');
    for (const direction of ['ASC', 'DESC']) {
      const env = await postOk(t, '/api/v3/vendors/query', { select: ['recordNumber', 'contactName'], orderBy: [`contactName ${direction}`], page: { pageSize: 1000 } });
      const firstNulls = (direction === 'ASC') === (t.engine !== 'postgres');
      const head = env.data.slice(0, nulls.length).map((r: { contactName: string | null }) => r.contactName);
      const tail = env.data.slice(-nulls.length).map((r: { contactName: string | null }) => r.contactName);
      assert.deepEqual(firstNulls ? head : tail, nulls.map(() => null), `${t.engine} ${direction}`);
    }
  });
});
