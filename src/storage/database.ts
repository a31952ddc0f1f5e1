import path from 'node:path';
import fs from 'node:fs';
import knexFactory, { type Knex } from 'knex';
import { currentTraceId } from '../telemetry/tracing';
import { WAL_BACKSTOP_PAGES } from './wal-checkpointer';
import { disposeCancelledConnections } from './mssql-cancelled';
import { registerSqliteIlike } from './sqlite-like';

export type Engine = 'sqlite' | 'postgres' | 'mssql';

export interface DatabaseTarget {
  engine: Engine;
  /** knex configuration for this target. */
  config: Knex.Config;
  /** Printable form without password. */
  display: string;
  /** For sqlite: the database file (created on first start). */
  file?: string;
}

/** Parses DATABASE_URL: sqlite://PATH, postgres://..., mssql://user:pass@host:port/db?encrypt=true */
const PREPARED_PER_CONNECTION = 500;

/**
 * SQLite: how long a statement, or a write transaction's BEGIN IMMEDIATE, waits for a lock another
 * connection holds before it fails with SQLITE_BUSY (502 DATABASE_REFUSED, reason busy).
 */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;
/** SQLite: between two tries of BEGIN IMMEDIATE while another process holds the write lock. */
const SQLITE_WRITE_LOCK_POLL_MS = 1;

/** SQLite page cache per connection, KiB (see afterCreate). */
const SQLITE_PAGE_CACHE_KB = 4096;

/**
 * knex's better-sqlite3 client prepares every statement it runs (`connection.prepare(sql)` per
 * query): on the write path that compile was about a fifth of a posting's CPU. Statements are
 * prepared once per connection and SQL text here (bounded; cleared when full); better-sqlite3
 * re-prepares a statement by itself after a schema change. knex sets `safeIntegers` on a statement
 * only when a query asks for it, which nothing in this service does.
 */
function reusePreparedStatements(conn: { prepare: (sql: string) => unknown }): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    let stmt = cache.get(sql);
    if (stmt === undefined) {
      if (cache.size >= PREPARED_PER_CONNECTION) cache.clear();
      stmt = prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt;
  };
}

export interface ConnectionOptions {
  /**
   * SQLite: another process (the cluster primary) runs the WAL checkpoints, so this connection's
   * commits checkpoint only past WAL_BACKSTOP_PAGES (src/storage/wal-checkpointer.ts).
   */
  checkpointsElsewhere?: boolean;
  /**
   * SQL Server: how long one statement may run before tedious cancels it (its `requestTimeout`;
   * 504 UPSTREAM_TIMEOUT). The service passes statementTimeoutMsFor(DB_DEADLINE_MS). Unset:
   * tedious's own 15 s.
   */
  statementTimeoutMs?: number;
}

/** tedious's default `requestTimeout`. */
export const TEDIOUS_DEFAULT_REQUEST_TIMEOUT_MS = 15_000;

/**
 * SQL Server's statement limit for a DB_DEADLINE_MS (decision 0420): the deadline, so a statement
 * of a request is not cut before the request's own limit (tedious cut every one at 15 s, whatever
 * DB_DEADLINE_MS said); never below tedious's 15 s, so a short deadline (which the boundary already
 * answers 504 at, as on PostgreSQL, where no statement_timeout is set) does not cut the migrations
 * and background work that share the pool.
 */
export function statementTimeoutMsFor(dbDeadlineMs: number): number {
  return Math.max(dbDeadlineMs, TEDIOUS_DEFAULT_REQUEST_TIMEOUT_MS);
}

/**
 * knex writes a failed statement into its error's message, by default with the bound values filled
 * in (`compileSqlOnError`): better-sqlite3 and tedious then carried every value (a person's pay,
 * hours and employee number in a payroll posting) into the JSON log and the trace spans, where
 * only pg's `$n` placeholders stayed as they were. Off on every engine: the message keeps the
 * statement with its placeholders and the database's reason.
 */
const ERRORS_WITHOUT_VALUES = { compileSqlOnError: false } as const;

export function parseDatabaseUrl(url: string, pool: { min: number; max: number } = { min: 0, max: 10 }, options: ConnectionOptions = {}): DatabaseTarget {
  if (url.startsWith('sqlite://') || url.startsWith('sqlite:')) {
    const file = url.replace(/^sqlite:(\/\/)?/, '');
    if (!file) throw new Error('DATABASE_URL: sqlite URL needs a file path, e.g. sqlite://./data/books.sqlite');
    const resolved = file === ':memory:' ? file : path.resolve(file);
    return {
      engine: 'sqlite',
      file: resolved,
      display: `sqlite://${resolved}`,
      config: {
        client: 'better-sqlite3',
        ...ERRORS_WITHOUT_VALUES,
        connection: { filename: resolved },
        useNullAsDefault: true,
        pool: {
          min: 1,
          max: 1,
          // WAL so readers do not block the writer; foreign keys are off by default in SQLite.
          afterCreate(conn: any, done: (err: Error | null, conn: unknown) => void) {
            try {
              conn.pragma('journal_mode = WAL');
              conn.pragma('foreign_keys = ON');
              conn.pragma('synchronous = NORMAL');
              conn.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
              // better-sqlite3 builds SQLite with a 16 MB page cache per connection (SQLite's own
              // default is 2 MB): a scan of a large table (the match index of 100,000 parts) filled
              // it and held 16 MB more per process for good. The OS page cache still holds the
              // file; 4 MB keeps the hot index pages (decision 0035).
              conn.pragma(`cache_size = -${SQLITE_PAGE_CACHE_KB}`);
              if (options.checkpointsElsewhere) conn.pragma(`wal_autocheckpoint = ${WAL_BACKSTOP_PAGES}`);
              reusePreparedStatements(conn);
              // LIKE as on PostgreSQL: case folded for all of Unicode (the SQLite query dialect's like).
              registerSqliteIlike(conn);
              done(null, conn);
            } catch (err) {
              done(err as Error, conn);
            }
          },
        },
      },
    };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const u = new URL(url);
    return {
      engine: 'postgres',
      display: `postgres://${u.username}@${u.host}${u.pathname}`,
      config: {
        client: 'pg',
        ...ERRORS_WITHOUT_VALUES,
        connection: url,
        pool: {
          ...pool,
          afterCreate(conn: any, done: (err: Error | null, conn: unknown) => void) {
            traceComments(conn);
            done(null, conn);
          },
        },
      },
    };
  }
  if (url.startsWith('mssql://') || url.startsWith('sqlserver://')) {
    const u = new URL(url.replace(/^sqlserver:/, 'mssql:'));
    const encrypt = u.searchParams.get('encrypt') !== 'false';
    return {
      engine: 'mssql',
      display: `mssql://${u.username}@${u.host}${u.pathname}`,
      config: {
        client: 'mssql',
        ...ERRORS_WITHOUT_VALUES,
        connection: {
          server: u.hostname,
          port: u.port ? Number(u.port) : 1433,
          user: decodeURIComponent(u.username),
          password: decodeURIComponent(u.password),
          database: u.pathname.replace(/^\//, ''),
          options: {
            encrypt,
            trustServerCertificate: u.searchParams.get('trustServerCertificate') === 'true',
            ...(options.statementTimeoutMs !== undefined ? { requestTimeout: options.statementTimeoutMs } : {}),
          },
        },
        pool: { ...pool },
      },
    };
  }
  throw new Error(`DATABASE_URL: unsupported scheme in "${url.split(':')[0]}": use sqlite://PATH, postgres://... or mssql://...`);
}

const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * PostgreSQL: every statement sent inside a request starts with `/* trace=<trace id> *\/`
 * (sqlcommenter style), so a database administrator sees which request ran it in
 * pg_stat_activity.query, pg_stat_statements samples and the server log, reads included (a
 * posting transaction also sets application_name, trace-session.ts). A comment costs no round
 * trip; the id is checked hex, so nothing from the request reaches the SQL text. SQLite is left
 * alone: its statement cache is keyed by the SQL text.
 */
function traceComments(conn: any): void {
  const query = conn.query.bind(conn);
  conn.query = (config: any, ...rest: unknown[]) => {
    const traceId = currentTraceId();
    if (traceId && TRACE_ID.test(traceId)) {
      const comment = `/* trace=${traceId} */ `;
      if (typeof config === 'string') config = comment + config;
      else if (config && typeof config.text === 'string' && typeof config.submit !== 'function' && !config.name) {
        config = { ...config, text: comment + (isPlainBegin(config) ? labelledBegin(traceId) + config.text.slice('BEGIN;'.length) : config.text) };
      }
    }
    return query(config, ...rest);
  };
}

/**
 * knex's `BEGIN;` of a read-write transaction, sent without parameters (pg's simple query protocol),
 * alone or followed by a BeginStatement (beginWithStatement).
 */
function isPlainBegin(config: { text: string; values?: unknown[] }): boolean {
  return (config.text === 'BEGIN;' || config.text.startsWith('BEGIN; ')) && (config.values === undefined || config.values.length === 0);
}

/**
 * A transaction begun inside a request also labels its session with the trace id
 * (application_name `ais trace=<id>`, for this transaction only; see trace-session.ts) in the SAME
 * round trip as BEGIN: a simple-protocol query may carry several statements, and the id is checked
 * hex, so it is a literal, never a bound value. Before, a posting sent the set_config as a
 * statement of its own: one round trip of the dozen a journal takes.
 */
function labelledBegin(traceId: string): string {
  return `BEGIN; select set_config('application_name', 'ais trace=${traceId}', true);`;
}

/** Where knex's own messages (pool warnings such as "Connection Error") go: the service's logger. */
export interface DriverLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export function openDatabase(target: DatabaseTarget, log?: DriverLog): Knex {
  if (target.file && target.file !== ':memory:') fs.mkdirSync(path.dirname(target.file), { recursive: true });
  const knex = openKnex(target, log);
  if (target.engine === 'sqlite') beginImmediate(knex);
  if (target.engine === 'postgres') beginWithStatement(knex);
  if (target.engine === 'mssql') disposeCancelledConnections(knex);
  return knex;
}

/**
 * A statement a transaction runs as part of its BEGIN (knex.transaction's config `withBegin`): a
 * posting's lock fence (storage/lock-fence.ts), the first statement of its transaction anyway.
 * Its rows are handed back in `rows` before the transaction's work starts.
 *   SQLite      run right after BEGIN IMMEDIATE on the connection, without a knex statement;
 *   PostgreSQL  sent in BEGIN's own round trip (`BEGIN; <statement>`, the simple query protocol,
 *               its constant bindings written into the text by knex): one round trip a posting less;
 *   SQL Server  not run (knex begins through the driver's API): `rows` stays undefined and the
 *               caller sends the statement itself.
 */
export interface BeginStatement {
  sql: string;
  /** Constants only (they are written into the text on PostgreSQL). */
  bindings: readonly (string | number)[];
  rows?: Array<Record<string, unknown>>;
  /**
   * Statements run after it, each a statement of its own, in order (a posting's first named lock
   * and the read after it: engines/posting/runner.ts aheadAtBegin), where `sendableAtBegin` says
   * they can be: PostgreSQL in the same round trip (their values written in, as the BEGIN
   * statement's), SQLite on the connection right after it; not on SQL Server. `thenSent` is set
   * once they ran, and `thenRows` holds each one's rows (undefined for an answer not of rows).
   */
  then?: readonly StatementAtBegin[];
  thenSent?: boolean;
  thenRows?: Array<Array<Record<string, unknown>> | undefined>;
}

/** A statement compiled by knex (`?` placeholders) and its values. */
export interface StatementAtBegin {
  sql: string;
  bindings: readonly unknown[];
}

/**
 * Whether a statement with these values can be run by a transaction's BEGIN (BeginStatement.then),
 * exactly as it would run on its own: PostgreSQL writes the values into the text (knex's
 * escaping), so only text without a NUL (the simple query protocol ends its text there), finite
 * numbers, booleans and null; SQLite binds them on the connection without knex, so only text,
 * finite numbers and null (knex would convert the others); SQL Server: never.
 */
export function sendableAtBegin(engine: Engine, bindings: readonly unknown[]): boolean {
  if (engine === 'mssql') return false;
  for (const value of bindings) {
    if (value === null) continue;
    if (typeof value === 'number' && Number.isFinite(value)) continue;
    if (typeof value === 'string' && (engine !== 'postgres' || !value.includes('\u0000'))) continue;
    if (typeof value === 'boolean' && engine === 'postgres') continue;
    return false;
  }
  return true;
}

/** The transaction config option carrying a BeginStatement (knex passes its config to the Transaction). */
export const WITH_BEGIN = 'withBegin';

function beginStatementOf(config: unknown): BeginStatement | undefined {
  const value = (config as Record<string, unknown> | undefined)?.[WITH_BEGIN] as BeginStatement | undefined;
  return value && typeof value.sql === 'string' && Array.isArray(value.bindings) ? value : undefined;
}

/**
 * PostgreSQL texts of BeginStatements (their bindings written in by knex), per SQL text: a posting's
 * fence is a new object each transaction but one of a few texts with constant bindings.
 */
const inlinedBegins = new Map<string, { bindings: readonly (string | number)[]; text: string }>();
const INLINED_BEGINS_MAX = 64;

function inlinedBegin(knex: Knex, statement: BeginStatement): string {
  const known = inlinedBegins.get(statement.sql);
  if (known && known.bindings.length === statement.bindings.length && known.bindings.every((b, i) => b === statement.bindings[i])) return known.text;
  const text = knex.raw(statement.sql, statement.bindings as Knex.RawBinding[]).toQuery();
  if (inlinedBegins.size >= INLINED_BEGINS_MAX) inlinedBegins.clear();
  inlinedBegins.set(statement.sql, { bindings: [...statement.bindings], text });
  return text;
}

/**
 * PostgreSQL: a transaction given a BeginStatement sends it in BEGIN's round trip. knex's BEGIN is
 * a parameterless simple query, which may carry several statements; the answer is one result per
 * statement: the BeginStatement's, then those of its `then` statements (traceComments below adds
 * the session label in between, when traced).
 */
function beginWithStatement(knex: Knex): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const PgTransaction = require('knex/lib/dialects/postgres/execution/pg-transaction');
  class TransactionWithStatement extends PgTransaction {
    private readonly withBegin: BeginStatement | undefined;
    constructor(client: unknown, container: unknown, config: unknown, outerTx: unknown) {
      super(client, container, config, outerTx);
      this.withBegin = outerTx ? undefined : beginStatementOf(config);
    }
    async begin(conn: unknown) {
      const self = this as any;
      const statement = this.withBegin;
      if (!statement || self.isolationLevel || self.readOnly) return super.begin(conn);
      const then = statement.then ?? [];
      let text = inlinedBegin(knex, statement);
      for (const next of then) text += `; ${knex.raw(next.sql, next.bindings as Knex.RawBinding[]).toQuery()}`;
      // The driver's answer (knex's client.query resolves with the query object): one result a statement.
      // Sent on the transaction's client, not through knex's Transaction.query, which would reject the
      // transaction on a failure without a ROLLBACK: a failed statement after BEGIN leaves the
      // connection inside an aborted transaction, so it is rolled back here before the failure is
      // passed on (knex then rejects the transaction, as for a failed BEGIN).
      let answered: { response?: unknown } | undefined;
      try {
        answered = (await self.trxClient.query(conn, `BEGIN; ${text}`)) as { response?: unknown } | undefined;
      } catch (err) {
        await self.trxClient.query(conn, 'ROLLBACK;').catch(() => undefined);
        throw err;
      }
      // Every statement of the round trip ran (a failure in any fails the whole query, above).
      const results = answered?.response;
      if (then.length > 0) {
        statement.thenSent = true;
        const answers = Array.isArray(results) ? results.slice(results.length - then.length) : [];
        statement.thenRows = then.map((_, i) => {
          const thenRows = (answers[i] as { rows?: unknown } | undefined)?.rows;
          return Array.isArray(thenRows) ? (thenRows as Array<Record<string, unknown>>) : undefined;
        });
      }
      // The statement's own result: the last but for the statements sent after it.
      const own = Array.isArray(results) ? results[results.length - 1 - then.length] : undefined;
      const rows = (own as { rows?: unknown } | undefined)?.rows;
      // Not the answer expected (a driver that changed): no rows handed back, the caller sends the statement itself.
      if (Array.isArray(rows)) statement.rows = rows as Array<Record<string, unknown>>;
      return answered;
    }
  }
  const client = knex.client as any;
  client.transaction = function transaction(this: unknown, ...args: unknown[]) {
    return new (TransactionWithStatement as any)(this, ...args);
  };
}

interface BetterSqliteConnection {
  exec(sql: string): unknown;
  prepare(sql: string): { all(...bindings: readonly unknown[]): unknown[] };
}

/**
 * BEGIN IMMEDIATE, waiting for the write lock without blocking the event loop. Left to SQLite, the
 * wait is its busy handler: it sleeps 1, 2, 5, 10, ... 100 ms between tries, and better-sqlite3
 * runs it on the event loop, so a worker waiting for its sibling's commit served nothing else
 * meanwhile (with WORKERS=2 each worker slept a third of the time there, and a late comer could
 * sleep 100 ms while the lock was free: posting p99 88 to 500 ms; decision 0045). Here each try
 * fails at once (busy_timeout 0 for this statement only) and the next comes
 * SQLITE_WRITE_LOCK_POLL_MS later on a timer, up to SQLITE_BUSY_TIMEOUT_MS; then the last
 * SQLITE_BUSY fails the transaction as the busy handler's would. Within one process the pool's
 * single connection already orders the writers, so a wait only happens beside another process.
 */
async function takeWriteLock(conn: BetterSqliteConnection, waitMs = SQLITE_BUSY_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  // exec, not pragma(): pragma() prepares a statement on every call (7 to 9 µs against 1 to 2 µs),
  // twice in every write transaction.
  for (;;) {
    conn.exec('PRAGMA busy_timeout = 0');
    try {
      conn.exec('BEGIN IMMEDIATE');
      return;
    } catch (err) {
      if (!String((err as { code?: unknown }).code).startsWith('SQLITE_BUSY') || Date.now() >= deadline) throw err;
    } finally {
      conn.exec(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    }
    await new Promise((resolve) => setTimeout(resolve, SQLITE_WRITE_LOCK_POLL_MS));
  }
}

/**
 * SQLite: write transactions start with BEGIN IMMEDIATE. Within one process it changes nothing
 * (the pool has one connection). With several processes on one file (WORKERS, a second service)
 * a plain BEGIN starts as a reader and upgrades at its first write; when another process wrote
 * meanwhile the upgrade fails at once with SQLITE_BUSY (the busy timeout cannot help a stale
 * snapshot), which would answer 502 under ordinary concurrency. BEGIN IMMEDIATE takes the write
 * lock first, so concurrent writers queue instead. Read-only transactions keep the plain BEGIN.
 */
function beginImmediate(knex: Knex): void {
  // knex's own SQLite transaction (BEGIN, savepoints, foreign-key pragma handling), only `begin` changed.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const SqliteTransaction = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction');
  class ImmediateTransaction extends SqliteTransaction {
    private readonly withBegin: BeginStatement | undefined;
    constructor(client: unknown, container: unknown, config: unknown, outerTx: unknown) {
      super(client, container, config, outerTx);
      this.withBegin = outerTx ? undefined : beginStatementOf(config);
    }
    async begin(conn: BetterSqliteConnection) {
      const self = this as any;
      if (self.readOnly) return super.begin(conn);
      await takeWriteLock(conn);
      const statement = this.withBegin;
      if (statement) {
        try {
          // The connection's prepared statement (reusePreparedStatements), as knex would run it.
          statement.rows = conn.prepare(statement.sql).all(...statement.bindings) as Array<Record<string, unknown>>;
          if (statement.then && statement.then.length > 0) {
            statement.thenRows = statement.then.map((next) => conn.prepare(next.sql).all(...next.bindings) as Array<Record<string, unknown>>);
            statement.thenSent = true;
          }
        } catch (err) {
          conn.exec('ROLLBACK');
          throw err;
        }
      }
    }
  }
  const client = knex.client as any;
  client.transaction = function transaction(this: unknown, ...args: unknown[]) {
    return new (ImmediateTransaction as any)(this, ...args);
  };
}

/**
 * Without a logger (the command-line tools, scripts), knex's messages go to stderr: knex's own
 * default prints warnings with console.log, i.e. into stdout, where `keys create` prints the key
 * and `compare-v2 --json` its report.
 */
const toStderr = (obj: { detail?: string }, msg: string): void => void process.stderr.write(`${msg}: ${obj.detail ?? ''}\n`);
const STDERR_LOG: DriverLog = { warn: toStderr, error: toStderr, debug: () => undefined };

function openKnex(target: DatabaseTarget, log: DriverLog = STDERR_LOG): Knex {
  // knex prints these with console by default, outside the JSON log lines.
  const text = (m: unknown) => (m instanceof Error ? m.message : String(m));
  return knexFactory({
    ...target.config,
    log: {
      // A request refused by the pool closing for the maintenance lock (storage/pool-drain.ts) answers 423: not a driver problem.
      warn: (m: unknown) => (text(m).includes('PoolClosedForLock') ? undefined : log.warn({ source: 'knex', detail: text(m) }, 'database driver warning')),
      error: (m: unknown) => log.error({ source: 'knex', detail: text(m) }, 'database driver error'),
      deprecate: (m: unknown) => log.debug({ source: 'knex', detail: text(m) }, 'database driver deprecation'),
      debug: (m: unknown) => log.debug({ source: 'knex', detail: text(m) }, 'database driver debug'),
    },
  });
}

/**
 * A knex of ONE connection on the database `knex` talks to, with the same settings (SQLite: write
 * transactions BEGIN IMMEDIATE, as openDatabase does), opened on first use and closed by
 * `destroy()`. The maintenance lock does its own work through it: recording the lock, reading it
 * while the pool is closed, acknowledging it, so that work neither waits in a busy pool's queue
 * nor needs the pool it closes.
 */
export function openOwnConnection(knex: Knex): Knex {
  const config = knex.client.config as Knex.Config;
  const own = knexFactory({ ...config, pool: { ...(config.pool ?? {}), min: 0, max: 1 } });
  if (config.client === 'better-sqlite3') beginImmediate(own);
  if (config.client === 'mssql') disposeCancelledConnections(own);
  return own;
}
