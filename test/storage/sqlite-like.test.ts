/**
 * SQLite's LIKE folds case as PostgreSQL's ILIKE (decision 0463): the fold (src/storage/sqlite-like.ts)
 * against the suite's oracle (test/support/filter-eval.ts, written code point by code point), and
 * the SQL the SQLite query dialect compiles (SQLite's own LIKE for ASCII text under an ASCII pattern,
 * the service's function otherwise) run on a real connection against the oracle, for generated text
 * full of the characters where the folds could part: İ, the Kelvin sign, final Σ, accents in both
 * forms, `%`, `_`, `!`, `[`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { Knex } from 'knex';
import { foldCase, ilike } from '../../src/storage/sqlite-like';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';
import { queryDialectFor } from '../../src/storage/dialect';
import { evaluate, foldCase as oracleFold } from '../support/filter-eval';

const AWKWARD = ['İ', 'i', 'I', 'ı', '\u212a', 'k', 'K', 'Σ', 'σ', 'ς', 'é', 'e\u0301', 'É', 'ß', 'ẞ', 'ﬁ', 'Å', 'å', '%', '_', '!', '[', ']', ' ', 'a', 'B', '\u{1F527}', 'Ᲊ'];
const text = fc.array(fc.oneof(fc.constantFrom(...AWKWARD), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => c !== '\u0000')), { maxLength: 8 }).map((cs) => cs.join(''));

test('the fold is the oracle\'s, code point by code point (every BMP character, then generated text)', () => {
  for (let c = 1; c < 0x10000; c += 1) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const s = String.fromCharCode(c);
    assert.equal(foldCase(s), oracleFold(s), `U+${c.toString(16)}`);
    assert.equal(foldCase(`ab${s}`), oracleFold(`ab${s}`), `ab U+${c.toString(16)}`);
  }
  fc.assert(fc.property(text, (s) => foldCase(s) === oracleFold(s)), { numRuns: 5000 });
  assert.equal(foldCase('İSTANBUL'), 'istanbul');
  assert.equal(foldCase('ΟΔΟΣ'), 'οδοσ');
  assert.equal(foldCase('ΟΔΟΣ ΑΣ'), 'οδοσ ασ');
});

test('the matcher is the oracle\'s LIKE: % the only wildcard, everything else literal', () => {
  const like = (value: string, pattern: string) => evaluate({ match: { field: 'f', operator: 'LIKE', value: pattern } }, { f: value });
  fc.assert(fc.property(text, text, (value, pattern) => ilike(value, pattern) === like(value, pattern)), { numRuns: 5000 });
  // Patterns taken from the value, with % put in and the case turned: they match.
  fc.assert(
    fc.property(text, fc.nat(), fc.nat(), (value, a, b) => {
      const cut = [...value];
      const i = cut.length ? a % cut.length : 0;
      const pattern = `${cut.slice(0, i).join('').toUpperCase()}%${cut.slice(i + (b % 3)).join('')}`;
      return ilike(value, pattern) === like(value, pattern);
    }),
    { numRuns: 3000 },
  );
  assert.ok(ilike('Émile Bâtiment', 'émile%'));
  assert.ok(ilike('İstanbul', 'ISTANBUL'));
  assert.ok(!ilike('e\u0301mile', 'émile'));
  assert.ok(!ilike('abc', 'a_c'));
  assert.ok(ilike('a_c', 'A_C'));
  assert.ok(ilike('', '%%'));
  assert.ok(!ilike('ab', 'a%b%b'));
});

let knex: Knex;
let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-sqlite-like-'));
  knex = openDatabase(parseDatabaseUrl(`sqlite://${path.join(dir, 'like.sqlite')}`));
});
after(async () => {
  await knex.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the SQL the SQLite dialect compiles agrees with the oracle, NULL matching neither LIKE nor NOT LIKE', async () => {
  const qd = queryDialectFor('sqlite');
  await knex.schema.createTable('t', (t) => {
    t.integer('id').primary();
    t.string('v', 50).nullable();
  });
  const run = async (values: Array<string | null>, pattern: string) => {
    await knex('t').del();
    await knex('t').insert(values.map((v, id) => ({ id, v })));
    for (const negate of [false, true]) {
      const f = qd.like('t.v', pattern, negate);
      const ids = ((await knex('t').select('id').whereRaw(f.sql, f.bindings as Knex.RawBinding[]).orderBy('id')) as Array<{ id: number }>).map((r) => r.id);
      const expected = values.flatMap((v, id) => (v !== null && evaluate({ match: { field: 'v', operator: negate ? 'NOT LIKE' : 'LIKE', value: pattern } }, { v }) ? [id] : []));
      assert.deepEqual(ids, expected, `${negate ? 'NOT LIKE' : 'LIKE'} ${JSON.stringify(pattern)} over ${JSON.stringify(values)} (${f.sql})`);
    }
  };
  await run(['İstanbul', 'istanbul', 'ISTANBUL', '\u212aelvin', 'kelvin', null, 'a_c', 'abc', 'a%c', '', 'ΟΔΟΣ'], 'istanbul');
  await run(['İstanbul', '\u212aelvin', 'KELVIN', null, 'x[y]z', 'x!z'], '%K%');
  await run(['ΟΔΟΣ', 'οδος', 'οδοσ', null], 'οδοσ');
  await run(['a_c', 'abc', 'A_C', null, 'x[1]', 'x!1'], 'a_c');
  await run(['x[1]', 'X[1]', 'x!1', 'x1'], 'x[1]%');
  await run(['x!1', 'X!1', 'x1'], '%!%');
  // A pattern that folds to ASCII (SQLite's LIKE answers for ASCII text), one that does not (ASCII text cannot match).
  await run(['istanbul tiles', 'İstanbul Tiles', 'ISTANBUL', 'ıstanbul', null], 'İSTANBUL%');
  await run(['abc', 'é', 'É', 'e\u0301', null, ''], '%é%');
  await fc.assert(
    fc.asyncProperty(fc.array(fc.option(text, { nil: null }), { minLength: 1, maxLength: 6 }), text, async (values, pattern) => run(values, pattern)),
    { numRuns: 300 },
  );
});
