import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Engine } from './database';
import { classifyDatabaseError } from './boundary';

/**
 * How far change-event detection may read (src/events/detector.ts): the start of the oldest
 * transaction still writing to the database. A row is stamped (`upddte`, `insdte`) by the
 * transaction that writes it, before that transaction commits; a detection window that ends
 * after such a stamp and is read before the commit would skip the row for good. So each window
 * ends no later than the bound given here (docs/decisions/0466-detection-waits-for-open-writes.md):
 * every transaction still writing began after it, so every row stamped at or before it (allowing
 * for the clocks, which EVENT_DETECTION_LAG_SECONDS does) has committed or is gone.
 *
 * What a stamp is, per engine, and why that makes "writing" the right test:
 *   SQLite      stamps are taken under the write lock: the triggers' and defaults' CURRENT_TIMESTAMP
 *               by the writing statement, the service's postings after BEGIN IMMEDIATE. Taking the
 *               write lock (BEGIN IMMEDIATE) and reading the clock under it is the bound: no writer
 *               is open then.
 *   PostgreSQL  the triggers and defaults stamp the start of the transaction's first writing
 *               statement (migration 20261127000466, no longer the transaction's start), a posting
 *               after its BEGIN, which reads the lock fence FOR SHARE (a ROW SHARE lock).
 *               A transaction writes from its first row lock stronger than ACCESS SHARE or its
 *               transaction id: readers (a report, pg_dump, an idle session in a transaction)
 *               never hold detection back. Ages are measured by the database (clock_timestamp()
 *               minus xact_start) and taken off the caller's clock read before the statement.
 *   SQL Server  SYSUTCDATETIME() of the writing statement (triggers, defaults); a posting reads its
 *               fence WITH (TABLOCK, HOLDLOCK) first. A transaction writes from its first lock in
 *               the database other than the shared database lock (sys.dm_tran_locks), which needs
 *               VIEW SERVER STATE: without it, detection falls back on the lag alone and a warning
 *               says so once (docs/sql-server.md).
 *
 * PostgreSQL hides when another role's transaction began (xact_start) unless the service's role
 * has pg_read_all_stats (docs/deployment.md); its transaction id and locks stay visible. Such a
 * transaction is taken to have begun at this process's previous look if it was not writing
 * then (a warning says so once): detection then lags up to one cycle behind it, and on a
 * process's first look it does not move (`null`).
 */
export interface OpenWrites {
  /**
   * A time on `clock` (not after its reading) before which every transaction still writing began;
   * the clock's reading when none is open. null: not known at this look (see above).
   */
  safeUpperBound(clock: () => Date): Promise<Date | null>;
  /**
   * The oldest writing session the last look saw, for a warning when it holds detection back
   * (PostgreSQL: its backend pid; undefined where the engine's look cannot name one).
   */
  oldestWriter?(): { pid: number; ageMs: number } | undefined;
}

/**
 * PostgreSQL: the sessions of this database (but this one) inside a writing transaction, with the
 * age of that transaction in milliseconds, and whether this role may see when it began (when it may
 * not, xact_start reads null).
 */
export const PG_OPEN_WRITES_SQL =
  'select a.pid, a.backend_xid::text as xid, ' +
  '(extract(epoch from (clock_timestamp() - a.xact_start)) * 1000)::float8 as age_ms, ' +
  "(pg_has_role('pg_read_all_stats', 'USAGE') or pg_has_role(a.usesysid, 'USAGE')) as visible " +
  'from pg_stat_activity a ' +
  'where a.datname = current_database() and a.pid <> pg_backend_pid() ' +
  "and (a.backend_type = 'client backend' or a.backend_type is null) " +
  'and (a.backend_xid is not null or exists (select 1 from pg_locks l where l.pid = a.pid ' +
  "and l.locktype = 'relation' and l.mode in ('RowShareLock', 'RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')))";

/**
 * SQL Server: the age in milliseconds of the oldest transaction of another session that holds a
 * lock in this database other than the shared database lock (null when none). transaction_begin_time
 * is the server's local time, as SYSDATETIME().
 */
export const MSSQL_OPEN_WRITES_SQL =
  'SELECT MAX(DATEDIFF_BIG(MILLISECOND, t.transaction_begin_time, SYSDATETIME())) AS age_ms ' +
  'FROM sys.dm_tran_active_transactions t ' +
  'JOIN sys.dm_tran_session_transactions s ON s.transaction_id = t.transaction_id ' +
  'WHERE s.session_id <> @@SPID AND EXISTS (SELECT 1 FROM sys.dm_tran_locks l ' +
  "WHERE l.request_session_id = s.session_id AND l.request_owner_type = 'TRANSACTION' " +
  "AND l.request_owner_id = t.transaction_id AND l.resource_database_id = DB_ID() AND l.resource_type <> 'DATABASE')";

export function openWritesFor(knex: Knex, engine: Engine, logger: Logger): OpenWrites {
  switch (engine) {
    case 'sqlite':
      return new SqliteOpenWrites(knex);
    case 'postgres':
      return new PostgresOpenWrites(knex, logger);
    case 'mssql':
      return new MssqlOpenWrites(knex, logger);
  }
}

/** SQLite: the clock read while this connection holds the write lock (no other writer is open). */
class SqliteOpenWrites implements OpenWrites {
  constructor(private readonly knex: Knex) {}

  safeUpperBound(clock: () => Date): Promise<Date> {
    // A write transaction begins with BEGIN IMMEDIATE (storage/database.ts), waiting for the lock.
    return this.knex.transaction(async () => clock());
  }
}

interface PgOpenWrite {
  pid: number;
  xid: string | null;
  age_ms: number | string | null;
  visible: boolean;
}

/** What this process saw of a writing session whose start it may not see. */
interface HiddenWrite {
  xid: string | null;
  /** Its transaction began after this (null: unknown). */
  since: Date | null;
}

export class PostgresOpenWrites implements OpenWrites {
  /** The previous look: when, and the hidden writing sessions it saw. */
  private previous: { at: Date; hidden: Map<number, HiddenWrite> } | undefined;
  private warnedHidden = false;
  /** The oldest visible writing session of the last look. */
  private oldest: { pid: number; ageMs: number } | undefined;

  constructor(
    private readonly knex: Knex,
    private readonly logger: Logger,
  ) {}

  async safeUpperBound(clock: () => Date): Promise<Date | null> {
    // Read before the statement: an age measured by the database is then never taken off a later reading.
    const at = clock();
    const { rows } = (await this.knex.raw(PG_OPEN_WRITES_SQL)) as { rows: PgOpenWrite[] };
    let bound = at;
    let unknown = false;
    let oldest: { pid: number; ageMs: number } | undefined;
    const hidden = new Map<number, HiddenWrite>();
    for (const r of rows) {
      if (r.visible) {
        // Visible but no start: its transaction ended between the two views; nothing to wait for.
        if (r.age_ms === null) continue;
        const ageMs = Math.max(0, Number(r.age_ms));
        if (!oldest || ageMs > oldest.ageMs) oldest = { pid: Number(r.pid), ageMs };
        bound = earlier(bound, new Date(at.getTime() - ageMs));
        continue;
      }
      // Every hidden session is remembered, so that the next look knows it was writing already.
      const since = this.hiddenSince(r.pid, r.xid);
      hidden.set(r.pid, { xid: r.xid, since });
      if (since === null) unknown = true;
      else bound = earlier(bound, since);
    }
    if (hidden.size > 0 && !this.warnedHidden) {
      this.warnedHidden = true;
      this.logger.warn(
        { sessions: [...hidden.keys()] },
        "change-event detection cannot see when other database roles' transactions began (grant pg_read_all_stats to the service's role): it waits up to one detection cycle longer for them",
      );
    }
    this.previous = { at, hidden };
    this.oldest = oldest;
    return unknown ? null : bound;
  }

  oldestWriter(): { pid: number; ageMs: number } | undefined {
    return this.oldest;
  }

  /**
   * When a hidden writing session's transaction began at the latest: the previous look's time if
   * that look did not see this transaction writing; what that look said if it did (the same
   * transaction id, or none yet); unknown on this process's first look.
   */
  private hiddenSince(pid: number, xid: string | null): Date | null {
    if (!this.previous) return null;
    const seen = this.previous.hidden.get(pid);
    if (!seen) return this.previous.at;
    // A transaction keeps its id once it has one: another id (or none after one) is a later transaction.
    const same = seen.xid === null || seen.xid === xid;
    return same ? seen.since : this.previous.at;
  }
}

class MssqlOpenWrites implements OpenWrites {
  /** Set when the login may not read the transaction views (VIEW SERVER STATE): the lag alone then. */
  private denied = false;

  constructor(
    private readonly knex: Knex,
    private readonly logger: Logger,
  ) {}

  async safeUpperBound(clock: () => Date): Promise<Date> {
    const at = clock();
    if (this.denied) return at;
    let rows: Array<{ age_ms: unknown }>;
    try {
      rows = (await this.knex.raw(MSSQL_OPEN_WRITES_SQL)) as Array<{ age_ms: unknown }>;
    } catch (err) {
      const failure = classifyDatabaseError(err, 'mssql');
      if (failure?.kind !== 'refused' || failure.reason !== 'permission') throw err;
      this.denied = true;
      this.logger.warn(
        { err },
        'change-event detection cannot read the open transactions (grant VIEW SERVER STATE to the service login, docs/sql-server.md): a change whose transaction stays open longer than EVENT_DETECTION_LAG_SECONDS may be missed',
      );
      return at;
    }
    const age = rows[0]?.age_ms;
    if (age === null || age === undefined) return at;
    return new Date(at.getTime() - Math.max(0, Number(age)));
  }
}

function earlier(a: Date, b: Date): Date {
  return a <= b ? a : b;
}
