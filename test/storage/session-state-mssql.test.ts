/**
 * SQL Server, compiled only (no server here): what the service sends so that a lock it cannot get
 * is an error, and so that a pooled connection goes back to the pool with the session's defaults
 * (decision 0420). Named locks: sp_getapplock's result is checked and a refusal thrown, which the
 * boundary classifies as tedious reports it. XACT_ABORT and LOCK_TIMEOUT are set back in the same
 * batch, on success and in the CATCH; CONTEXT_INFO is cleared when a posting has no trace id; a
 * statement's time limit follows DB_DEADLINE_MS.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory, { type Knex } from 'knex';
import { APPLOCK_REFUSED_BASE, lockNameForTransaction, MSSQL_LOCK } from '../../src/storage/named-locks';
import { classifyDatabaseError, toDatabaseProblem } from '../../src/storage/boundary';
import { foldDataChangeLog, MSSQL_FOLD } from '../../src/storage/data-change-log';
import { lockExclusive, lockExclusiveWithin, lockTableExclusive } from '../../src/storage/lock-fence';
import { traceSessionStatement } from '../../src/storage/trace-session';
import { openDatabase, parseDatabaseUrl, statementTimeoutMsFor } from '../../src/storage/database';

const mssql = knexFactory({ client: 'mssql' });
after(() => mssql.destroy());

/** A stand-in transaction/knex (SQL Server's compiler) that records the raw statements sent through it (nothing runs). */
function recorder(): { db: Knex.Transaction; sent: Array<{ sql: string; bindings: unknown[] }> } {
  const sent: Array<{ sql: string; bindings: unknown[] }> = [];
  // A real Raw (it compiles), recorded as sent only when awaited (that is when knex would send it).
  const raw = (sql: string, bindings: unknown[] = []) =>
    Object.assign(Object.create(mssql.raw(sql, bindings as Knex.RawBinding[])), {
      then: (ok: (rows: unknown[]) => unknown, fail: (e: unknown) => unknown) => {
        sent.push({ sql, bindings });
        return Promise.resolve([]).then(ok, fail);
      },
    });
  const db = new Proxy(mssql, { get: (target, key) => (key === 'raw' ? raw : Reflect.get(target, key)) }) as unknown as Knex.Transaction;
  return { db, sent };
}

/** Balanced brackets, parentheses and quotes: a cheap syntax check of T-SQL that cannot be run here. */
function balanced(sql: string): void {
  assert.equal((sql.match(/\[/g) ?? []).length, (sql.match(/\]/g) ?? []).length, sql);
  assert.equal((sql.match(/\(/g) ?? []).length, (sql.match(/\)/g) ?? []).length, sql);
  assert.equal((sql.match(/'/g) ?? []).length % 2, 0, sql);
  assert.equal((sql.match(/\bBEGIN\b/g) ?? []).length - (sql.match(/\bBEGIN TRAN\b/g) ?? []).length, (sql.match(/\bEND\b/g) ?? []).length, `BEGIN/END: ${sql}`);
}

test('named lock: sp_getapplock\'s result is checked; a refusal (< 0) is thrown as 51000 - result', async () => {
  const compiled = mssql.raw(MSSQL_LOCK, ['journal 2026 JE-1']).toSQL().toNative();
  assert.equal(
    compiled.sql,
    "DECLARE @r int; EXEC @r = sp_getapplock @Resource = @p0, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 15000; " +
      "IF @r < 0 BEGIN DECLARE @e int = 51000 - @r; THROW @e, N'named lock not granted (sp_getapplock refused)', 1; END",
  );
  assert.deepEqual(compiled.bindings, ['journal 2026 JE-1']);
  balanced(compiled.sql);
  assert.equal(APPLOCK_REFUSED_BASE, 51000);
  // The statement a posting sends is that one.
  const { db, sent } = recorder();
  await lockNameForTransaction(db, 'mssql', 'journal 2026 JE-1');
  assert.deepEqual(sent, [{ sql: MSSQL_LOCK, bindings: ['journal 2026 JE-1'] }]);
});

/** The error tedious reports for a THROW (token/handler.js onErrorMessage), as knex rejects with it. */
function tediousThrow(number: number): Error {
  return Object.assign(new Error('named lock not granted (sp_getapplock refused)'), {
    name: 'RequestError',
    code: 'EREQUEST',
    number,
    state: 1,
    class: 16,
    lineNumber: 1,
    serverName: 'db',
    procName: '',
  });
}

test('named lock refused: 502 DATABASE_REFUSED, busy on timeout or cancel, deadlock for a deadlock victim', () => {
  for (const [result, reason] of [
    [-1, 'busy'],
    [-2, 'busy'],
    [-3, 'deadlock'],
  ] as const) {
    const error = tediousThrow(APPLOCK_REFUSED_BASE - result);
    assert.deepEqual(classifyDatabaseError(error, 'mssql'), { kind: 'refused', reason }, `sp_getapplock ${result}`);
    const problem = toDatabaseProblem(error, 'mssql')!;
    assert.equal(problem.code, 'DATABASE_REFUSED');
    assert.equal(problem.status, 502);
    assert.equal(problem.extensions?.refusal, reason);
    // Several errors of one request arrive as an AggregateError (tedious): still classified.
    assert.deepEqual(classifyDatabaseError(new AggregateError([tediousThrow(APPLOCK_REFUSED_BASE - result)]), 'mssql'), { kind: 'refused', reason });
  }
  // -999 (a bad call) is a bug of this service: unexpected (500), not a refusal to retry.
  assert.equal(classifyDatabaseError(tediousThrow(APPLOCK_REFUSED_BASE + 999), 'mssql'), undefined);
  // The numbers are SQL Server's only: the same number from another engine means nothing.
  assert.equal(classifyDatabaseError(tediousThrow(APPLOCK_REFUSED_BASE + 1), 'postgres'), undefined);
});

test('data change log fold: XACT_ABORT set back OFF in the same batch, on commit and in the CATCH', async () => {
  assert.equal(
    MSSQL_FOLD,
    'SET XACT_ABORT ON; BEGIN TRY BEGIN TRAN; DECLARE @k bigint; DELETE FROM [datlog] WITH (READPAST); SET @k = @@ROWCOUNT; ' +
      'IF @k > 0 UPDATE [datchg] SET [n] = [n] + @k WHERE [id] = 0; COMMIT TRAN; SET XACT_ABORT OFF; SELECT @k AS k; END TRY ' +
      'BEGIN CATCH IF @@TRANCOUNT > 0 ROLLBACK TRAN; SET XACT_ABORT OFF; THROW; END CATCH',
  );
  balanced(MSSQL_FOLD);
  // Every ON is followed by an OFF on each path: the last XACT_ABORT of the TRY and of the CATCH is OFF.
  const [tryPart, catchPart] = MSSQL_FOLD.split('BEGIN CATCH');
  assert.match(tryPart!, /SET XACT_ABORT OFF;[^]*END TRY $/);
  assert.match(catchPart!, /SET XACT_ABORT OFF; THROW; END CATCH$/);
  assert.equal(mssql.raw(MSSQL_FOLD).toSQL().toNative().sql, MSSQL_FOLD, 'no binding markers in it');
  const { db, sent } = recorder();
  await foldDataChangeLog(db, 'mssql');
  assert.deepEqual(sent.map((s) => s.sql), [MSSQL_FOLD]);
});

test('maintenance lock: the exclusive table lock waits at most waitMs (SET LOCK_TIMEOUT), set back to -1 on success and in the CATCH', async () => {
  const sql = lockExclusiveWithin(mssql, 4999.6).toString();
  assert.equal(
    sql,
    'SET LOCK_TIMEOUT 5000; BEGIN TRY select count(*) as n from [mntlck] with (tablockx, holdlock); END TRY ' +
      'BEGIN CATCH SET LOCK_TIMEOUT -1; THROW; END CATCH; SET LOCK_TIMEOUT -1;',
  );
  assert.ok(sql.includes(String(lockExclusive(mssql, 'mssql'))));
  balanced(sql);
  assert.match(lockExclusiveWithin(mssql, 0).toString(), /^SET LOCK_TIMEOUT 1;/, 'never 0 (0 = do not wait at all)');
  // The lock's transaction sends exactly that (LOCK_ACK_TIMEOUT_MS is what the lock store passes).
  const { db, sent } = recorder();
  await lockTableExclusive(db, 'mssql', 2500);
  assert.deepEqual(sent.map((s) => s.sql), [lockExclusiveWithin(mssql, 2500).toString()]);
});

test('CONTEXT_INFO: the trace id, or cleared (0x) when a posting has none, so no previous request\'s id stays on the session', () => {
  const id = '0af7651916cd43dd8448eb211c80319c';
  assert.equal(traceSessionStatement(mssql, 'mssql', id)!.toString(), `SET CONTEXT_INFO 0x${id}`);
  assert.equal(traceSessionStatement(mssql, 'mssql', undefined)!.toString(), 'SET CONTEXT_INFO 0x');
  assert.equal(traceSessionStatement(mssql, 'mssql', 'not hex; drop table x')!.toString(), 'SET CONTEXT_INFO 0x');
  assert.equal(traceSessionStatement(mssql, 'postgres', undefined), undefined);
  assert.equal(traceSessionStatement(mssql, 'sqlite', undefined), undefined);
});

test('statement time limit: tedious\'s requestTimeout follows DB_DEADLINE_MS, never below its own 15 s', () => {
  const url = 'mssql://sa:pw@db:1433/books?trustServerCertificate=true';
  const options = (statementTimeoutMs?: number) =>
    (parseDatabaseUrl(url, { min: 0, max: 4 }, statementTimeoutMs === undefined ? {} : { statementTimeoutMs }).config.connection as { options: Record<string, unknown> }).options;
  assert.equal(options(statementTimeoutMsFor(60_000)).requestTimeout, 60_000);
  assert.equal(options(statementTimeoutMsFor(15_000)).requestTimeout, 15_000);
  assert.equal(options(statementTimeoutMsFor(2_000)).requestTimeout, 15_000);
  assert.equal(options().requestTimeout, undefined, 'unset: tedious\'s default');
  assert.equal(options(60_000).trustServerCertificate, true, 'the other options kept');
  // What knex hands tedious: the option wins over knex's own 15 s default.
  const client = knexFactory(parseDatabaseUrl(url, { min: 0, max: 1 }, { statementTimeoutMs: 60_000 }).config);
  try {
    const cfg = (client.client as { _generateConnection(): { options: { requestTimeout: number } } })._generateConnection();
    assert.equal(cfg.options.requestTimeout, 60_000);
  } finally {
    void client.destroy();
  }
});

/**
 * A statement tedious cancels (past requestTimeout) stops its batch before the batch sets its
 * session state back: its connection is disposed (knex's pool destroys it) instead of reused.
 * knex's own statement call runs; only the driver's request is stood in for.
 */
test('a cancelled statement disposes of its connection; a refused one does not', async () => {
  const knex = openDatabase(parseDatabaseUrl('mssql://sa:pw@db:1433/books', { min: 0, max: 1 }));
  try {
    const client = knex.client as any;
    let answer: Error | undefined;
    client._makeRequest = (_query: unknown, callback: (err?: Error) => void) => ({ on: () => undefined, answer: () => callback(answer) });
    client._assignBindings = () => undefined;
    client._enqueueRequest = (request: { answer(): void }) => request.answer();
    const tedious = (code: string, message: string) => Object.assign(new Error(message), { name: 'RequestError', code });
    const sent = async (err: Error) => {
      answer = err;
      const connection: { __knex__disposed?: unknown } = {};
      await assert.rejects(client._query(connection, { sql: 'SET LOCK_TIMEOUT 1000; SELECT 1', bindings: [] }), (e: Error) => e === err);
      return connection;
    };
    const timedOut = tedious('ETIMEOUT', 'Timeout: Request failed to complete in 15000ms');
    assert.equal((await sent(timedOut)).__knex__disposed, timedOut, 'past requestTimeout: disposed');
    assert.ok((await sent(tedious('ECANCEL', 'Canceled.'))).__knex__disposed, 'cancelled: disposed');
    assert.equal((await sent(tedious('EREQUEST', 'Violation of PRIMARY KEY constraint'))).__knex__disposed, undefined, 'a refusal keeps its connection');
  } finally {
    await knex.destroy();
  }
});
