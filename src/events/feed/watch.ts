import type { Logger } from 'pino';

/**
 * Long polling without a busy loop per request (docs/decisions/0281-long-polling-the-feed.md).
 * The detector may run in another process or instance, so a waiting request learns of new
 * events from the database: ONE poll per process of the event log's high-water mark (one row,
 * `evtctr.seq`), every `pollMs` and only while some request waits, shared by every waiting
 * request of the process. A detection cycle run by this very process pokes the watch, which
 * then reads at once instead of at the next tick.
 */

export type WakeReason = 'advanced' | 'timeout' | 'interrupted';

interface Waiter {
  above: number;
  interrupted: () => boolean;
  wake(reason: WakeReason): void;
}

export interface HighWaterWatchOptions {
  /** Reads the high-water mark (the last position handed out). */
  read: () => Promise<number>;
  pollMs: number;
  logger: Logger;
  /** While true (maintenance lock: the pool is dropped) nothing is read and every waiter is woken. */
  isLocked?: () => boolean;
}

export class HighWaterWatch {
  private readonly waiters = new Set<Waiter>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private again = false;
  private stopped = false;
  /** Database reads made (for tests: the watch polls only while someone waits). */
  polls = 0;

  constructor(private readonly o: HighWaterWatchOptions) {}

  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Resolves 'advanced' once the high-water mark is above `above`, 'timeout' after `timeoutMs`,
   * 'interrupted' when `interrupted()` turns true (checked each tick: the server is draining),
   * the signal aborts (the client went away), the maintenance lock is taken or the watch stops.
   */
  waitAbove(above: number, timeoutMs: number, options: { signal?: AbortSignal; interrupted?: () => boolean } = {}): Promise<WakeReason> {
    if (this.stopped || options.signal?.aborted) return Promise.resolve('interrupted');
    if (timeoutMs <= 0) return Promise.resolve('timeout');
    return new Promise<WakeReason>((resolve) => {
      const onAbort = () => waiter.wake('interrupted');
      const timeout = setTimeout(() => waiter.wake('timeout'), timeoutMs);
      const waiter: Waiter = {
        above,
        interrupted: options.interrupted ?? (() => false),
        wake: (reason) => {
          if (!this.waiters.delete(waiter)) return;
          clearTimeout(timeout);
          options.signal?.removeEventListener('abort', onAbort);
          resolve(reason);
        },
      };
      this.waiters.add(waiter);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.schedule();
    });
  }

  /** Reads now (a detection cycle of this process committed). Nothing when nobody waits. */
  poke(): void {
    if (this.waiters.size === 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    void this.poll();
  }

  /** Wakes every waiter ('interrupted') and refuses new ones: the process is stopping. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of [...this.waiters]) w.wake('interrupted');
  }

  private schedule(): void {
    // While a poll runs, its end schedules the next one.
    if (this.stopped || this.timer || this.polling || this.waiters.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll();
    }, this.o.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    if (this.polling) {
      // A poke during a poll: read once more right after it (the poll may have read too early).
      this.again = true;
      return;
    }
    this.polling = true;
    try {
      for (const w of [...this.waiters]) if (w.interrupted()) w.wake('interrupted');
      if (this.o.isLocked?.()) {
        for (const w of [...this.waiters]) w.wake('interrupted');
        return;
      }
      if (this.waiters.size === 0) return;
      this.polls += 1;
      const seq = await this.o.read();
      for (const w of [...this.waiters]) if (seq > w.above) w.wake('advanced');
    } catch (err) {
      // The waiters keep waiting until their time is up; the next tick reads again.
      this.o.logger.warn({ err }, 'event feed: reading the high-water mark failed');
    } finally {
      this.polling = false;
      if (this.again) {
        this.again = false;
        void this.poll();
      } else this.schedule();
    }
  }
}
