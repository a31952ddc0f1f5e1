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
  /** The maintenance lock is held: nothing was done (the service holds no connection while locked). */
  locked: boolean;
  /** Another connection held what it needed (SQLITE_BUSY): nothing or part copied, tried again next time. */
  busy: boolean;
  /** Frames in the WAL, and how many of them are in the database file now. */
  walFrames: number;
  checkpointedFrames: number;
}

/**
 * The checkpoints, each on a connection opened for it and closed right after: the maintenance
 * lock's rule (lock-store.ts) is that the service holds no connection while the database is
 * locked, and the primary does not follow the lock's state as the workers do, so it reads
 * `mntlck` first, on that connection, and leaves the file alone while a lock is recorded.
 * Opening costs a fraction of a millisecond five times a second.
 */
export class WalCheckpointer {
  private readonly job: PeriodicJob<CheckpointResult | undefined>;
  private readonly open: () => Database.Database;

  constructor(options: { file: string; logger: Logger; everyMs?: number }) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Sqlite = require('better-sqlite3') as typeof Database;
    this.open = () => {
      const db = new Sqlite(options.file, { fileMustExist: true });
      db.pragma('busy_timeout = 0');
      db.pragma(`cache_size = -${CHECKPOINT_CACHE_KB}`);
      return db;
    };
    this.job = new PeriodicJob({
      everyMs: options.everyMs ?? WAL_CHECKPOINT_EVERY_MS,
      logger: options.logger,
      // A failure changes nothing: the workers' backstop still bounds the WAL.
      failure: 'WAL checkpoint failed (the workers checkpoint past their backstop meanwhile)',
      fallback: undefined,
      run: async () => this.checkpoint(),
    });
  }

  /** One PASSIVE checkpoint now (none while the maintenance lock is held). */
  checkpoint(): CheckpointResult {
    const db = this.open();
    try {
      if (db.prepare('select 1 from mntlck where id = 1').get() !== undefined) return { locked: true, busy: false, walFrames: 0, checkpointedFrames: 0 };
      const [row] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
      return { locked: false, busy: row!.busy !== 0, walFrames: row!.log, checkpointedFrames: row!.checkpointed };
    } finally {
      db.close();
    }
  }

  start(): void {
    this.job.start();
  }

  stop(): void {
    this.job.stop();
  }
}
