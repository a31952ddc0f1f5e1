/**
 * A statement run by a transaction's BEGIN (src/storage/database.ts BeginStatement, the posting's
 * lock fence): its rows are there before the transaction's work starts, on PostgreSQL in BEGIN's
 * own round trip; a failing one fails the transaction and leaves the connection clean for the next
 * (a pool of one connection: the next transaction runs on it).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { createTestDatabase } from '../support/app';
import { WITH_BEGIN, openDatabase, parseDatabaseUrl, type BeginStatement } from '../../src/storage/database';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let knex: Knex;
let engine: string;
before(async () => {
  db = await createTestDatabase(false);
  const target = parseDatabaseUrl(db.url, { min: 0, max: 1 });
  engine = target.engine;
  knex = openDatabase(target);
});
after(async () => {
  await knex?.destroy();
  await db?.drop();
});

const withBegin = (statement: BeginStatement) => ({ [WITH_BEGIN]: statement }) as Knex.TransactionConfig;

/** Runs `fn` and returns the SQL of every statement knex sent. */
async function sent(fn: () => Promise<unknown>): Promise<string[]> {
  const out: string[] = [];
  const listen = (q: { sql: string }) => out.push(q.sql);
  knex.on('query', listen);
  try {
    await fn();
  } finally {
    knex.off('query', listen);
  }
  return out;
}

test('the rows of the BEGIN statement are there when the transaction starts its work', async () => {
  const statement: BeginStatement = { sql: 'select ? as seven, ? as word', bindings: [7, "it's"] };
  let seen: unknown;
  const statements = await sent(() =>
    knex.transaction(async (trx) => {
      seen = statement.rows;
      await trx.raw('select 1');
    }, withBegin(statement)),
  );
  assert.deepEqual(seen, [{ seven: 7, word: "it's" }]);
  if (engine === 'postgres') {
    assert.equal(statements[0], `BEGIN; select 7 as seven, 'it''s' as word`, 'in BEGIN\'s round trip, the constants written in');
  } else {
    assert.ok(!statements.some((sql) => /seven/.test(sql)), 'SQLite: run on the connection, no knex statement');
  }
});

test('a failing BEGIN statement fails the transaction; the connection serves the next one', async () => {
  const statement: BeginStatement = { sql: 'select n from zz_no_such_table where id = ?', bindings: [1] };
  let ran = false;
  await assert.rejects(
    knex.transaction(async () => {
      ran = true;
    }, withBegin(statement)),
    /zz_no_such_table/,
  );
  assert.equal(ran, false, 'the work never started');
  assert.equal(statement.rows, undefined);
  // One connection in the pool: the next transactions run on it, as if nothing had happened.
  for (let i = 0; i < 2; i += 1) {
    const again: BeginStatement = { sql: 'select ? as one', bindings: [1] };
    const value = await knex.transaction(async (trx) => {
      await trx.raw('select 1');
      return again.rows;
    }, withBegin(again));
    assert.deepEqual(value, [{ one: 1 }]);
  }
  const plain = await knex.transaction(async (trx) => {
    await trx.raw('select 2 as two');
    return 'ok';
  });
  assert.equal(plain, 'ok', 'and a transaction without a BEGIN statement');
});

test('statements run after the BEGIN statement: on PostgreSQL in the same round trip, on SQLite on the connection; their rows apart; a failing one fails the transaction', async () => {
  const statement: BeginStatement = {
    sql: 'select ? as seven',
    bindings: [7],
    then: [
      { sql: 'select ? as eight', bindings: [8] },
      { sql: 'select ? as nine', bindings: ["n'ne"] },
    ],
  };
  const statements = await sent(() =>
    knex.transaction(async (trx) => {
      await trx.raw('select 1');
    }, withBegin(statement)),
  );
  assert.deepEqual(statement.rows, [{ seven: 7 }], 'the rows of the BEGIN statement, not of the last');
  assert.equal(statement.thenSent, true);
  assert.deepEqual(statement.thenRows, [[{ eight: 8 }], [{ nine: "n'ne" }]]);
  if (engine === 'postgres') {
    assert.equal(statements[0], "BEGIN; select 7 as seven; select 8 as eight; select 'n''ne' as nine", 'one round trip');
  } else {
    assert.ok(!statements.some((sql) => /eight|nine/.test(sql)), 'SQLite: run on the connection, no knex statement');
  }
  const failing: BeginStatement = { sql: 'select ? as one', bindings: [1], then: [{ sql: 'select n from zz_no_such_table', bindings: [] }] };
  await assert.rejects(
    knex.transaction(async (trx) => trx.raw('select 1'), withBegin(failing)),
    /zz_no_such_table/,
  );
  assert.equal(failing.thenSent, undefined);
  const next: BeginStatement = { sql: 'select ? as two', bindings: [2] };
  assert.deepEqual(await knex.transaction(async () => next.rows, withBegin(next)), [{ two: 2 }], 'the connection serves the next transaction');
});
