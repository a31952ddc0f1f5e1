/**
 * SQLite: WAL checkpoints off the request path.
 *
 * In WAL mode a commit appends its pages to the -wal file; a checkpoint copies them back into the
 * database file and syncs it. By default (wal_autocheckpoint = 1000 pages) the connection whose
 * commit crosses 1,000 pages runs that checkpoint inside its COMMIT: measured on this machine
 * (5-row transactions, synchronous = NORMAL), COMMIT p50 37 µs but mean 365 µs, p99 7.6 ms and
 * max 193 ms: one posting in a hundred pays for the hundred before it, and its request stalls.
 *
 * With WORKERS > 1 the cluster primary has nothing to do while the workers serve, so it runs the
 * checkpoints: a connection of its own runs `PRAGMA wal_checkpoint(PASSIVE)` every
 * WAL_CHECKPOINT_EVERY_MS (PASSIVE copies what no reader still needs and never waits for or
 * blocks a reader or a writer), and the workers' connections checkpoint only as a backstop, past
 * WAL_BACKSTOP_PAGES (should the primary's checkpoints fall behind or fail, the -wal file stays
 * bounded as before, only larger). With one process (WORKERS=1) SQLite's default stays: the
 * checkpoint would block the only event loop wherever it ran.
 */
// Type only: the driver loads when a checkpointer is made (database.ts imports the constants
// below in every process, PostgreSQL ones included).
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { PeriodicJob } from './periodic-job';

export const WAL_CHECKPOINT_EVERY_MS = 200;
/** wal_autocheckpoint of the serving connections when the primary checkpoints (SQLite's default: 1,000). */
export const WAL_BACKSTOP_PAGES = 10_000;
/** The checkpointing connection reads no table: a small page cache (KiB). */
const CHECKPOINT_CACHE_KB = 256;

export interface CheckpointResult {
  /** Another connection held what it needed (SQLITE_BUSY): nothing or part copied, tried again next time. */
  busy: boolean;
  /** Frames in the WAL, and how many of them are in the database file now. */
  walFrames: number;
  checkpointedFrames: number;
}

export class WalCheckpointer {
  private readonly db: Database.Database;
  private readonly job: PeriodicJob<CheckpointResult | undefined>;

  constructor(options: { file: string; logger: Logger; everyMs?: number }) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Sqlite = require('better-sqlite3') as typeof Database;
    this.db = new Sqlite(options.file, { fileMustExist: true });
    this.db.pragma('busy_timeout = 0');
    this.db.pragma(`cache_size = -${CHECKPOINT_CACHE_KB}`);
    // This connection never commits, but a connection's autocheckpoint is its own setting: off.
    this.db.pragma('wal_autocheckpoint = 0');
    this.job = new PeriodicJob({
      everyMs: options.everyMs ?? WAL_CHECKPOINT_EVERY_MS,
      logger: options.logger,
      failure: 'WAL checkpoint failed',
      fallback: undefined,
      run: async () => this.checkpoint(),
    });
  }

  /** One PASSIVE checkpoint now. */
  checkpoint(): CheckpointResult {
    const [row] = this.db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return { busy: row!.busy !== 0, walFrames: row!.log, checkpointedFrames: row!.checkpointed };
  }

  start(): void {
    this.job.start();
  }

  stop(): void {
    this.job.stop();
    if (this.db.open) this.db.close();
  }
}
