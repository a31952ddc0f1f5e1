/**
 * A database job that runs every `everyMs` in the background (the instance heartbeat, the data
 * change log's fold): never two runs at once (a run still going is joined, not doubled), none
 * while `paused` (the maintenance lock has dropped the pool), failures logged and never thrown
 * (the next run tries again). The timer does not keep the process alive.
 *
 * A job that keeps failing (the database away, a file moved during a restore) logs its first
 * failure, then at most one line every FAILURE_LOG_EVERY_MS with how many failed since, and one
 * line when it works again: a job run every second or five times a second would otherwise fill
 * the log with the same warning.
 */
import type { Logger } from 'pino';

/** A failing job logs at most one warning this often. */
export const FAILURE_LOG_EVERY_MS = 60_000;

export interface PeriodicJobOptions<T> {
  everyMs: number;
  logger: Logger;
  /** Log message of a failed run. */
  failure: string;
  /** Answer of a run that failed or was skipped while paused. */
  fallback: T;
  paused?: () => boolean;
  run(): Promise<T>;
}

export class PeriodicJob<T> {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<T> | null = null;
  /** Failed runs since the last one that worked, and when a failure was last logged. */
  private failures = 0;
  private lastFailureLoggedAt = -Infinity;

  constructor(private readonly options: PeriodicJobOptions<T>) {}

  start(): void {
    this.timer ??= setInterval(() => void this.runOnce(), this.options.everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One run now (joins the one in progress; skipped while paused). */
  runOnce(): Promise<T> {
    const { paused, logger, failure, fallback } = this.options;
    if (this.running) return this.running;
    if (paused?.()) return Promise.resolve(fallback);
    this.running = this.options
      .run()
      .then((value) => {
        if (this.failures > 0) logger.info({ failures: this.failures }, `${failure}: works again`);
        this.failures = 0;
        return value;
      })
      .catch((err) => {
        this.failures += 1;
        const now = Date.now();
        if (now - this.lastFailureLoggedAt >= FAILURE_LOG_EVERY_MS) {
          this.lastFailureLoggedAt = now;
          logger.warn({ err, failures: this.failures }, failure);
        }
        return fallback;
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }
}
