/**
 * The fence between the maintenance lock and the postings (src/storage/lock-fence.ts), compiled for
 * SQL Server and PostgreSQL (no SQL Server here: the T-SQL is checked as text): a posting reads the
 * lock row under a SHARED table lock held to its commit; taking the lock holds an EXCLUSIVE one.
 */
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import { lockExclusive, lockShared, lockSharedWith } from '../../src/storage/lock-fence';

const mssql = knexFactory({ client: 'mssql' });
const pg = knexFactory({ client: 'pg' });
after(async () => {
  await mssql.destroy();
  await pg.destroy();
});

test('SQL Server: postings take a shared table lock on mntlck to the end of their transaction; the lock takes an exclusive one', () => {
  const shared = lockShared(mssql, 'mssql').toSQL().toNative();
  assert.equal(shared.sql, 'select [user_name], [locked_at] from [mntlck] with (tablock, holdlock) where [id] = @p0');
  assert.deepEqual(shared.bindings, [1]);
  assert.equal(String(lockExclusive(mssql, 'mssql')), 'select count(*) as n from [mntlck] with (tablockx, holdlock)');
});

test('PostgreSQL: FOR SHARE (ROW SHARE on the table, no row lock while unlocked) against LOCK TABLE ... IN EXCLUSIVE MODE', () => {
  assert.equal(lockShared(pg, 'postgres').toSQL().sql, 'select "user_name", "locked_at" from "mntlck" where "id" = ? for share');
  assert.equal(String(lockExclusive(pg, 'postgres')), 'lock table mntlck in exclusive mode');
});

test('SQLite: one writer at a time already; a plain read, no exclusive statement', () => {
  const sqlite = knexFactory({ client: 'better-sqlite3', useNullAsDefault: true, connection: { filename: ':memory:' } });
  try {
    assert.doesNotMatch(lockShared(sqlite, 'sqlite').toSQL().sql, /for share|holdlock/i);
    assert.equal(lockExclusive(sqlite, 'sqlite'), undefined);
  } finally {
    void sqlite.destroy();
  }
});

test('with a rider (the reference counter), the lock row is read by the same shared-lock statement, outer-joined to one row', () => {
  const rider = '(select n from refchg where id = 1)';
  const shared = lockSharedWith(mssql, 'mssql', rider).toSQL().toNative();
  assert.equal(
    shared.sql,
    'select (select n from refchg where id = 1) as [rider], [m].[user_name], [m].[locked_at] from (select 1 as [one]) as [o] left join (select [user_name], [locked_at] from [mntlck] with (tablock, holdlock) where [id] = @p0) as [m] on 1 = 1',
  );
  assert.deepEqual(shared.bindings, [1]);
  assert.equal(
    lockSharedWith(pg, 'postgres', rider).toSQL().sql,
    'select (select n from refchg where id = 1) as "rider", "m"."user_name", "m"."locked_at" from (select 1 as "one") "o" left join (select "user_name", "locked_at" from "mntlck" where "id" = ? for share) as "m" on 1 = 1',
  );
});
