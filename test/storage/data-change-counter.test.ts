/**
 * The change token of reads (SnapshotReader.changeToken) is the data change counter (migration
 * 20261125000001): it moves with every commit that changes book data, through any connection,
 * and NOT with the service's bookkeeping writes (heartbeat, claims, number blocks, the lock), which
 * used to rebuild every worker's match index and recount every second.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from '../support/app';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';
import { queryDialectFor } from '../../src/storage/dialect';
import { CATALOG } from '../../generated/catalog';
import { installPostingFixture, journal } from '../support/posting-fixture';
import { COUNTED_TABLES, DATA_COUNTER_TABLE, DATA_LOG_TABLE, createStatements } from '../../db/migrations/20261125000001_data_change_counter';
import { DATA_TOKEN_SQL, foldDataChangeLog } from '../../src/storage/data-change-log';

let t: TestApp;
let other: Knex;

before(async () => {
  t = await startTestApp();
  await installPostingFixture(t.knex);
  other = openDatabase(parseDatabaseUrl(t.services.config.databaseUrl, { min: 0, max: 2 }));
});
after(async () => {
  await other?.destroy();
  await t?.close();
});

async function token(): Promise<string | undefined> {
  return queryDialectFor(t.engine).readSnapshot(t.knex, (reader) => reader.changeToken());
}

test('every table the query engine reads (entities and their children) is counted', async () => {
  const read = new Set<string>();
  for (const entity of Object.values(CATALOG)) {
    read.add(entity.table);
    for (const child of Object.values(entity.children)) read.add(child.table);
  }
  const missing = [...read].filter((table) => !COUNTED_TABLES.includes(table));
  assert.deepEqual(missing, [], 'tables read but not counted');
  // And the triggers are in the database itself.
  const triggers =
    t.engine === 'sqlite'
      ? ((await t.knex('sqlite_master').where({ type: 'trigger' }).andWhere('name', 'like', '%datchg%').select('tbl_name as table')) as Array<{ table: string }>)
      : ((await t.knex.raw(`select c.relname as "table" from pg_trigger g join pg_class c on c.oid = g.tgrelid where g.tgname like '%datchg'`)).rows as Array<{ table: string }>);
  const withTrigger = new Set(triggers.map((r) => r.table));
  assert.deepEqual([...read].filter((table) => !withTrigger.has(table)), [], 'tables without a counting trigger in the database');
});

test('a direct change of book data through another connection moves the token; bookkeeping writes do not', async () => {
  const before = await token();
  assert.ok(before !== undefined, 'the engine has a token');
  assert.equal(await token(), before, 'no change: same token');

  // Bookkeeping: a heartbeat, a number block, a claim row. None of them is book data.
  await t.services.heartbeat.beat();
  await other('numseq').update({ next_value: other.raw('next_value') });
  await other('idmkey').where('idem_key', '__none__').update({ idem_key: '__none__' });
  assert.equal(await token(), before, 'bookkeeping writes leave the token alone');

  const part = await other('tkfprt').orderBy('recnum').first('recnum', 'prtnme');
  await other('tkfprt').where({ recnum: part.recnum }).update({ prtnme: part.prtnme });
  const afterUpdate = await token();
  assert.notEqual(afterUpdate, before, 'an UPDATE of a part (even to the same value) is a change');
  await other.transaction(async (trx) => {
    await trx('tkfprt').where({ recnum: part.recnum }).update({ prtnme: part.prtnme });
    await trx('tkfprt').where({ recnum: part.recnum }).update({ prtnme: part.prtnme });
  });
  assert.notEqual(await token(), afterUpdate, 'a second transaction moves it again');
});

test('a posting through the API moves the token, a rolled-back change does not', async () => {
  const before = await token();
  await other
    .transaction(async (trx) => {
      await trx('tkfprt').orderBy('recnum').limit(1).update({ prtnme: 'rolled back' });
      throw new Error('roll back');
    })
    .catch(() => undefined);
  assert.equal(await token(), before, 'rolled back: nothing changed');
  const res = await t.post('/api/v3/ledger-transactions', journal(`DCC-${Date.now()}`));
  if (res.status !== 200) return assert.fail(`posting refused: ${res.status} ${res.text}`);
  assert.notEqual(await token(), before);
});

test('PostgreSQL: one log row per transaction, folded into the counter without moving the token', async (ctx) => {
  if (t.engine !== 'postgres') return ctx.skip('SQLite counts changed rows in datchg directly');
  const logged = async () => Number((await other(DATA_LOG_TABLE).count('* as n').first())!.n);
  await foldDataChangeLog(t.knex, t.engine);
  assert.equal(await logged(), 0, 'folded: the log is empty');
  const before = await token();
  await other.transaction(async (trx) => {
    const part = await trx('tkfprt').orderBy('recnum').first('recnum', 'prtnme');
    for (let i = 0; i < 5; i++) await trx('tkfprt').where({ recnum: part.recnum }).update({ prtnme: part.prtnme });
    await trx('jobcst').where('recnum', -1).del();
  });
  assert.equal(await logged(), 1, 'six statements on two tables: one log row');
  const changed = await token();
  assert.equal(Number(changed), Number(before) + 1);
  const counter = Number((await other(DATA_COUNTER_TABLE).where({ id: 0 }).first('n'))!.n);
  assert.equal(await foldDataChangeLog(t.knex, t.engine), 1, 'the fold moves the one row');
  assert.equal(await logged(), 0);
  assert.equal(Number((await other(DATA_COUNTER_TABLE).where({ id: 0 }).first('n'))!.n), counter + 1);
  assert.equal(await token(), changed, 'a fold leaves the token as it was');
});

test('PostgreSQL: concurrent writers do not queue on the counter (an open writer does not hold up another)', async (ctx) => {
  if (t.engine !== 'postgres') return ctx.skip('PostgreSQL only: SQLite has one writer');
  const parts = (await t.knex('tkfprt').orderBy('recnum').limit(2).select('recnum', 'prtnme')) as Array<{ recnum: number; prtnme: string }>;
  const first = await other.transaction();
  try {
    await first('tkfprt').where({ recnum: parts[0]!.recnum }).update({ prtnme: parts[0]!.prtnme });
    // The first transaction is open and has counted its change. A second writer on another connection:
    await t.knex.transaction(async (trx) => {
      await trx.raw("set local statement_timeout = '3s'");
      await trx('tkfprt').where({ recnum: parts[1]!.recnum }).update({ prtnme: parts[1]!.prtnme });
    });
  } finally {
    await first.rollback();
  }
});

test('SQL Server: one statement trigger per table, each its own batch, logging the transaction once', () => {
  const statements = createStatements('mssql');
  assert.equal(statements.length, COUNTED_TABLES.length);
  for (const sql of statements) {
    assert.match(sql, /^CREATE OR ALTER TRIGGER \[\w+_datchg\] ON \[\w+\] AFTER INSERT, UPDATE, DELETE AS BEGIN SET NOCOUNT ON; /);
    assert.match(sql, /IF NOT EXISTS \(SELECT 1 FROM \[datlog\] WHERE \[txid\] = CURRENT_TRANSACTION_ID\(\)\) INSERT INTO \[datlog\] \(\[txid\]\) VALUES \(CURRENT_TRANSACTION_ID\(\)\); END$/);
    assert.ok(!/;\s*GO\b/i.test(sql));
  }
});

test('SQL Server: the fold is one batch in one transaction, skipping rows of transactions in flight; the token is one statement', async () => {
  const sent: string[] = [];
  const fake = { raw: async (sql: string) => (sent.push(sql), [{ k: 3 }]) } as unknown as Knex;
  assert.equal(await foldDataChangeLog(fake, 'mssql'), 3);
  assert.equal(sent.length, 1, 'one batch');
  const [batch] = sent as [string];
  assert.match(batch, /^SET XACT_ABORT ON; BEGIN TRY BEGIN TRAN; /);
  // XACT_ABORT is the session's: set back OFF for the pooled connection's next user (decision 0420).
  assert.match(batch, /COMMIT TRAN; SET XACT_ABORT OFF; .*BEGIN CATCH IF @@TRANCOUNT > 0 ROLLBACK TRAN; SET XACT_ABORT OFF; THROW; END CATCH$/);
  assert.match(batch, /DELETE FROM \[datlog\] WITH \(READPAST\); SET @k = @@ROWCOUNT; IF @k > 0 UPDATE \[datchg\] SET \[n\] = \[n\] \+ @k WHERE \[id\] = 0; COMMIT TRAN;/);
  assert.equal(await foldDataChangeLog(fake, 'sqlite'), 0, 'SQLite: nothing to fold');
  assert.equal(sent.length, 1, 'and no statement');
  assert.equal(DATA_TOKEN_SQL, 'select (select n from datchg where id = 0) + (select count(*) from datlog) as n');
});
