/**
 * The one audit log of administrative actions (docs/decisions/0262-one-audit-log.md): who (an API
 * key's name, the operating-system user at the keys CLI, or the service), what (actions.ts), which
 * target, when, the correlation id and the outcome. Append-only from the service's side: this
 * module inserts and purges past the retention, nothing else; the database refuses the rest.
 *
 * `record` never throws: the action it records has already happened. Each entry is also a log line
 * (`audit`), written at once. The row is written at once too, except while the maintenance lock
 * holds this process's pool dropped (lock, a refused un-lock) or when the write fails: then it waits
 * in memory, in order, and is written as soon as the pool is back (the next `record`, or the
 * periodic flush every FLUSH_EVERY_MS), with the time it happened (decision 0264).
 * Entries older than AUDIT_RETENTION_DAYS (at least 400) are purged hourly by every process.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Engine } from '../storage/database';
import { PeriodicJob } from '../storage/periodic-job';
import type { AuditActor, AuditEntry } from './actions';
import { auditRow, insertAuditRows, purgeAuditRows, type AuditRow } from './store';

export { SERVICE_ACTOR, type AuditAction, type AuditActor, type AuditEntry, type AuditOutcome } from './actions';

/** How often entries waiting in memory are written (when the pool is there). */
export const FLUSH_EVERY_MS = 1000;
/** How often old entries are purged. */
export const PURGE_EVERY_MS = 3_600_000;
/** Entries kept in memory at most (while locked for a long time); the oldest are given up (they are in the log). */
export const MAX_WAITING = 10_000;

export interface AuditLogOptions {
  knex: Knex;
  engine: Engine;
  logger: Logger;
  retentionDays: number;
  /** True while the maintenance lock has dropped this process's pool: entries wait. */
  isLocked?: () => boolean;
  clock?: () => Date;
}

export class AuditLog {
  private readonly waiting: AuditRow[] = [];
  /** Writes in the order they were recorded, one at a time. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly job: PeriodicJob<number>;
  private lastPurge = 0;
  readonly clock: () => Date;

  constructor(private readonly o: AuditLogOptions) {
    this.clock = o.clock ?? (() => new Date());
    this.job = new PeriodicJob({
      everyMs: FLUSH_EVERY_MS,
      logger: o.logger,
      failure: 'audit log: flush or purge failed',
      fallback: 0,
      paused: () => this.o.isLocked?.() === true,
      run: async () => {
        await this.flush();
        if (Date.now() - this.lastPurge < PURGE_EVERY_MS) return 0;
        this.lastPurge = Date.now();
        return this.purge();
      },
    });
  }

  start(): void {
    this.job.start();
  }

  stop(): void {
    this.job.stop();
  }

  /** Entries recorded but not written yet (locked, or the database failed). */
  get pending(): number {
    return this.waiting.length;
  }

  /** Records one entry (see the file comment); resolves once it is written or waiting. Never throws. */
  record(actor: AuditActor, entry: AuditEntry, at: Date = this.clock()): Promise<void> {
    const row = auditRow(this.o.engine, actor, entry, at);
    this.o.logger.info({ audit: { ...row, occurred_at: at.toISOString(), detail: entry.detail ?? null } }, `audit: ${entry.action} ${entry.outcome}`);
    this.wait(row);
    return this.flush().then(() => undefined);
  }

  /**
   * Writes one entry in the caller's transaction (the keys CLI: the change and its entry commit
   * together, or neither). Throws like any statement.
   */
  async write(db: Knex | Knex.Transaction, actor: AuditActor, entry: AuditEntry, at: Date = this.clock()): Promise<void> {
    await insertAuditRows(db, [auditRow(this.o.engine, actor, entry, at)]);
  }

  /** Writes what waits, oldest first, unless locked; how many were written. Never throws. */
  flush(): Promise<number> {
    const run = this.chain.then(async () => {
      let written = 0;
      while (this.waiting.length > 0 && !this.o.isLocked?.()) {
        const batch = this.waiting.slice(0, 100);
        try {
          await insertAuditRows(this.o.knex, batch);
        } catch (err) {
          this.o.logger.warn({ err, waiting: this.waiting.length }, 'audit log: entries not written yet; retried every second');
          break;
        }
        this.waiting.splice(0, batch.length);
        written += batch.length;
      }
      return written;
    });
    this.chain = run;
    return run;
  }

  /** Deletes the entries older than the retention; how many. */
  purge(at: Date = this.clock()): Promise<number> {
    return purgeAuditRows(this.o.knex, this.o.engine, new Date(at.getTime() - this.o.retentionDays * 86_400_000));
  }

  private wait(row: AuditRow): void {
    if (this.waiting.length >= MAX_WAITING) {
      const lost = this.waiting.shift()!;
      this.o.logger.error({ audit: lost }, 'audit log: too many entries waiting; the oldest is only in the log');
    }
    this.waiting.push(row);
  }
}
