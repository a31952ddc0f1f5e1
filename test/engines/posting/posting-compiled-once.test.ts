/**
 * A posting's statements are compiled once per shape (src/storage/compiled-statements.ts, issue
 * 27): after the first journal, AP invoice and service inventory item, a journal with an Idempotency-Key too, the next ones
 * have knex's query compiler write none of their statements (the number counter's occasional block excepted),
 * and post what they always posted. Observed on knex's compiler itself.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { apInvoice, journal } from '../../support/posting-fixture';

let t: TestApp;
usePostingApp((app) => (t = app));

// eslint-disable-next-line @typescript-eslint/no-require-imports
const QueryCompiler = require('knex/lib/query/querycompiler') as { prototype: { toSQL: (...args: unknown[]) => { sql: string } } };

/** The SQL knex's query compiler wrote while `fn` ran. */
async function compiledDuring(fn: () => Promise<void>): Promise<string[]> {
  const out: string[] = [];
  const original = QueryCompiler.prototype.toSQL;
  QueryCompiler.prototype.toSQL = function (this: unknown, ...args: unknown[]) {
    const compiled = original.apply(this, args);
    out.push(String(compiled.sql));
    return compiled;
  };
  try {
    await fn();
  } finally {
    QueryCompiler.prototype.toSQL = original;
  }
  return out;
}

let n = 0;
const cases = [
  ['a journal', '/api/v3/ledger-transactions', () => journal(`CO-J-${++n}`), false],
  ['a journal with an Idempotency-Key', '/api/v3/ledger-transactions', () => journal(`CO-JK-${++n}`), true],
  ['an AP invoice of 3 lines', '/api/v3/ap-invoices', () => apInvoice(`CO-I-${++n}`, 3), false],
  // Seeded client 12 and its site 9 (the read-back test's).
  ['a service inventory item', '/api/v3/service-inventories', () => ({ clientNumber: 12, serviceLocation: 9, description: 'Compiled once', serialNumber: `CO-S-${++n}`, installDate: '2026-03-01' }), false],
] as const;

for (const [what, path, body, keyed] of cases) {
  test(`${what}: after the first, knex compiles none of its statements`, async () => {
    const post = async () => {
      const res = await (keyed ? t.post(path, body()).set('Idempotency-Key', `co-${++n}`) : t.post(path, body()));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.headers['idempotency-status'], 'applied');
    };
    await post();
    await post();
    const compiled = await compiledDuring(async () => {
      for (let i = 0; i < 3; i += 1) await post();
    });
    // Compiled as always: a new block of record numbers now and then (storage/numbers.ts); not the
    // postings' at all, the lock store's periodic re-read of the lock and the API key cache's reads.
    assert.deepEqual(
      compiled.filter((sql) => !/numseq|^select \* from .mntlck.|^select \* from .apikey./.test(sql)),
      [],
    );
  });
}
