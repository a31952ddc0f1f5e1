/**
 * SQL Server reads run in SNAPSHOT isolation (query-dialect-mssql.ts), which needs the database's
 * ALLOW_SNAPSHOT_ISOLATION ON: /readyz asks sys.databases and answers 503 naming the setting while
 * it is not ON (decision 0420). No SQL Server here: the database state is SQL Server's over the test
 * database, its sys.databases answer stubbed; the other engines ask nothing more.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import knexFactory, { type Knex } from 'knex';
import type { TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';
import { assertProblem } from '../support/http';
import { DatabaseState, MSSQL_SNAPSHOT_STATE_SQL } from '../../src/storage/database-state';
import { MIGRATION_NAMES } from '../../db/migration-names';

let t: TestApp;
useTestApp((app) => (t = app));

/** The test database, but sys.databases answers `state` for the snapshot isolation query. */
function withSnapshotState(knex: Knex, answer: () => Promise<unknown>): Knex {
  return new Proxy(knex, {
    get(target, prop, receiver) {
      if (prop === 'raw') return (sql: string, ...rest: unknown[]) => (sql === MSSQL_SNAPSHOT_STATE_SQL ? answer() : (target.raw as (...a: unknown[]) => unknown)(sql, ...rest));
      return Reflect.get(target, prop, receiver);
    },
  });
}

test('the snapshot isolation query compiles for SQL Server as written (no bindings)', async () => {
  const mssql = knexFactory({ client: 'mssql' });
  try {
    const compiled = mssql.raw(MSSQL_SNAPSHOT_STATE_SQL).toSQL().toNative();
    assert.equal(compiled.sql, 'select [name], [snapshot_isolation_state] as [state] from sys.databases where [database_id] = DB_ID()');
    assert.deepEqual(compiled.bindings, []);
  } finally {
    await mssql.destroy();
  }
});

test('GET /readyz on SQL Server: 503 naming ALLOW_SNAPSHOT_ISOLATION until it is ON, then 200', async () => {
  const original = t.services.database;
  let state = 0;
  t.services.database = new DatabaseState(withSnapshotState(t.services.knex, async () => [{ name: 'books', state }]), MIGRATION_NAMES, 'mssql');
  try {
    for (const off of [0, 2, 3]) {
      state = off;
      const body = assertProblem(await t.http.get('/readyz'), 'SERVICE_UNAVAILABLE');
      assert.match(body.detail, /ALLOW_SNAPSHOT_ISOLATION is not ON for books/, `state ${off}`);
      assert.match(body.detail, /ALTER DATABASE \[books\] SET ALLOW_SNAPSHOT_ISOLATION ON/);
    }
    state = 1;
    const ready = await t.http.get('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ready');
    // The query itself failing is 503 too, without the driver's words.
    t.services.database = new DatabaseState(withSnapshotState(t.services.knex, () => Promise.reject(new Error('VIEW SERVER STATE denied on 10.0.0.1'))), MIGRATION_NAMES, 'mssql');
    const failed = assertProblem(await t.http.get('/readyz'), 'SERVICE_UNAVAILABLE');
    assert.match(failed.detail, /database settings could not be read/);
    assert.doesNotMatch(failed.detail, /10\.0\.0\.1/);
  } finally {
    t.services.database = original;
  }
});

test('GET /readyz on SQLite and PostgreSQL asks no such setting', async () => {
  const original = t.services.database;
  let asked = 0;
  t.services.database = new DatabaseState(withSnapshotState(t.services.knex, async () => (asked++, [])), MIGRATION_NAMES, t.engine);
  try {
    assert.equal((await t.http.get('/readyz')).status, 200);
    assert.equal(asked, 0);
  } finally {
    t.services.database = original;
  }
});
