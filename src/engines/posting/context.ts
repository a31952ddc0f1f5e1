import type { Knex } from 'knex';
import type { Dialect } from '../../storage/dialect';
import type { NumberAllocator } from '../../storage/numbers';
import type { ReferenceCache } from '../../storage/reference-cache';
import type { StatementBatch } from '../../storage/statement-batch';
import type { InstalledColumns } from '../../catalog/installed';

/**
 * A read already sent by the transaction's BEGIN round trip (runner.ts firstRead): its statement as
 * compiled (`?` placeholders) and bindings, and the rows it answered. The next `first()` of
 * exactly that statement and bindings (records/query.ts) takes them instead of sending it; it is
 * dropped at the transaction's first statement otherwise (runner.ts), so it never stands for a
 * later read.
 */
export interface ReadAhead {
  sql: string;
  bindings: readonly unknown[];
  rows: Array<Record<string, unknown>>;
}

/** Test and operations hooks into the posting engine (all optional). */
export interface PostingHooks {
  /** Runs after an Idempotency-Key was claimed, before numbers and the posting transaction (no connection held). */
  afterClaim?: (info: { route: string; key: string }) => Promise<void> | void;
  /**
   * Runs inside the posting transaction after the cascade and before the idempotency record is
   * completed and the transaction commits. Tests use it to make the database slow (deadline), to
   * refuse (throw a driver error) or to kill the process mid-write.
   */
  beforeCommit?: (info: { route: string; dryRun: boolean; trx: Knex.Transaction }) => Promise<void> | void;
  /**
   * Runs in a dry run once its transaction rolled back, before the numbers it showed are consumed
   * (runner.ts dryRun). Tests use it to let another posting take them first.
   */
  dryRunRolledBack?: (info: { route: string; attempt: number }) => Promise<void> | void;
}

/**
 * The records a rehearsal of a batch chosen by criteria posts (PostingContext.rehearsal): the whole
 * pay period of the payroll example on the demo company (15 records, 132 job costs). Cut to its
 * first record, the rehearsal left the first real batch to pay what depends on its size (V8
 * optimising the loops over its records and lines, knex compiling inserts of its row counts,
 * the job-cost path the first record, without job lines, never took): 55 to 90 ms against 25 to
 * 35 warm under load ~4 (decision 0380).
 */
export const REHEARSAL_BATCH_RECORDS = 16;

/** What a posting engine gets: the open transaction and the pieces it needs to write. */
export interface PostingContext {
  trx: Knex.Transaction;
  /**
   * The transaction's queued writes (storage/statement-batch.ts): awaiting one sends everything
   * queued before it, and on PostgreSQL a write whose result nobody reads (the balance upsert)
   * rides in the statement of the next one that returns rows. The write runner sends whatever is
   * still queued before the transaction completes.
   */
  writes: StatementBatch;
  /**
   * Takes an exclusive lock on `name` for the rest of the transaction (serialises postings that
   * race on a natural key: one transaction number, one vendor invoice number).
   */
  lockName(name: string): Promise<void>;
  dialect: Dialect;
  numbers: NumberAllocator;
  /** usrnme / insusr of what is written (30 characters). */
  user: string;
  /** Server date (UTC), YYYY-MM-DD: the default entered date. */
  today: string;
  /** Timestamp for upddte columns, in the engine's form. */
  now: Date | string;
  dryRun: boolean;
  /**
   * A start-up rehearsal (WriteRunner.rehearse, src/warm-up.ts), always rolled back: a batch chosen
   * by criteria is cut to its first REHEARSAL_BATCH_RECORDS records, so a rehearsal costs at most
   * that on any company. The payroll example's pay period is 15 records on the demo company and
   * 3,759 (with their timecard lines) at scale 250, where its whole rehearsal took 0.8 s and left
   * every worker 60 to 80 MB larger.
   */
  rehearsal?: boolean;
  /** Cached reference rows (src/storage/reference-cache.ts: setup, periods, accounts, sources, vendors, jobs, phases, cost codes and types, equipment); absent: read each time. */
  references?: ReferenceCache;
  /** What the installed build of the accounting database lacks (write-rows.ts leaves out what it can); absent: nothing. */
  installed?: InstalledColumns;
  /** A read the transaction's BEGIN already sent (records/query.ts ReadAhead, runner.ts firstRead), taken by its `first()`. */
  readAhead?: ReadAhead;
}

/** Money columns are DECIMAL(14,2); quantities (14,4); unit prices (12,4); cost codes (15,3); hours (10,2). */
export const SCALE = { money: 2, quantity: 4, price: 4, costCode: 3, hours: 2 } as const;
