/**
 * The table of writes (src/engines/posting/writes.ts) against the contract: every write operation
 * of openapi.yaml (a POST that is neither a /query nor a /match, outside /utility and the Events
 * management operations, which post nothing to the books) has its line,
 * every line is such an operation, and a line whose definition is null answers 501
 * NOT_IMPLEMENTED (a temporary table entry, mounted the way the server mounts the table).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { OPERATIONS } from '../../../generated/operations';
import { WRITES, type WriteEntry } from '../../../src/engines/posting/writes';
import { startTestApp, type TestApp } from '../../support/app';
import { assertProblem } from '../../support/http';
import { countRows, installPostingFixture, journal } from '../../support/posting-fixture';

const contractWrites = OPERATIONS.filter((op) => op.method.toUpperCase() === 'POST' && !/\/(query|match)$/.test(op.path) && !op.path.startsWith('/utility/') && op.tag !== 'Events')
  .map((op) => op.path)
  .sort();

test('every write operation of openapi.yaml has a line in the table of writes, and every line is one', () => {
  assert.ok(contractWrites.length >= 2, `write operations in the contract: ${contractWrites.join(', ')}`);
  const listed = WRITES.map((w) => w.route).sort();
  assert.deepEqual(listed, contractWrites);
  assert.equal(new Set(listed).size, listed.length, 'one line per route');
  for (const entry of WRITES) {
    if (entry.definition) assert.equal(entry.definition.route, entry.route, `the definition of ${entry.route} carries its own route`);
  }
});

notImplementedRoute();

function notImplementedRoute(): void {
  const table = WRITES as WriteEntry[];
  const index = table.findIndex((w) => w.route === '/ledger-transactions');
  const original = table[index]!;
  let t: TestApp;

  before(async () => {
    // A temporary table entry: the journal route listed but not wired up.
    table[index] = { route: '/ledger-transactions', definition: null };
    try {
      t = await startTestApp({ doctored: true });
    } finally {
      table[index] = original;
    }
    await installPostingFixture(t.knex);
  });
  after(async () => {
    await t?.close();
  });

  test('a route listed with definition null answers 501 NOT_IMPLEMENTED and writes nothing', async () => {
    const before = await countRows(t.knex, 'lgrtrn');
    const res = await t.post('/api/v3/ledger-transactions', journal('WT-1')).set('Idempotency-Key', 'wt-1');
    const body = assertProblem(res, 'NOT_IMPLEMENTED', '/api/v3/ledger-transactions');
    assert.match(body.detail, /\/ledger-transactions/);
    assert.equal(await countRows(t.knex, 'lgrtrn'), before, 'nothing written');
    // The other writes of the same table are still served.
    const other = await t.post('/api/v3/ap-invoices', {}).set('Idempotency-Key', 'wt-2');
    assert.notEqual(other.status, 501);
  });
}
