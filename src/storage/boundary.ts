import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { ApiProblem } from '../errors/problem';
import { WITH_BEGIN, type BeginStatement, type Engine } from './database';
import { publishedFieldOf } from './column-fields';
import { currentTraceId, inSpan } from '../telemetry/tracing';
import { traceSessionStatement } from './trace-session';
import { PoolClosedForLock } from './pool-drain';
import { lockedProblem } from './lock-problems';
import { APPLOCK_REFUSED_BASE } from './named-locks';

/**
 * The on-premise boundary: every read and write of the books reaches the database through
 * here, under a deadline (config.dbDeadlineMs). Two things happen at this one place:
 *
 *   - the deadline: work that has not settled when it passes answers 504 UPSTREAM_TIMEOUT.
 *     The work itself is not cancelled (a posting transaction may still commit later); the
 *     caller can observe its late outcome through `onLate` (the write engine uses that to
 *     record the real result under the Idempotency-Key).
 *   - the mapping of driver errors (`classifyDatabaseError`, per engine, nowhere else):
 *       the connection refused, reset or terminated          502 DATABASE_UNAVAILABLE
 *       the database refusing (constraint, deadlock,         502 DATABASE_REFUSED
 *         permission, busy, resources)
 *       a value the database cannot store or compare         400 VALUE_OUT_OF_RANGE
 *         (PostgreSQL class 22, SQL Server conversion/overflow/truncation errors)
 *       a statement the database timed out                   504 UPSTREAM_TIMEOUT
 *       a column or table the database does not have          422 COLUMN_UNAVAILABLE
 *         (an older build of the accounting system: the installed schema is read again first,
 *         storage/installed-schema.ts, so the next request is answered before any SQL)
 *     never 500. Anything else (a bug) stays unexpected and becomes a redacted 500.
 *   - commit uncertainty: a transaction whose connection fails once COMMIT has been sent may have
 *     committed. `transaction` reports that as OutcomeUnknown (a kind of DeadlineExceeded: the
 *     write engine answers 504 and records the key as unknown), never as "nothing happened".
 */

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

export interface BoundaryCall<T> {
  /** Absolute deadline (Date.now() ms); defaults to now + dbDeadlineMs. */
  deadlineAt?: number;
  /** What is being done, for the 504 detail and the log ("posting", "reading ledger-accounts"). */
  what?: string;
  /** Called once with the outcome when the work settles after the deadline has already answered 504. */
  onLate?: (outcome: Settled<T>) => void;
  /** Names the request field behind a database column, for VALUE_OUT_OF_RANGE (when the driver names the column). */
  fieldOf?: FieldOfColumn;
  /** `transaction`: a statement its BEGIN runs too (database.ts BeginStatement: a posting's lock fence). */
  begin?: BeginStatement;
}

/** Why the database refused a request that reached it (502 DATABASE_REFUSED). */
export type RefusalReason = 'constraint' | 'deadlock' | 'permission' | 'busy' | 'resources';

/**
 * What a driver error means for the client:
 *   unavailable  the connection was refused, reset or terminated (502 DATABASE_UNAVAILABLE);
 *                a write whose COMMIT was already sent cannot tell whether it committed
 *   refused      the database answered "no" (502 DATABASE_REFUSED, with the reason)
 *   value        the database cannot store or compare a value of the request (400 VALUE_OUT_OF_RANGE);
 *                `column` when the driver names it
 *   timeout      the database gave up on the statement (504 UPSTREAM_TIMEOUT); like `unavailable`,
 *                a COMMIT that times out has an unknown outcome
 *   missing      the statement names a column or table the database does not have (422
 *                COLUMN_UNAVAILABLE): `column` and `table` as far as the driver names them
 */
export type DatabaseFailure =
  | { kind: 'unavailable' }
  | { kind: 'refused'; reason: RefusalReason }
  | { kind: 'value'; column?: string; table?: string }
  | { kind: 'timeout' }
  | { kind: 'missing'; column?: string; table?: string };

const UNAVAILABLE: DatabaseFailure = { kind: 'unavailable' };
const TIMEOUT: DatabaseFailure = { kind: 'timeout' };
const refused = (reason: RefusalReason): DatabaseFailure => ({ kind: 'refused', reason });

/** Socket-level codes of Node, pg and the mssql/tedious ConnectionError. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ESOCKET',
  'ECONNCLOSED',
  'ENOTOPEN',
  'EINSTLOOKUP',
  'ECLOSE', // tedious: connection closed before the request completed
]);

/** Driver messages of a lost or refused connection that come without a code (pg, knex, tarn). */
const CONNECTION_MESSAGE =
  /Connection terminated|Unable to acquire a connection|connection is closed|Client has encountered a connection error|Client was closed and is not queryable|terminating connection|server closed the connection unexpectedly|timeout exceeded when trying to connect|Connection lost|Connection closed before request completed/i;

/**
 * PostgreSQL SQLSTATE -> failure. Exact codes first, then the class (first two characters).
 * https://www.postgresql.org/docs/current/errcodes-appendix.html
 */
const PG_CODES: Record<string, DatabaseFailure> = {
  '42501': refused('permission'), // insufficient privilege
  '55P03': refused('busy'), // lock not available
  '53300': UNAVAILABLE, // too many connections: the server refused the connection
  '57014': TIMEOUT, // query canceled (statement_timeout)
  '57P01': UNAVAILABLE, // admin shutdown (pg_terminate_backend, fast shutdown)
  '57P02': UNAVAILABLE, // crash shutdown
  '57P03': UNAVAILABLE, // cannot connect now (starting up, shutting down, recovery)
  '57P04': UNAVAILABLE, // database dropped
  '57P05': UNAVAILABLE, // idle session timeout
};
const PG_CLASSES: Record<string, DatabaseFailure> = {
  '08': UNAVAILABLE, // connection exception
  '22': { kind: 'value' }, // data exception: NUL byte, out of range, invalid text, datetime overflow, too long
  '23': refused('constraint'), // integrity constraint violation
  '40': refused('deadlock'), // transaction rollback: serialization failure, deadlock
  '53': refused('resources'), // insufficient resources
  '57': UNAVAILABLE, // operator intervention
  '58': refused('resources'), // system error (I/O)
};

/** SQL Server error numbers -> failure (https://learn.microsoft.com/sql/relational-databases/errors-events/database-engine-events-and-errors). */
const MSSQL_NUMBERS: Record<number, DatabaseFailure> = {
  2627: refused('constraint'), // unique constraint
  2601: refused('constraint'), // unique index
  547: refused('constraint'), // foreign key / check
  515: refused('constraint'), // null into not null
  1205: refused('deadlock'),
  3960: refused('deadlock'), // snapshot isolation update conflict
  1222: refused('busy'), // lock request time out
  // sp_getapplock refused a named lock (named-locks.ts MSSQL_LOCK: APPLOCK_REFUSED_BASE - its result).
  [APPLOCK_REFUSED_BASE + 1]: refused('busy'), // timeout
  [APPLOCK_REFUSED_BASE + 2]: refused('busy'), // cancelled
  [APPLOCK_REFUSED_BASE + 3]: refused('deadlock'), // chosen as deadlock victim
  40501: refused('busy'), // service busy (Azure SQL)
  229: refused('permission'),
  230: refused('permission'),
  297: refused('permission'), // the user does not have permission to perform this action
  300: refused('permission'), // VIEW SERVER STATE (or another server permission) denied
  262: refused('permission'),
  18456: refused('permission'), // login failed
  // The connection: refused, reset, closed, or the database not (yet) open.
  [-1]: UNAVAILABLE, // SqlClient: error locating server / connecting
  2: UNAVAILABLE, // server not found / not accessible
  53: UNAVAILABLE, // network path not found
  64: UNAVAILABLE, // the specified network name is no longer available
  121: UNAVAILABLE, // semaphore timeout (transport)
  233: UNAVAILABLE, // no process is on the other end of the pipe
  4060: UNAVAILABLE, // cannot open database requested by the login
  10053: UNAVAILABLE, // connection aborted by the software in the host
  10054: UNAVAILABLE, // connection forcibly closed by the remote host
  10060: UNAVAILABLE, // connection attempt timed out
  10061: UNAVAILABLE, // connection refused
  40197: UNAVAILABLE, // service error processing the request (Azure SQL failover)
  40613: UNAVAILABLE, // database not currently available (Azure SQL)
  [-2]: TIMEOUT, // SqlClient: timeout expired
  // Values the database cannot convert, store or compare.
  220: { kind: 'value' }, // arithmetic overflow for smallint/tinyint
  232: { kind: 'value' }, // arithmetic overflow for int
  241: { kind: 'value' }, // conversion failed: date/time from character string
  242: { kind: 'value' }, // varchar -> datetime out of range
  245: { kind: 'value' }, // conversion failed: varchar -> int
  517: { kind: 'value' }, // adding a value to a date/time column caused an overflow
  8114: { kind: 'value' }, // error converting data type
  8115: { kind: 'value' }, // arithmetic overflow converting to numeric
  8152: { kind: 'value' }, // string or binary data would be truncated
  2628: { kind: 'value' }, // string or binary data would be truncated in table ..., column ...
  8169: { kind: 'value' }, // conversion failed: string -> uniqueidentifier
  9803: { kind: 'value' }, // invalid data for type
};

const SQLITE_UNAVAILABLE = /^SQLITE_(CANTOPEN|NOTADB)/;

/**
 * A name the database does not have, from the driver's message (the last segment of a qualified
 * name: `b.prtnme` is column prtnme):
 *   SQLite      "no such column: b.prtnme", "table acpinv has no column named duedte", "no such table: main.tkfprt"
 *   PostgreSQL  42703 'column b.prtnme does not exist', 'column "duedte" of relation "acpinv" does not exist';
 *               42P01 'relation "tkfprt" does not exist'
 *   SQL Server  207 "Invalid column name 'prtnme'."; 208 "Invalid object name 'tkfprt'."
 */
function missingName(message: string, pattern: RegExp): string | undefined {
  const m = pattern.exec(message);
  const name = m?.[1]?.replace(/["`[\]]/g, '');
  return name ? name.split('.').pop() : undefined;
}
const SQLITE_NO_COLUMN = /no such column: ([\w."`[\]]+)/i;
const SQLITE_HAS_NO_COLUMN = /table ([\w."`[\]]+) has no column named ([\w"`[\]]+)/i;
const SQLITE_NO_TABLE = /no such table: ([\w."`[\]]+)/i;
const PG_NO_COLUMN = /column ([\w."]+) (?:of relation "?(\w+)"? )?does not exist/i;
const PG_NO_RELATION = /relation ([\w."]+) does not exist/i;
const MSSQL_NO_COLUMN = /Invalid column name '([^']+)'/i;
const MSSQL_NO_OBJECT = /Invalid object name '([^']+)'/i;

function sqliteMissing(message: string): DatabaseFailure | undefined {
  const into = SQLITE_HAS_NO_COLUMN.exec(message);
  if (into) return { kind: 'missing', table: missingName(into[1]!, /(.+)/), column: missingName(into[2]!, /(.+)/) };
  const column = missingName(message, SQLITE_NO_COLUMN);
  if (column) return { kind: 'missing', column };
  const table = missingName(message, SQLITE_NO_TABLE);
  if (table) return { kind: 'missing', table };
  return undefined;
}
const SQLITE_RESOURCES = /^SQLITE_(IOERR|FULL|CORRUPT|NOMEM|PROTOCOL)/;

/** The error and what it wraps (AggregateError of a dual-stack connect, `cause`, mssql `originalError`), a few levels deep. */
function* chain(err: unknown, depth = 0): Generator<Record<string, any>> {
  if (!err || typeof err !== 'object' || depth > 3) return;
  const e = err as Record<string, any>;
  yield e;
  if (Array.isArray(e.errors)) for (const inner of e.errors) yield* chain(inner, depth + 1);
  if (e.originalError && e.originalError !== e) yield* chain(e.originalError, depth + 1);
  if (e.cause && e.cause !== e) yield* chain(e.cause, depth + 1);
}

function mssqlNumber(e: Record<string, any>): number | undefined {
  if (typeof e.number === 'number') return e.number;
  if (typeof e.info?.number === 'number') return e.info.number;
  return undefined;
}

function classifyOne(e: Record<string, any>, engine: Engine): DatabaseFailure | undefined {
  const message = String(e.message ?? '');
  const code = typeof e.code === 'string' ? e.code : undefined;
  switch (engine) {
    case 'sqlite': {
      if (!code || !code.startsWith('SQLITE_')) break;
      if (code.startsWith('SQLITE_CONSTRAINT')) return refused('constraint');
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return refused('busy');
      if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_PERM') || code.startsWith('SQLITE_AUTH')) return refused('permission');
      if (SQLITE_UNAVAILABLE.test(code)) return UNAVAILABLE;
      if (SQLITE_RESOURCES.test(code)) return refused('resources');
      if (code === 'SQLITE_ERROR') return sqliteMissing(message);
      return undefined;
    }
    case 'postgres': {
      if (!code || !/^[0-9A-Z]{5}$/.test(code)) break;
      if (code === '42703') {
        const m = PG_NO_COLUMN.exec(message);
        const column = m ? missingName(m[1]!, /(.+)/) : undefined;
        const table = m?.[2] ?? (typeof e.table === 'string' && e.table ? e.table : undefined);
        return { kind: 'missing', ...(column ? { column } : {}), ...(table ? { table } : {}) };
      }
      if (code === '42P01') {
        const table = missingName(message, PG_NO_RELATION);
        return { kind: 'missing', ...(table ? { table } : {}) };
      }
      const known = PG_CODES[code] ?? PG_CLASSES[code.slice(0, 2)];
      if (known?.kind === 'value') {
        const column = typeof e.column === 'string' && e.column ? e.column : undefined;
        const table = typeof e.table === 'string' && e.table ? e.table : undefined;
        return { kind: 'value', ...(column ? { column } : {}), ...(table ? { table } : {}) };
      }
      if (known) return known;
      return undefined;
    }
    case 'mssql': {
      const number = mssqlNumber(e);
      if (number === 207) {
        const column = missingName(message, MSSQL_NO_COLUMN);
        return { kind: 'missing', ...(column ? { column } : {}) };
      }
      if (number === 208) {
        const table = missingName(message, MSSQL_NO_OBJECT);
        return { kind: 'missing', ...(table ? { table } : {}) };
      }
      const known = number !== undefined ? MSSQL_NUMBERS[number] : undefined;
      if (known?.kind === 'value') {
        // 2628 names the column: "... truncated in table 'db.dbo.lgrtrn', column 'dscrpt'. Truncated value: ..."
        const m = /in table '([^']*)', column '([^']*)'/.exec(message);
        return m ? { kind: 'value', table: m[1]!.split('.').pop(), column: m[2] } : { kind: 'value' };
      }
      if (known) return known;
      if (code === 'ELOGIN') return refused('permission');
      // tedious/mssql ETIMEOUT: on connect the server is unreachable; on a request it gave up on the statement.
      if (code === 'ETIMEOUT') return e.name === 'RequestError' || /request|statement|query/i.test(message) ? TIMEOUT : UNAVAILABLE;
      if (code === 'ECANCEL') return TIMEOUT;
      break;
    }
    default:
      break;
  }
  if (code && NETWORK_CODES.has(code)) return UNAVAILABLE;
  if (CONNECTION_MESSAGE.test(message)) return UNAVAILABLE;
  if (e.name === 'KnexTimeoutError') return refused('busy');
  return undefined;
}

/**
 * Classifies a driver error, per engine, in this one place (the wrapped errors too). Returns
 * undefined when the error is not the database's doing (then it is unexpected: 500).
 */
export function classifyDatabaseError(err: unknown, engine: Engine): DatabaseFailure | undefined {
  if (err instanceof ApiProblem || err instanceof DeadlineExceeded) return undefined;
  for (const e of chain(err)) {
    const failure = classifyOne(e, engine);
    if (failure) return failure;
  }
  return undefined;
}

/**
 * The column (and table) a NOT NULL constraint refused a NULL for, when `err` (or what it wraps,
 * a DATABASE_REFUSED problem's cause too) is that refusal; undefined for any other error:
 *   SQLite      SQLITE_CONSTRAINT_NOTNULL "NOT NULL constraint failed: lgrbal.dbttot"
 *   PostgreSQL  23502, the driver's `table` and `column`
 *   SQL Server  515 "Cannot insert the value NULL into column 'dbttot', table 'db.dbo.lgrbal'; ..."
 */
export function notNullRefusal(err: unknown, engine: Engine): { column: string; table?: string } | undefined {
  for (const e of chain(err)) {
    const message = String(e.message ?? '');
    switch (engine) {
      case 'sqlite': {
        const m = e.code === 'SQLITE_CONSTRAINT_NOTNULL' ? /NOT NULL constraint failed: (?:(\w+)\.)?(\w+)/.exec(message) : null;
        if (m) return { column: m[2]!, ...(m[1] ? { table: m[1] } : {}) };
        break;
      }
      case 'postgres':
        if (e.code === '23502' && typeof e.column === 'string' && e.column) return { column: e.column, ...(typeof e.table === 'string' && e.table ? { table: e.table } : {}) };
        break;
      case 'mssql': {
        const m = mssqlNumber(e) === 515 ? /into column '([^']+)', table '([^']+)'/.exec(message) : null;
        if (m) return { column: m[1]!, table: m[2]!.split('.').pop()! };
        break;
      }
    }
  }
  return undefined;
}

const REFUSAL_TEXT: Record<RefusalReason, string> = {
  constraint: 'a constraint of the accounting database was violated',
  deadlock: 'the accounting database chose this transaction as a deadlock or serialization victim',
  permission: 'the accounting database denied permission',
  busy: 'the accounting database was busy (lock or connection not available)',
  resources: 'the accounting database ran out of resources',
};

/** 502 DATABASE_REFUSED, reason busy, for contention the service itself detected (`what`: where). */
export function busyRefusal(what: string): ApiProblem {
  return new ApiProblem('DATABASE_REFUSED', `The request was not applied: ${REFUSAL_TEXT.busy} (${what}). Retry with backoff.`, {
    extensions: { refusal: 'busy' },
  });
}

/** Maps a database column (and table) the driver named to the request field it came from, when the caller knows. */
export type FieldOfColumn = (column: string, table?: string) => string | undefined;

/**
 * The problem a driver error answers with: the ApiProblem itself, 502 DATABASE_UNAVAILABLE,
 * 502 DATABASE_REFUSED, 400 VALUE_OUT_OF_RANGE or 504 UPSTREAM_TIMEOUT; undefined when unexpected.
 * `write` only words the 504 (a write's outcome is unknown).
 */
export function toDatabaseProblem(err: unknown, engine: Engine, options: { fieldOf?: FieldOfColumn; what?: string; write?: boolean } = {}): ApiProblem | undefined {
  if (err instanceof ApiProblem) return err;
  const failure = classifyDatabaseError(err, engine);
  if (!failure) return undefined;
  switch (failure.kind) {
    case 'unavailable':
      return new ApiProblem(
        'DATABASE_UNAVAILABLE',
        'The request was not applied: the connection to the accounting database was refused, reset or terminated. Retry with backoff.',
      );
    case 'refused':
      return new ApiProblem('DATABASE_REFUSED', `The request was not applied: ${REFUSAL_TEXT[failure.reason]}. Retry with backoff.`, {
        extensions: { refusal: failure.reason },
        cause: err,
      });
    case 'timeout':
      return upstreamTimeout(options.what ?? 'the statement was cancelled', options.write === true);
    case 'missing': {
      // Storage names only (the boundary names the published fields once the schema is read again).
      const name = failure.column ? `column ${failure.table ? `${failure.table}.` : ''}${failure.column}` : `table ${failure.table ?? '(not named)'}`;
      return new ApiProblem('COLUMN_UNAVAILABLE', `The accounting database has no ${name}: its build is older than this service expects. Nothing was applied.`, { cause: err });
    }
    case 'value': {
      const field = failure.column ? (options.fieldOf ?? publishedFieldOf)(failure.column, failure.table) : undefined;
      return new ApiProblem(
        'VALUE_OUT_OF_RANGE',
        field
          ? `The accounting database cannot store or compare the value of ${field} (out of range, too long, or not representable). Nothing was applied.`
          : 'A value of the request is out of the range, precision or length the accounting database can store or compare, or contains a character it refuses (such as NUL). Nothing was applied.',
        field ? { errors: [{ field, code: 'range' }] } : {},
      );
    }
  }
}

export class DeadlineExceeded extends Error {
  constructor(readonly what: string) {
    super(`deadline exceeded: ${what}`);
    this.name = 'DeadlineExceeded';
  }
}

/**
 * The connection failed (or the statement timed out) after COMMIT had been sent: the transaction
 * may or may not have committed. A DeadlineExceeded for its callers (504, key recorded unknown),
 * except that it has settled: nothing will arrive late. The truth is in the database: a posting
 * completes its idempotency record in the same transaction.
 */
export class OutcomeUnknown extends DeadlineExceeded {
  constructor(
    what: string,
    override readonly cause: unknown,
  ) {
    super(`${what}: the connection to the database failed while its COMMIT was in flight`);
    this.name = 'OutcomeUnknown';
  }
}

/** Failures that prove the statement never left this process (the driver refused to send it). */
const NOT_SENT_MESSAGE = /is not queryable|Unable to acquire a connection/i;

/** Whether a failure of COMMIT leaves its outcome unknown (true) or proves nothing committed (false). */
export function commitOutcomeUnknown(err: unknown, engine: Engine): boolean {
  const failure = classifyDatabaseError(err, engine);
  if (!failure || (failure.kind !== 'unavailable' && failure.kind !== 'timeout')) return false;
  for (const e of chain(err)) if (NOT_SENT_MESSAGE.test(String(e.message ?? ''))) return false;
  return true;
}

export function upstreamTimeout(what: string, write: boolean): ApiProblem {
  return new ApiProblem(
    'UPSTREAM_TIMEOUT',
    write
      ? `The accounting database did not answer in time (${what}); the outcome of the write is unknown. Retry with the same Idempotency-Key only.`
      : `The accounting database did not answer in time (${what}).`,
  );
}

export interface BoundaryDeps {
  knex: Knex;
  engine: Engine;
  logger: Logger;
  deadlineMs: number;
  /** 423 problem while the database is locked for maintenance (its pool is gone), else undefined. */
  lockedProblem?: () => ApiProblem | undefined;
  /**
   * A statement named a column or table the database does not have: reads the installed schema
   * again (storage/installed-schema.ts) and answers the 422 naming the published fields missing.
   */
  missingProblem?: (failure: MissingFailure) => Promise<ApiProblem>;
}

export type MissingFailure = Extract<DatabaseFailure, { kind: 'missing' }>;

export class Boundary {
  constructor(private readonly deps: BoundaryDeps) {}

  get knex(): Knex {
    return this.deps.knex;
  }

  get engine(): Engine {
    return this.deps.engine;
  }

  get deadlineMs(): number {
    return this.deps.deadlineMs;
  }

  /** Absolute deadline for work starting now. */
  deadlineFromNow(ms: number = this.deps.deadlineMs): number {
    return Date.now() + ms;
  }

  /**
   * Runs `work` under the deadline. Resolves with its value; rejects with DeadlineExceeded when
   * the deadline passes first (the work keeps running: `onLate` sees its outcome), with a 502
   * ApiProblem when the database refused, or with the original error otherwise.
   */
  async within<T>(work: () => Promise<T>, call: BoundaryCall<T> = {}): Promise<T> {
    const what = call.what ?? 'database call';
    const deadlineAt = call.deadlineAt ?? this.deadlineFromNow();
    const remaining = deadlineAt - Date.now();
    if (remaining <= 0) throw new DeadlineExceeded(what);
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const running = work();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new DeadlineExceeded(what));
      }, remaining);
    });
    try {
      return await Promise.race([running, timeout]);
    } catch (err) {
      if (err instanceof DeadlineExceeded && timedOut) {
        running.then(
          (value) => call.onLate?.({ ok: true, value }),
          (error) => {
            if (call.onLate) call.onLate({ ok: false, error });
            else this.deps.logger.warn({ err: error, what }, 'late database work failed after its deadline');
          },
        );
        throw err;
      }
      throw (await this.mapMissing(err)) ?? this.mapError(err, call.fieldOf);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** A read (or any statement outside a posting transaction) under the deadline; a timeout is 504. */
  async read<T>(fn: (db: Knex) => Promise<T>, call: BoundaryCall<T> = {}): Promise<T> {
    try {
      // The engine step's span (its statements are its children: telemetry/tracing.ts).
      return await inSpan(`read ${call.what ?? ''}`.trim(), { 'db.system': this.deps.engine }, () => this.within(() => fn(this.deps.knex), call));
    } catch (err) {
      if (err instanceof DeadlineExceeded) throw upstreamTimeout(err.what, false);
      throw err;
    }
  }

  /** One round trip under the deadline (ping's databaseRoundTripMs): a timeout is 504, driver errors per `within`. */
  async ping(): Promise<void> {
    await this.read((db) => db.raw('select 1 as ok'), { what: 'ping' });
  }

  /**
   * One transaction under the deadline (DeadlineExceeded is passed through for the write engine).
   * knex sends COMMIT the moment `fn` resolves; a connection failure from then on rejects with
   * OutcomeUnknown, a failure before it with the (mapped) driver error: nothing committed.
   */
  transaction<T>(fn: (trx: Knex.Transaction) => Promise<T>, call: BoundaryCall<T> = {}): Promise<T> {
    return inSpan(`transaction ${call.what ?? ''}`.trim(), { 'db.system': this.deps.engine }, () => this.within(async () => {
      let commitSent = false;
      try {
        return await this.deps.knex.transaction(async (trx) => {
          // The request's trace id on the database session, for the database administrator.
          const label = traceSessionStatement(trx, this.deps.engine, currentTraceId());
          if (label) await label;
          const value = await fn(trx);
          commitSent = true;
          return value;
        }, call.begin ? ({ [WITH_BEGIN]: call.begin } as Knex.TransactionConfig) : undefined);
      } catch (err) {
        if (commitSent && commitOutcomeUnknown(err, this.deps.engine)) {
          this.deps.logger.warn({ err, what: call.what }, 'connection failed while COMMIT was in flight; outcome unknown');
          throw new OutcomeUnknown(call.what ?? 'transaction', err);
        }
        throw err;
      }
    }, call));
  }

  /** A missing column or table: the installed schema read again, the 422 naming what is missing; else undefined. */
  private async mapMissing(err: unknown): Promise<ApiProblem | undefined> {
    const failure = classifyDatabaseError(err, this.deps.engine);
    if (failure?.kind !== 'missing' || !this.deps.missingProblem) return undefined;
    return this.deps.missingProblem(failure).catch(() => undefined);
  }

  /** Driver error -> ApiProblem (502/400/504); ApiProblem, DeadlineExceeded and unexpected errors unchanged. */
  mapError(err: unknown, fieldOf?: FieldOfColumn): unknown {
    return this.problemFor(err, { fieldOf }) ?? err;
  }

  /**
   * The problem a failure answers with (ApiProblem as is, driver errors per `toDatabaseProblem`,
   * 423 while locked), or undefined when unexpected (and for DeadlineExceeded: the caller decides).
   */
  problemFor(err: unknown, options: { fieldOf?: FieldOfColumn; what?: string; write?: boolean } = {}): ApiProblem | undefined {
    // Refused a connection because the maintenance lock closes the pool: nothing of it was sent.
    if (err instanceof PoolClosedForLock) return this.deps.lockedProblem?.() ?? lockedProblem(null);
    const problem = toDatabaseProblem(err, this.deps.engine, options);
    // Outside `within` (no wait here): the schema is still read again for the next request.
    if (problem?.code === 'COLUMN_UNAVAILABLE' && !(err instanceof ApiProblem)) void this.mapMissing(err);
    // A request that slipped past the gate while the lock dropped the pool: report the lock.
    if (problem && (problem.code === 'DATABASE_UNAVAILABLE' || problem.code === 'DATABASE_REFUSED') && !(err instanceof ApiProblem)) {
      return this.deps.lockedProblem?.() ?? problem;
    }
    return problem;
  }
}
