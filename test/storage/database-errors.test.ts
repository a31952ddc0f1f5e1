/**
 * The classification of driver errors (src/storage/boundary.ts), with fabricated errors shaped
 * like those of each driver (better-sqlite3, pg, mssql/tedious): connection failures are 502
 * DATABASE_UNAVAILABLE, data exceptions 400 VALUE_OUT_OF_RANGE, refusals 502 DATABASE_REFUSED,
 * statement timeouts 504, anything else unexpected (500). And the commit rule of
 * Boundary.transaction: a connection failure before COMMIT is 502 (nothing committed), during or
 * after COMMIT it is OutcomeUnknown (504, the write engine records the key as unknown).
 * Pure: runs the same on every TEST_ENGINE.
 */
import test, { describe } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { Knex } from 'knex';
import { ApiProblem } from '../../src/errors/problem';
import { Boundary, classifyDatabaseError, commitOutcomeUnknown, notNullRefusal, OutcomeUnknown, DeadlineExceeded, toDatabaseProblem } from '../../src/storage/boundary';
import type { Engine } from '../../src/storage/database';

const err = (message: string, props: Record<string, unknown> = {}): Error => Object.assign(new Error(message), props);
/** pg DatabaseError: SQLSTATE in `code`, sometimes `column` and `table`. */
const pgError = (code: string, message = `pg error ${code}`, props: Record<string, unknown> = {}) => err(message, { code, severity: 'ERROR', ...props });
/** mssql RequestError wrapping a tedious error with the server's error number. */
const mssqlRequestError = (number: number, message = `mssql error ${number}`) =>
  Object.assign(err(message, { name: 'RequestError', code: 'EREQUEST', number }), { originalError: err(message, { number, info: { number, message } }) });
const mssqlConnectionError = (code: string, message = `mssql connection error ${code}`) => err(message, { name: 'ConnectionError', code });

function problemOf(e: unknown, engine: Engine, fieldOf?: (column: string, table?: string) => string | undefined): ApiProblem | undefined {
  return toDatabaseProblem(e, engine, { fieldOf });
}

function assertUnavailable(e: unknown, engine: Engine, label: string): void {
  assert.deepEqual(classifyDatabaseError(e, engine), { kind: 'unavailable' }, label);
  const problem = problemOf(e, engine)!;
  assert.equal(problem.code, 'DATABASE_UNAVAILABLE', label);
  assert.equal(problem.status, 502);
  assert.equal(problem.headers['Retry-After'], undefined, `${label}: no Retry-After`);
  assert.equal(problem.errors, undefined);
}

function assertValue(e: unknown, engine: Engine, label: string): void {
  assert.equal(classifyDatabaseError(e, engine)?.kind, 'value', label);
  const problem = problemOf(e, engine)!;
  assert.equal(problem.code, 'VALUE_OUT_OF_RANGE', label);
  assert.equal(problem.status, 400);
  assert.equal(problem.errors, undefined, `${label}: no field known, no errors[]`);
}

function assertRefused(e: unknown, engine: Engine, reason: string, label: string): void {
  assert.deepEqual(classifyDatabaseError(e, engine), { kind: 'refused', reason }, label);
  const problem = problemOf(e, engine)!;
  assert.equal(problem.code, 'DATABASE_REFUSED', label);
  assert.equal(problem.headers['Retry-After'], undefined);
  assert.equal(problem.extensions.refusal, reason);
}

describe('PostgreSQL (pg)', () => {
  test('connection failures: refused, reset, terminated by the administrator, class 08, too many connections', () => {
    const refused = err('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED', errno: -111, syscall: 'connect', address: '127.0.0.1', port: 5432 });
    assertUnavailable(refused, 'postgres', 'ECONNREFUSED');
    // Node 20 dual-stack connect: an AggregateError (empty message) carrying the per-address errors.
    const aggregate = Object.assign(new AggregateError([refused, err('connect ECONNREFUSED ::1:5432', { code: 'ECONNREFUSED' })], ''), { code: 'ECONNREFUSED' });
    assertUnavailable(aggregate, 'postgres', 'AggregateError');
    assertUnavailable(Object.assign(new AggregateError([refused], '')), 'postgres', 'AggregateError without its own code');
    assertUnavailable(err('read ECONNRESET', { code: 'ECONNRESET', syscall: 'read' }), 'postgres', 'ECONNRESET');
    assertUnavailable(err('Connection terminated unexpectedly'), 'postgres', 'pg: Connection terminated unexpectedly');
    assertUnavailable(err('Connection terminated'), 'postgres', 'knex/pg: Connection terminated');
    assertUnavailable(err('Client has encountered a connection error and is not queryable'), 'postgres', 'pg: not queryable');
    assertUnavailable(err('timeout exceeded when trying to connect'), 'postgres', 'pg connectionTimeoutMillis');
    for (const code of ['57P01', '57P02', '57P03', '57P04', '08000', '08001', '08003', '08006', '08P01', '53300']) {
      assertUnavailable(pgError(code, 'terminating connection due to administrator command'), 'postgres', code);
    }
    assertUnavailable(pgError('57P01'), 'postgres', '57P01 by code alone');
    // A pool acquire that failed because the connection could not be made (knex propagates the create error).
    assertUnavailable(err('Unable to acquire a connection'), 'postgres', 'knex acquire');
    assertUnavailable(Object.assign(new Error('acquire failed'), { cause: refused }), 'postgres', 'wrapped in cause');
  });

  test('data exceptions (class 22) are 400 VALUE_OUT_OF_RANGE; the field is named when the driver names a column the caller can map', () => {
    assertValue(pgError('22021', 'invalid byte sequence for encoding "UTF8": 0x00'), 'postgres', '22021 NUL byte');
    assertValue(pgError('22003', 'numeric field overflow'), 'postgres', '22003 out of range');
    assertValue(pgError('22P02', 'invalid input syntax for type integer: "x"'), 'postgres', '22P02 invalid text representation');
    assertValue(pgError('22008', 'date/time field value out of range'), 'postgres', '22008 datetime overflow');
    assertValue(pgError('22001', 'value too long for type character varying(30)'), 'postgres', '22001 string too long');
    const withColumn = pgError('22003', 'numeric field overflow', { column: 'dbtamt', table: 'lgtnln' });
    assert.deepEqual(classifyDatabaseError(withColumn, 'postgres'), { kind: 'value', column: 'dbtamt', table: 'lgtnln' });
    const named = problemOf(withColumn, 'postgres', (column, table) => (table === 'lgtnln' && column === 'dbtamt' ? 'lines[0].debitAmount' : undefined))!;
    assert.equal(named.code, 'VALUE_OUT_OF_RANGE');
    assert.deepEqual(named.errors, [{ field: 'lines[0].debitAmount', code: 'range' }]);
    assert.match(named.detail, /lines\[0\]\.debitAmount/);
    // A column nobody maps: no errors[] (never a storage name in place of a request field).
    assert.equal(problemOf(withColumn, 'postgres', () => undefined)!.errors, undefined);
  });

  test('refusals stay 502 DATABASE_REFUSED; statement timeouts 504; anything else unexpected', () => {
    assertRefused(pgError('23505', 'duplicate key value violates unique constraint'), 'postgres', 'constraint', 'unique');
    assertRefused(pgError('23503'), 'postgres', 'constraint', 'foreign key');
    assertRefused(pgError('40P01', 'deadlock detected'), 'postgres', 'deadlock', 'deadlock');
    assertRefused(pgError('40001'), 'postgres', 'deadlock', 'serialization');
    assertRefused(pgError('42501', 'permission denied for table lgrtrn'), 'postgres', 'permission', 'permission');
    assertRefused(pgError('55P03'), 'postgres', 'busy', 'lock not available');
    assertRefused(pgError('53100'), 'postgres', 'resources', 'disk full');
    assertRefused(err('Knex: Timeout acquiring a connection. The pool is probably full.', { name: 'KnexTimeoutError' }), 'postgres', 'busy', 'pool full');
    assert.deepEqual(classifyDatabaseError(pgError('57014', 'canceling statement due to statement timeout'), 'postgres'), { kind: 'timeout' });
    assert.equal(problemOf(pgError('57014'), 'postgres')!.code, 'UPSTREAM_TIMEOUT');
    // A missing table is an older build of the accounting system, not a 500 (test/catalog/installed-schema.test.ts).
    assert.deepEqual(classifyDatabaseError(pgError('42P01', 'relation "nope" does not exist'), 'postgres'), { kind: 'missing', table: 'nope' });
    assert.equal(classifyDatabaseError(pgError('42601', 'syntax error'), 'postgres'), undefined);
    assert.equal(classifyDatabaseError(new TypeError('x is undefined'), 'postgres'), undefined);
    assert.equal(problemOf(new TypeError('x'), 'postgres'), undefined);
  });
});

describe('SQL Server (mssql / tedious)', () => {
  test('connection failures: ESOCKET, ECONNCLOSED, ETIMEOUT on connect, error numbers 233/10054/10053 and friends', () => {
    assertUnavailable(mssqlConnectionError('ESOCKET', 'Failed to connect to db:1433 - connect ECONNREFUSED'), 'mssql', 'ESOCKET');
    assertUnavailable(mssqlConnectionError('ECONNCLOSED', 'Connection is closed.'), 'mssql', 'ECONNCLOSED');
    assertUnavailable(mssqlConnectionError('ETIMEOUT', 'Failed to connect to db:1433 in 15000ms'), 'mssql', 'ETIMEOUT on connect');
    assertUnavailable(mssqlConnectionError('ENOTOPEN', 'Connection not yet open.'), 'mssql', 'ENOTOPEN');
    assertUnavailable(err('Connection closed before request completed.', { name: 'RequestError', code: 'ECLOSE' }), 'mssql', 'tedious ECLOSE');
    for (const number of [233, 10054, 10053, 10060, 10061, 4060, 40613, 64, 121]) {
      assertUnavailable(mssqlRequestError(number), 'mssql', `number ${number}`);
    }
    // The number only on the wrapped tedious error.
    assertUnavailable(err('outer', { name: 'RequestError', code: 'EREQUEST', originalError: { message: 'inner', info: { number: 10054 } } }), 'mssql', 'originalError.info.number');
  });

  test('conversion, overflow and truncation errors are 400 VALUE_OUT_OF_RANGE; 2628 names the column', () => {
    for (const number of [8114, 8115, 220, 232, 241, 242, 245, 8152, 517, 8169]) assertValue(mssqlRequestError(number), 'mssql', `number ${number}`);
    const truncated = mssqlRequestError(2628, "String or binary data would be truncated in table 'books.dbo.lgrtrn', column 'dscrpt'. Truncated value: 'abc'.");
    assert.deepEqual(classifyDatabaseError(truncated, 'mssql'), { kind: 'value', table: 'lgrtrn', column: 'dscrpt' });
    assert.deepEqual(problemOf(truncated, 'mssql', (c, t) => (t === 'lgrtrn' && c === 'dscrpt' ? 'memo' : undefined))!.errors, [{ field: 'memo', code: 'range' }]);
    // Without a caller's mapping, the catalog names the published field of a header column...
    assert.deepEqual(problemOf(truncated, 'mssql')!.errors, [{ field: 'description', code: 'range' }]);
    // ...and guesses nothing for a line column (the line's index is unknown) or an unknown column.
    const lineColumn = mssqlRequestError(2628, "String or binary data would be truncated in table 'books.dbo.lgtnln', column 'dscrpt'. Truncated value: 'abc'.");
    assert.equal(problemOf(lineColumn, 'mssql')!.errors, undefined);
    const unknown = mssqlRequestError(2628, "String or binary data would be truncated in table 'books.dbo.nosuch', column 'x'. Truncated value: 'abc'.");
    assert.equal(problemOf(unknown, 'mssql')!.errors, undefined);
  });

  test('refusals, timeouts and bugs', () => {
    assertRefused(mssqlRequestError(2627), 'mssql', 'constraint', 'unique');
    assertRefused(mssqlRequestError(547), 'mssql', 'constraint', 'fk');
    assertRefused(mssqlRequestError(1205), 'mssql', 'deadlock', 'deadlock');
    assertRefused(mssqlRequestError(1222), 'mssql', 'busy', 'lock timeout');
    assertRefused(mssqlRequestError(229), 'mssql', 'permission', 'permission');
    assertRefused(mssqlConnectionError('ELOGIN', 'Login failed for user'), 'mssql', 'permission', 'login');
    assert.deepEqual(classifyDatabaseError(err('Timeout: Request failed to complete in 15000ms', { name: 'RequestError', code: 'ETIMEOUT' }), 'mssql'), { kind: 'timeout' });
    assert.deepEqual(classifyDatabaseError(mssqlRequestError(-2, 'Timeout expired'), 'mssql'), { kind: 'timeout' });
    // A missing table is an older build of the accounting system, not a 500 (test/catalog/installed-schema.test.ts).
    assert.deepEqual(classifyDatabaseError(mssqlRequestError(208, "Invalid object name 'nope'."), 'mssql'), { kind: 'missing', table: 'nope' });
    assert.equal(classifyDatabaseError(mssqlRequestError(102, 'Incorrect syntax'), 'mssql'), undefined);
  });
});

describe('SQLite (better-sqlite3)', () => {
  test('no data exceptions; the file unopenable is unavailable; constraint/busy/permission refused; errors are 500', () => {
    assertUnavailable(err('unable to open database file', { code: 'SQLITE_CANTOPEN' }), 'sqlite', 'CANTOPEN');
    assertUnavailable(err('file is not a database', { code: 'SQLITE_NOTADB' }), 'sqlite', 'NOTADB');
    assertRefused(err('UNIQUE constraint failed: lgrtrn.recnum', { code: 'SQLITE_CONSTRAINT_UNIQUE' }), 'sqlite', 'constraint', 'unique');
    assertRefused(err('database is locked', { code: 'SQLITE_BUSY' }), 'sqlite', 'busy', 'busy');
    assertRefused(err('attempt to write a readonly database', { code: 'SQLITE_READONLY' }), 'sqlite', 'permission', 'readonly');
    assertRefused(err('disk I/O error', { code: 'SQLITE_IOERR_WRITE' }), 'sqlite', 'resources', 'ioerr');
    // SQLite stores what it is given: nothing of a request is "out of range" for it.
    for (const code of ['SQLITE_MISMATCH', 'SQLITE_TOOBIG', 'SQLITE_RANGE', 'SQLITE_ERROR']) assert.equal(classifyDatabaseError(err(code, { code }), 'sqlite'), undefined, code);
    // A PostgreSQL SQLSTATE means nothing on SQLite.
    assert.equal(classifyDatabaseError(pgError('22003'), 'sqlite'), undefined);
  });
});

describe('commit uncertainty', () => {
  test('commitOutcomeUnknown: a lost connection or timeout leaves COMMIT unknown; an answer or an unsent statement does not', () => {
    assert.equal(commitOutcomeUnknown(err('Connection terminated unexpectedly'), 'postgres'), true);
    assert.equal(commitOutcomeUnknown(err('read ECONNRESET', { code: 'ECONNRESET' }), 'postgres'), true);
    assert.equal(commitOutcomeUnknown(pgError('57P01'), 'postgres'), true);
    assert.equal(commitOutcomeUnknown(pgError('57014'), 'postgres'), true);
    assert.equal(commitOutcomeUnknown(mssqlConnectionError('ECONNCLOSED'), 'mssql'), true);
    assert.equal(commitOutcomeUnknown(mssqlRequestError(10054), 'mssql'), true);
    assert.equal(commitOutcomeUnknown(err('Timeout: Request failed to complete', { name: 'RequestError', code: 'ETIMEOUT' }), 'mssql'), true);
    // The database answered: it did not commit.
    assert.equal(commitOutcomeUnknown(pgError('40001'), 'postgres'), false);
    assert.equal(commitOutcomeUnknown(pgError('23505'), 'postgres'), false);
    // The driver never sent the COMMIT.
    assert.equal(commitOutcomeUnknown(err('Client has encountered a connection error and is not queryable'), 'postgres'), false);
    assert.equal(commitOutcomeUnknown(new TypeError('bug'), 'postgres'), false);
  });

  /** A knex stand-in: runs the container, then "sends COMMIT" which fails with `commitError` (or succeeds). */
  function fakeKnex(commitError?: Error): Knex {
    return {
      transaction: async (container: (trx: unknown) => Promise<unknown>) => {
        // A transaction that takes the session label's statement (SQL Server: SET CONTEXT_INFO).
        const value = await container({ raw: async () => [] });
        if (commitError) throw commitError;
        return value;
      },
    } as unknown as Knex;
  }
  const boundary = (knex: Knex, engine: Engine = 'postgres') => new Boundary({ knex, engine, logger: pino({ level: 'silent' }), deadlineMs: 5000 });

  test('Boundary.transaction: connection lost before COMMIT is 502 DATABASE_UNAVAILABLE; during COMMIT it is OutcomeUnknown', async () => {
    const lost = err('Connection terminated unexpectedly');
    // Before COMMIT: the work itself failed on the connection (knex rolls back; nothing committed).
    await assert.rejects(
      boundary(fakeKnex()).transaction(async () => {
        throw lost;
      }, { what: 'posting a journal' }),
      (e: unknown) => e instanceof ApiProblem && e.code === 'DATABASE_UNAVAILABLE',
    );
    // COMMIT sent, the connection lost while waiting for its answer.
    await assert.rejects(boundary(fakeKnex(lost)).transaction(async () => 'done', { what: 'posting a journal' }), (e: unknown) => {
      assert.ok(e instanceof OutcomeUnknown, String(e));
      assert.ok(e instanceof DeadlineExceeded, 'the write engine treats it as a missed deadline (504, key unknown)');
      assert.match(e.what, /posting a journal.*COMMIT/);
      assert.equal(e.cause, lost);
      return true;
    });
    // SQL Server: the same through tedious's connection errors.
    await assert.rejects(boundary(fakeKnex(mssqlConnectionError('ECONNCLOSED')), 'mssql').transaction(async () => 1), OutcomeUnknown);
    // COMMIT refused by the database (serialization failure at commit): nothing committed, 502 refusal.
    await assert.rejects(
      boundary(fakeKnex(pgError('40001'))).transaction(async () => 1),
      (e: unknown) => e instanceof ApiProblem && e.code === 'DATABASE_REFUSED',
    );
    // COMMIT never sent (the client knew its connection was dead): nothing committed.
    await assert.rejects(
      boundary(fakeKnex(err('Client has encountered a connection error and is not queryable'))).transaction(async () => 1),
      (e: unknown) => e instanceof ApiProblem && e.code === 'DATABASE_UNAVAILABLE',
    );
    assert.equal(await boundary(fakeKnex()).transaction(async () => 7), 7);
  });

  test('Boundary.read maps connection failures to 502 and data exceptions to 400', async () => {
    const b = boundary(fakeKnex());
    await assert.rejects(
      b.read(async () => {
        throw err('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' });
      }),
      (e: unknown) => e instanceof ApiProblem && e.code === 'DATABASE_UNAVAILABLE',
    );
    await assert.rejects(
      b.read(async () => {
        throw pgError('22003', 'value "99999999999" is out of range for type integer');
      }),
      (e: unknown) => e instanceof ApiProblem && e.code === 'VALUE_OUT_OF_RANGE' && e.errors === undefined,
    );
    const bug = new TypeError('a bug');
    await assert.rejects(
      b.read(async () => {
        throw bug;
      }),
      (e: unknown) => e === bug,
    );
  });
});

test('notNullRefusal names the column (and table) a NOT NULL refused, on each engine, also inside the DATABASE_REFUSED problem; nothing for other errors (docs/decisions/0390)', () => {
  const sqlite = err('NOT NULL constraint failed: lgrbal.dbttot', { code: 'SQLITE_CONSTRAINT_NOTNULL' });
  assert.deepEqual(notNullRefusal(sqlite, 'sqlite'), { column: 'dbttot', table: 'lgrbal' });
  const pg = pgError('23502', 'null value in column "crdtot" of relation "lgrbal" violates not-null constraint', { table: 'lgrbal', column: 'crdtot' });
  assert.deepEqual(notNullRefusal(pg, 'postgres'), { column: 'crdtot', table: 'lgrbal' });
  const mssql = mssqlRequestError(515, "Cannot insert the value NULL into column 'dbttot', table 'books.dbo.lgrbal'; column does not allow nulls. UPDATE fails.");
  assert.deepEqual(notNullRefusal(mssql, 'mssql'), { column: 'dbttot', table: 'lgrbal' });
  // As the write runner sees it: the boundary's DATABASE_REFUSED, the driver error its cause.
  const refused = toDatabaseProblem(pg, 'postgres')!;
  assert.equal(refused.code, 'DATABASE_REFUSED');
  assert.deepEqual(notNullRefusal(refused, 'postgres'), { column: 'crdtot', table: 'lgrbal' });
  // Other refusals and other engines' shapes are not it.
  assert.equal(notNullRefusal(err('UNIQUE constraint failed: lgrbal.lgract', { code: 'SQLITE_CONSTRAINT_UNIQUE' }), 'sqlite'), undefined);
  assert.equal(notNullRefusal(pgError('23505', 'duplicate key value', { table: 'lgrbal', column: 'lgract' }), 'postgres'), undefined);
  assert.equal(notNullRefusal(mssqlRequestError(2627), 'mssql'), undefined);
  assert.equal(notNullRefusal(sqlite, 'postgres'), undefined);
  assert.equal(notNullRefusal(new TypeError('a bug'), 'sqlite'), undefined);
});
