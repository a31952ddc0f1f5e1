/**
 * A database job that runs every `everyMs` in the background (the instance heartbeat, the data
 * change log's fold): never two runs at once (a run still going is joined, not doubled), none
 * while `paused` (the maintenance lock has dropped the pool), failures logged and never thrown
 * (the next run tries again). The timer does not keep the process alive.
 */
import type { Logger } from 'pino';

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
      .catch((err) => {
        logger.warn({ err }, failure);
        return fallback;
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }
}
