/**
 * Match engine: normalisation, bounded Levenshtein (against a plain full-matrix oracle with
 * fast-check), and the engine on the fixture table, through both candidate paths (the
 * in-memory index, exact through change tokens, and streaming) against a brute-force oracle.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { Knex } from 'knex';
import { ApiProblem } from '../../../src/errors/problem';
import { queryDialectFor, type QueryDialect } from '../../../src/storage/dialect';
import { normalise } from '../../../src/engines/match/normalize';
import { boundedLevenshtein } from '../../../src/engines/match/levenshtein';
import { MATCH_RESULT_CAP, planMatch, runMatch } from '../../../src/engines/match/run';
import type { MatchRequest } from '../../../src/engines/match/types';
import { FIXTURE_ENGINE, fixtureDatabase, fixtureRows, WIDGETS, type FixtureDatabase } from '../../support/query-fixture';
import { evaluate, type Node } from '../../support/filter-eval';

function levenshtein(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length]![b.length]!;
}

describe('normalisation', () => {
  test('documented examples', () => {
    const cases: Array<[string, string]> = [
      ['Café', 'cafe'],
      ['CAFÉ  Crème', 'cafe creme'],
      ['Copper-Pipe 3/4"', 'copperpipe 34'],
      ['  A\t\n B  ', 'a b'],
      ['ﬁsh', 'fish'],
      ['½ inch', '12 inch'],
      ['Ｆｕｌｌ width', 'full width'],
      ["O'Brien & Sons, Inc.", 'obrien sons inc'],
      ['İstanbul', 'istanbul'],
      ['Straße', 'straße'],
      ['!!!', ''],
    ];
    for (const [input, want] of cases) assert.equal(normalise(input), want, input);
  });

  test('the ASCII fast path equals the Unicode path', () => {
    // The four steps of src/engines/match/normalize.ts, written out: what an ASCII input must give.
    const unicodePath = (s: string) =>
      s.normalize('NFKD').toLowerCase().normalize('NFKD').replace(/\p{M}+/gu, '').replace(/[^\p{L}\p{N}\s]+/gu, '').replace(/\s+/g, ' ').trim();
    fc.assert(
      fc.property(fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c)), maxLength: 40 }), (s) => {
        assert.equal(normalise(s), unicodePath(s));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('bounded Levenshtein', () => {
  test('equals the full matrix within the bound, bound + 1 beyond it', () => {
    const word = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd', ' '), maxLength: 14 });
    fc.assert(
      fc.property(word, word, fc.integer({ min: 0, max: 6 }), (a, b, max) => {
        const full = levenshtein(a, b);
        assert.equal(boundedLevenshtein(a, b, max), full <= max ? full : max + 1, `${a} | ${b} | ${max}`);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('match engine on the fixture table', () => {
  const rows = fixtureRows(400);
  let db: FixtureDatabase;
  let knex: Knex;
  const sqlite = queryDialectFor(FIXTURE_ENGINE);
  /** The same dialect without change tokens: forces the streaming path. */
  const streaming: QueryDialect = { ...sqlite, readSnapshot: (k, fn) => sqlite.readSnapshot(k, (reader) => fn({ ...reader, changeToken: async () => undefined })) };

  before(async () => {
    db = await fixtureDatabase(rows);
    knex = db.knex;
  });
  after(async () => {
    await db.destroy();
  });

  /** Brute force over the published rows. */
  function oracle(body: MatchRequest, records: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
    const target = normalise(body.matchString);
    const scored = records
      .filter((r) => (body.filters ? evaluate(body.filters as Node, r) : true))
      .map((r) => {
        const ds = body.matchFields.map((f) => (r[f] === null ? Infinity : levenshtein(target, normalise(String(r[f])))));
        return { r, distance: Math.min(...ds) };
      })
      .filter((x) => x.distance <= body.maxDistance)
      .sort((a, b) => a.distance - b.distance || (String(a.r.id) < String(b.r.id) ? -1 : 1))
      .slice(0, MATCH_RESULT_CAP);
    return scored.map(({ r, distance }) => ({ ...Object.fromEntries(body.select.map((s) => [s, r[s]])), distance }));
  }

  /** How many records are within maxDistance (after filters), uncapped. */
  function matching(body: MatchRequest, records: Array<Record<string, unknown>>): number {
    const target = normalise(body.matchString);
    return records
      .filter((r) => (body.filters ? evaluate(body.filters as Node, r) : true))
      .filter((r) => Math.min(...body.matchFields.map((f) => (r[f] === null ? Infinity : levenshtein(target, normalise(String(r[f])))))) <= body.maxDistance).length;
  }

  async function published(): Promise<Array<Record<string, unknown>>> {
    const all = (await knex('wdgt').select('_idnum', 'wdgcde', 'wdgnme', 'inactv', 'recnum')) as Array<Record<string, unknown>>;
    return all.map((r) => ({ id: r._idnum, widgetCode: r.wdgcde, widgetName: r.wdgnme, inactive: r.inactv === 1 || r.inactv === true, recordNumber: r.recnum }));
  }

  const bodies: MatchRequest[] = [
    { matchString: 'copper pipe 34', matchFields: ['widgetName'], select: ['id', 'widgetName'], maxDistance: 2 },
    { matchString: 'COPPER PIPE ½', matchFields: ['widgetName'], select: ['id', 'widgetName'], maxDistance: 3 },
    { matchString: 'cafe valve', matchFields: ['widgetName', 'widgetCode'], select: ['id', 'widgetCode'], maxDistance: 1 },
    { matchString: 'W-0123', matchFields: ['widgetCode'], select: ['id', 'widgetCode', 'recordNumber'], maxDistance: 2 },
    { matchString: 'steel bolt', matchFields: ['widgetName'], select: ['id'], maxDistance: 10 },
    {
      matchString: 'brass fiting',
      matchFields: ['widgetName'],
      select: ['id', 'inactive'],
      maxDistance: 2,
      filters: { match: { field: 'inactive', operator: '=', value: false } },
    },
    {
      matchString: 'w0001',
      matchFields: ['widgetCode', 'widgetName'],
      select: ['id', 'widgetCode'],
      maxDistance: 4,
      filters: { or: [{ match: { field: 'recordNumber', operator: '<', value: 50 } }, { match: { field: 'widgetName', operator: 'LIKE', value: '%valve%' } }] },
    },
  ];

  for (const [label, qd] of [
    ['index', sqlite],
    ['streaming', streaming],
  ] as const) {
    test(`results equal the brute-force oracle (${label} path)`, async () => {
      const records = await published();
      for (const body of bodies) {
        const got = await runMatch(knex, qd, WIDGETS, body, { maxFilterDepth: 32 });
        assert.deepEqual(got.data, oracle(body, records), JSON.stringify(body));
        assert.equal(got.truncated, matching(body, records) > MATCH_RESULT_CAP, `truncated: ${JSON.stringify(body)}`);
        assert.match(got.asOf, /Z$/);
      }
    });
  }

  test('the result is capped, closest first, ties by key', async () => {
    const got = await runMatch(knex, sqlite, WIDGETS, { matchString: 'x', matchFields: ['widgetName'], select: ['id'], maxDistance: 10 }, { maxFilterDepth: 32 });
    assert.equal(got.data.length, MATCH_RESULT_CAP);
    assert.equal(got.truncated, true);
    for (let i = 1; i < got.data.length; i++) {
      const [a, b] = [got.data[i - 1]!, got.data[i]!];
      assert.ok(a.distance < b.distance || (a.distance === b.distance && String(a.id) < String(b.id)));
    }
  });

  test('the index follows writes (insert, update, delete)', async () => {
    const body: MatchRequest = { matchString: 'zebra crossing', matchFields: ['widgetName'], select: ['id', 'widgetName'], maxDistance: 2 };
    const run = () => runMatch(knex, sqlite, WIDGETS, body, { maxFilterDepth: 32 });
    assert.equal((await run()).data.length, 0);
    const id = randomUUID();
    await knex('wdgt').insert({ _idnum: id, recnum: 100000, wdgcde: 'Z-1', wdgnme: 'ZEBRA  crossing!', inactv: FIXTURE_ENGINE === 'sqlite' ? 0 : false, upddte: '2026-11-22T00:00:00Z' });
    assert.deepEqual((await run()).data, [{ id, widgetName: 'ZEBRA  crossing!', distance: 0 }]);
    await knex('wdgt').where({ _idnum: id }).update({ wdgnme: 'Zebra crosing' });
    assert.deepEqual((await run()).data, [{ id, widgetName: 'Zebra crosing', distance: 1 }]);
    await knex('wdgt').where({ _idnum: id }).delete();
    assert.equal((await run()).data.length, 0);
  });

  test('request errors', () => {
    const plan = (body: Partial<MatchRequest>) => planMatch(WIDGETS, body as MatchRequest, { maxFilterDepth: 32 });
    const problem = (body: Partial<MatchRequest>) => {
      try {
        plan(body);
      } catch (err) {
        assert.ok(err instanceof ApiProblem);
        return err;
      }
      assert.fail('expected a problem');
    };
    const base = { matchString: 'a', matchFields: ['widgetName'], select: ['id'], maxDistance: 1 };
    let p = problem({ ...base, matchFields: ['widgetName', 'quantity'] });
    assert.equal(p.code, 'UNKNOWN_FIELD');
    assert.deepEqual(p.errors?.map((e) => e.field), ['matchFields[1]']);
    p = problem({ ...base, select: ['id', 'nope'] });
    assert.equal(p.code, 'UNKNOWN_FIELD');
    assert.deepEqual(p.errors?.map((e) => e.field), ['select[1]']);
    p = problem({ ...base, maxDistance: 0 });
    assert.deepEqual(p.errors?.map((e) => [e.field, e.code]), [['maxDistance', 'range']]);
    p = problem({ matchFields: ['widgetName'], select: ['id'], maxDistance: 1 });
    assert.deepEqual(p.errors?.map((e) => [e.field, e.code]), [['matchString', 'required']]);
    p = problem({ ...base, filters: { match: { field: 'bogus', operator: '=', value: 1 } } });
    assert.deepEqual(p.errors?.map((e) => e.field), ['filters.match.field']);
  });
});
