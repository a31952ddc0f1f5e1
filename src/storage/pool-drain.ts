import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';

/** Retry-After of a request the maintenance lock turns away (the spec's example: 60). */
export const LOCK_RETRY_AFTER_SECONDS = 60;

/**
 * Closing the connection pool for the maintenance lock (docs/decisions/0200-lock-takes-effect-before-it-answers.md).
 *
 * When the lock closes the pool (`close`):
 *   - work holding a connection finishes on it: a statement completes, a posting transaction
 *     commits or rolls back on the connection it holds;
 *   - every acquire not yet served, waiting in the pool's queue or asked for later, is refused with
 *     PoolClosedForLock: nothing of it reached the database, and the boundary answers 423
 *     MAINTENANCE_LOCK (never tarn's "aborted", which was a 500). A read between two statements and
 *     a posting whose transaction was still waiting for a connection are turned away alike;
 *   - except the work that gives back what such a request took (its Idempotency-Key claim), run
 *     through `allowWhileClosing`: a request turned away leaves nothing written;
 *   - once every request admitted through the lock gate (`enter`) has ended, its response sent,
 *     the knex pool is destroyed: no connection of this process is left open.
 * `reopen` re-creates the pool (un-lock).
 */
export class PoolClosedForLock extends Error {
  constructor() {
    super('PoolClosedForLock: the connection pool is closing for the maintenance lock; nothing was sent');
    this.name = 'PoolClosedForLock';
  }
}

/** tarn's PendingOperation as far as it is used here (knex awaits `.promise`). */
interface PendingAcquire {
  promise: Promise<unknown>;
  reject(err: Error): void;
}

interface TarnPool {
  acquire(): PendingAcquire;
  [PATCHED]?: true;
}

const PATCHED = Symbol('pool-drain');

export class PoolDrain {
  private readonly cleanups = new AsyncLocalStorage<true>();
  private closing = false;
  private open = 0;
  private drained: Array<() => void> = [];
  /** Acquires waiting in the pool's queue (cleanups excepted). */
  private readonly waiting = new Set<PendingAcquire>();

  constructor(private readonly knex: Knex) {
    this.instrument();
  }

  /** Requests admitted and not ended yet. */
  get requestsInside(): number {
    return this.open;
  }

  /** Counts a request admitted by the lock gate until its response is closed; the pool is destroyed only after. */
  enter(res: { once(event: 'close', fn: () => void): unknown }): void {
    this.open += 1;
    res.once('close', () => {
      this.open -= 1;
      if (this.open === 0) for (const done of this.drained.splice(0)) done();
    });
  }

  /** Runs `fn`, whose acquires are served while the pool closes (not once it is destroyed). */
  allowWhileClosing<T>(fn: () => Promise<T>): Promise<T> {
    return this.cleanups.run(true, fn);
  }

  /**
   * Refuses every acquire not yet served (those waiting now and those to come), lets the work
   * holding connections and the requests inside finish, then destroys the pool. Resolves when no
   * connection of the pool is left.
   */
  async close(): Promise<void> {
    this.closing = true;
    for (const op of this.waiting) op.reject(new PoolClosedForLock());
    this.waiting.clear();
    if (this.open > 0) await new Promise<void>((resolve) => this.drained.push(resolve));
    await this.knex.destroy();
  }

  /** A new pool after the lock (un-lock); acquires are served again. */
  reopen(): void {
    this.knex.initialize();
    this.instrument();
    this.closing = false;
  }

  /**
   * Wraps the pool's acquire (knex calls `pool.acquire().promise` for every connection it needs).
   * knex creates the pool (again on `initialize`), so the wrapper goes on each new one.
   */
  private instrument(): void {
    const pool = (this.knex.client as { pool?: TarnPool }).pool;
    if (!pool || pool[PATCHED]) return;
    const acquire = pool.acquire;
    const drain = this;
    pool[PATCHED] = true;
    pool.acquire = function (this: TarnPool): PendingAcquire {
      return drain.acquire(this, acquire);
    };
  }

  private acquire(pool: TarnPool, acquire: () => PendingAcquire): PendingAcquire {
    if (this.cleanups.getStore()) return acquire.call(pool);
    // Refused before it enters the pool's queue: it can never be handed a connection.
    if (this.closing) return { promise: Promise.reject(new PoolClosedForLock()), reject: () => undefined };
    const op = acquire.call(pool);
    this.waiting.add(op);
    // tarn chained its own handlers onto op.promise before returning it; settled, the op no longer waits.
    const settled = () => void this.waiting.delete(op);
    op.promise.then(settled, settled);
    return op;
  }
}
