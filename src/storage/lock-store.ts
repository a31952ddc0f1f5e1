import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { ApiProblem } from '../errors/problem';
import { ApiKeyRepository, type ApiKeyRecord, type KeyRole, type KeyState } from './api-keys';
import { openOwnConnection, type Engine } from './database';
import { toDatabaseProblem } from './boundary';
import type { Scope } from '../auth/scopes';
import { fromDbTime, toDbTime } from './db-time';
import { PoolDrain } from './pool-drain';
import { LockKeySnapshot } from './lock-key-snapshot';
import { lockedProblem, lockHeldProblem, notConfirmedProblem } from './lock-problems';
import { fenceAtBegin, lockTableExclusive, readLockShared, type FenceRider } from './lock-fence';
import type { BeginStatement } from './database';
import { processesNotIn, recordLockState, UNLOCKED_STATE, type InstanceIdentity } from './instance-heartbeat';

/**
 * The maintenance lock (spec, States and transitions), and how it takes effect on every process
 * before it answers (docs/decisions/0200-lock-takes-effect-before-it-answers.md).
 *
 * The table `mntlck` (at most one row, id 1, with a `lock_id` per lock taken) is the truth; the
 * state the gate reads on every request is held here in memory, so answering 423 never needs the
 * database. While locked this process holds NO pooled connection: applying a lock closes the pool
 * (storage/pool-drain.ts: requests already in the database finish, those still waiting for a
 * connection answer 423) and destroys it; the un-lock re-creates it. Authentication keeps working
 * meanwhile from a snapshot of the API keys taken just before, kept no older than `keyMaxAgeMs`
 * (API_KEY_CACHE_MS, the bound a key change keeps outside a lock): every re-read while locked takes
 * it again, and a lookup that finds it older reads it again through a connection of its own
 * (lock-key-snapshot.ts; docs/decisions/0450-key-snapshot-fresh-while-locked.md).
 *
 * Every process applies each change (lock or un-lock) and then records the state it applied in its
 * heartbeat row (`insthb.lock_state`): its acknowledgement. `lock` and `un-lock` answer only once
 *   - this process has applied the change (gate flipped; for a lock: the requests it had admitted
 *     ended and its pool destroyed),
 *   - the other processes of this instance have (a cluster worker asks the primary to relay the
 *     change to its siblings over the IPC channel and waits for their answers: `relay`),
 *   - and every live process on the database shows the new state in `insthb` (a process whose
 *     heartbeat is older than MISSED_BEATS of its interval is not waited for).
 * A process that has not acknowledged within `ackTimeoutMs` (LOCK_ACK_TIMEOUT_MS) turns the answer
 * into 504 LOCK_NOT_CONFIRMED; the change stays recorded and the same call again waits again
 * (idempotent for the holder). Processes of other instances learn of a change by re-reading
 * `mntlck` every `pollMs` (LOCK_POLL_MS), which is also the safety net for a missed message.
 * Posting transactions re-check the lock under a table lock (storage/lock-fence.ts), so no write
 * commits after a lock was recorded, whatever a process knows.
 *
 * The lock's own database work (recording it, re-reading it while locked, the key snapshot, the
 * acknowledgements, the waits) goes through a connection of its own, opened for it and closed
 * right after (`openOwnConnection`): it never waits in a busy pool's queue, and it needs no pool
 * while the pool is closed. While locked, each re-read also records the heartbeat (`whileLocked`):
 * a locked process is alive, and the un-lock waits for it.
 *
 * Why one file of ~500 lines: the lock's states, their transitions and the acknowledgement wait
 * are one state machine over the same fields (holder, applied, acknowledged, the queue); split,
 * each part would need the others' private state. What stands apart lives beside it: the problems
 * it answers (lock-problems.ts), the fence (lock-fence.ts), the pool drain (pool-drain.ts), the
 * key snapshot (lock-key-snapshot.ts) and the key repository that answers while locked
 * (lock-aware-api-keys.ts).
 */
export interface LockHolder {
  userName: string;
  apiKeyId: string | null;
  lockedAt: string;
}

export interface PoolStats {
  /** false while the pool is destroyed (locked). */
  exists: boolean;
  used: number;
  free: number;
  pendingAcquires: number;
  pendingCreates: number;
}


/** Between two reads of the acknowledgements while a lock or un-lock waits for them. */
const ACK_POLL_MS = 10;

/** The lock state a process applies: unlocked, or locked by a lock (its lock_id) and holder. */
export type LockTarget = { locked: false } | Locked;
type Locked = { locked: true; id: string; holder: LockHolder };

/** Tells the other processes of this instance (cluster workers) that the lock changed. */
export interface LockRelay {
  /**
   * Resolves true once each sibling has applied `target` (a lock about to be recorded) or, without
   * it, re-read and applied the recorded lock; false after `timeoutMs`.
   */
  changed(timeoutMs: number, target?: LockTarget): Promise<boolean>;
}

export interface MaintenanceLockOptions {
  /** How often `mntlck` is re-read to see locks taken and released by other processes; 0 = never. */
  pollMs?: number;
  /** This process (its heartbeat row): where its acknowledgements are recorded. Without it none are. */
  identity?: InstanceIdentity;
  /** How long lock and un-lock wait for every live process to acknowledge (LOCK_ACK_TIMEOUT_MS). */
  ackTimeoutMs?: number;
  /** Run on every re-read while locked, through the lock's own connection (the heartbeat's beat). */
  whileLocked?: (db: Knex) => Promise<void>;
  /** Called once the lock is released, here or through another process (connections allowed again). */
  onReleased?: () => void;
  /**
   * The oldest the key snapshot may be when a request is authenticated while locked (API_KEY_CACHE_MS;
   * 0 = read for every lookup): a key revoked, disabled or created through another process is
   * answered from its new state within this bound, as outside a lock.
   */
  keyMaxAgeMs?: number;
}

function holderOf(row: any): LockHolder {
  return {
    userName: String(row.user_name),
    apiKeyId: row.api_key_id ?? null,
    lockedAt: (fromDbTime(row.locked_at) ?? new Date()).toISOString(),
  };
}

/** A row written before lock ids existed (a lock held across the upgrade) is one lock all the same. */
const LEGACY_LOCK_ID = 'held';

function targetOf(row: any): LockTarget {
  return row ? { locked: true, id: row.lock_id ? String(row.lock_id) : LEGACY_LOCK_ID, holder: holderOf(row) } : { locked: false };
}

function stateOf(target: LockTarget): string {
  return target.locked ? target.id : UNLOCKED_STATE;
}

function sameUser(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

function isHolder(holder: LockHolder, apiKeyId: string, userName: string): boolean {
  return holder.apiKeyId === apiKeyId && sameUser(holder.userName, userName);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class MaintenanceLock {
  private holder: LockHolder | null = null;
  /** The state this process has applied (a lock_id or UNLOCKED_STATE); null before the first read. */
  private applied: string | null = null;
  /** The state last recorded in this process's heartbeat row. */
  private acknowledged: string | null = null;
  /** Counts the changes applied: a re-read that began before one is stale. */
  private changes = 0;
  private loading: Promise<void> | null = null;
  private loadedOnce = false;
  /** The API keys authentication reads while locked (no pool). */
  private readonly keys: LockKeySnapshot;
  private queue: Promise<unknown> = Promise.resolve();
  private poller: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly pollMs: number;
  private readonly ackTimeoutMs: number;
  /** Closes the pool for a lock: work holding a connection finishes, acquires not yet served are refused (423). */
  readonly drain: PoolDrain;
  /** The siblings of a cluster worker (set by the worker's start, src/main.ts); none otherwise. */
  relay: LockRelay | undefined;

  constructor(
    private readonly knex: Knex,
    private readonly engine: Engine,
    private readonly logger: Logger,
    private readonly options: MaintenanceLockOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 250;
    this.ackTimeoutMs = options.ackTimeoutMs ?? 5000;
    this.keys = new LockKeySnapshot({ engine, maxAgeMs: options.keyMaxAgeMs ?? 0, ownConnection: (fn) => this.withOwnConnection(fn), locked: () => this.holder !== null });
    this.drain = new PoolDrain(knex);
  }

  /** The holder, or null when unlocked. Pure memory. */
  get current(): LockHolder | null {
    return this.holder;
  }

  isLocked(): boolean {
    return this.holder !== null;
  }

  /** True once the persistent state has been read. */
  get loaded(): boolean {
    return this.loadedOnce;
  }

  /** Loads the persistent state once (retried on the next call if the database could not answer). */
  ensureLoaded(): Promise<void> {
    if (this.loadedOnce) return Promise.resolve();
    this.loading ??= this.load().catch((err) => {
      this.loading = null;
      throw err;
    });
    return this.loading;
  }

  /** Reads `mntlck` and applies it: a lock recorded drops the pool before anything is served. */
  async load(): Promise<void> {
    await this.serialized(async () => {
      if (this.loadedOnce) return;
      const row = await this.knex('mntlck').where({ id: 1 }).first();
      await this.apply(targetOf(row));
      if (row) this.logger.warn({ lockUser: this.holder?.userName, lockedAt: this.holder?.lockedAt }, 'database is locked for maintenance (restored at start); connections dropped');
      this.loadedOnce = true;
    });
    this.watch();
  }

  /** Starts re-reading `mntlck` every `pollMs` (idempotent; the timer does not keep the process alive). */
  private watch(): void {
    if (this.poller || this.stopped || this.pollMs <= 0) return;
    let inFlight = false;
    this.poller = setInterval(() => {
      // A slow read (a loaded database, a probe connecting) is not queued behind: skip this tick.
      if (inFlight) return;
      inFlight = true;
      this.refresh()
        .catch((err) => this.logger.debug({ err }, 'maintenance lock: shared state not readable; keeping the last known state'))
        .finally(() => {
          inFlight = false;
        });
    }, this.pollMs);
    this.poller.unref();
  }

  /** Stops the re-reads (shutdown). */
  stop(): void {
    this.stopped = true;
    if (this.poller) clearInterval(this.poller);
    this.poller = null;
  }

  /**
   * Reads `mntlck` and applies what other processes did: a lock taken elsewhere closes this
   * process's pool (after the requests inside finish, as a local lock does); an un-lock elsewhere
   * brings it back. Acknowledges the state it applied. Throws when the table cannot be read
   * (nothing changes then). Called every `pollMs` through the pool, and when a sibling worker
   * relays a change with `ownConnection` (a read waiting behind the pool's queue would hold the
   * sibling's lock back).
   */
  async refresh(options: { ownConnection?: boolean } = {}): Promise<void> {
    if (!this.loadedOnce || this.stopped) return;
    if (!this.holder && !options.ownConnection) {
      // Read outside the queue of changes: a read waiting in a busy pool's queue must not hold a
      // lock back (applying it is what turns that queue away). A read overtaken by a change is stale.
      const seen = this.changes;
      const row = await this.knex('mntlck').where({ id: 1 }).first();
      await this.serialized(async () => {
        if (!this.stopped && this.changes === seen) await this.apply(targetOf(row));
      });
      return;
    }
    await this.serialized(async () => {
      if (this.stopped) return;
      // Locked (no pool): one connection of its own for the read, the beat, the key snapshot and the acknowledgement.
      await this.withOwnConnection(async (db) => {
        const row = await db('mntlck').where({ id: 1 }).first();
        if (this.holder) await this.options.whileLocked?.(db);
        // Still locked: the keys again, so that a key changed elsewhere is seen without a lookup's own read.
        if (this.holder && row) await this.keys.take(db);
        await this.apply(targetOf(row), db);
      });
    });
  }

  /**
   * Locks. Same holder again (same API key and userName): answered as locked, nothing changes (but
   * the wait for the acknowledgements is made again: the retry after a 504). Held by anyone else:
   * 409 LOCK_HELD naming the holder. Answers once every live process has applied the lock.
   */
  lock(apiKeyId: string, userName: string): Promise<{ holder: LockHolder; already: boolean }> {
    // A driver error is its problem (502/503), as for un-lock: the routes only render.
    return this.locking(apiKeyId, userName).catch((err: unknown) => Promise.reject(toDatabaseProblem(err, this.engine) ?? err));
  }

  private async locking(apiKeyId: string, userName: string): Promise<{ holder: LockHolder; already: boolean }> {
    await this.ensureLoaded();
    const deadline = Date.now() + this.ackTimeoutMs;
    return this.withOwnConnection(async (db) => {
      const current = targetOf(await db('mntlck').where({ id: 1 }).first());
      let recorded: { target: Locked; already: boolean };
      if (current.locked) {
        if (!isHolder(current.holder, apiKeyId, userName)) throw lockHeldProblem(current.holder, 'lock');
        recorded = { target: current, already: true };
      } else {
        const lockedAt = new Date();
        const intended: Locked = { locked: true, id: randomUUID(), holder: { userName, apiKeyId, lockedAt: lockedAt.toISOString() } };
        // This process and its siblings close first, so that writing the lock waits for no writer of
        // this instance: SQLite's write lock has no queue, and a busy pool would take it back after
        // every commit. Their gates answer 423 from now on, a moment before the lock is recorded.
        await this.prepare(intended, db, deadline);
        try {
          recorded = await db.transaction(async (trx) => {
            await lockTableExclusive(trx, this.engine, Math.max(1, deadline - Date.now()));
            const row = await trx('mntlck').where({ id: 1 }).first();
            if (row) {
              // Locked through another process meanwhile.
              const target = targetOf(row) as Locked;
              if (isHolder(target.holder, apiKeyId, userName)) return { target, already: true };
              throw lockHeldProblem(target.holder, 'lock');
            }
            await trx('mntlck').insert({ id: 1, user_name: userName, api_key_id: apiKeyId, locked_at: toDbTime(this.engine, lockedAt), lock_id: intended.id });
            return { target: intended, already: false };
          });
        } catch (err) {
          // Not recorded (or recorded by someone else): every process of this instance goes back to what the database says.
          await this.resync(deadline);
          throw err;
        }
      }
      // The siblings are told again even when they prepared it: a re-read of theirs that began
      // before the lock was recorded may have taken them back to unlocked meanwhile.
      await this.confirm(recorded.target, db, deadline);
      if (!recorded.already) this.logger.warn({ lockUser: userName, apiKeyId, lockId: recorded.target.id }, 'database locked for maintenance; every process has dropped its connections');
      return { holder: recorded.target.holder, already: recorded.already };
    });
  }

  /**
   * A change relayed by a sibling worker (src/cluster.ts): the lock it is about to record (applied
   * here first, see `lock`), or, without a target, "re-read the lock".
   */
  async relayed(target?: LockTarget): Promise<void> {
    if (!target) return this.refresh({ ownConnection: true });
    if (!this.loadedOnce || this.stopped) return;
    await this.serialized(() => this.apply(target));
  }

  /**
   * Applies the lock about to be recorded here (through `db`) and on the siblings; waits at most
   * until `deadline` (the lock goes on either way).
   */
  private async prepare(target: Locked, db: Knex, deadline: number): Promise<void> {
    const local = this.serialized(() => this.apply(target, db));
    const siblings = this.relay ? this.relay.changed(Math.max(0, deadline - Date.now()), target) : Promise.resolve(true);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
    });
    try {
      await Promise.race([Promise.all([local, siblings]), expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Back to the recorded state, here and on the siblings (a lock that was prepared but not recorded). */
  private async resync(deadline: number): Promise<void> {
    await this.refresh({ ownConnection: true }).catch((err) => this.logger.warn({ err }, 'maintenance lock: could not re-read the lock; the next re-read tries again'));
    await this.relay?.changed(Math.max(100, deadline - Date.now()));
  }

  /**
   * Unlocks. The holder (same API key and userName) unlocks; anyone else gets 409 LOCK_HELD
   * unless `override`. Unlocking an unlocked database answers unlocked (after the same wait as an
   * un-lock: the retry after a 504). Answers once every live process serves again.
   */
  unlock(apiKeyId: string, userName: string, override: boolean): Promise<{ previous: LockHolder | null }> {
    return this.unlocking(apiKeyId, userName, override).catch((err: unknown) => Promise.reject(toDatabaseProblem(err, this.engine) ?? err));
  }

  private async unlocking(apiKeyId: string, userName: string, override: boolean): Promise<{ previous: LockHolder | null }> {
    await this.ensureLoaded();
    const deadline = Date.now() + this.ackTimeoutMs;
    return this.withOwnConnection(async (db) => {
      const previous = await db.transaction(async (trx) => {
        await lockTableExclusive(trx, this.engine, this.ackTimeoutMs);
        const row = await trx('mntlck').where({ id: 1 }).first();
        if (!row) return null;
        const holder = holderOf(row);
        if (!isHolder(holder, apiKeyId, userName) && !override) throw lockHeldProblem(holder, 'un-lock');
        await trx('mntlck').where({ id: 1 }).del();
        return holder;
      });
      await this.confirm({ locked: false }, db, deadline);
      if (previous) this.logger.warn({ previousHolder: previous.userName, by: userName, override: !isHolder(previous, apiKeyId, userName) }, 'maintenance lock released; every process serves again');
      return { previous };
    });
  }

  /**
   * Inside a posting transaction, before anything is written: 423 when the lock is recorded (the
   * fence of storage/lock-fence.ts: a lock being recorded waits for this transaction to end).
   * `rider`: a value read in the same statement (the reference change counter); `atBegin`: the
   * statement as the transaction's BEGIN read it (`fenceStatement`), where the engine could.
   */
  /** The fence for the BEGIN of a posting transaction (lock-fence.ts fenceAtBegin): pass it to `recheck` too. */
  fenceStatement(riderSql?: string): BeginStatement {
    return fenceAtBegin(this.knex, this.engine, riderSql);
  }

  async recheck(trx: Knex.Transaction, rider?: FenceRider, atBegin?: BeginStatement): Promise<void> {
    const row = await readLockShared(trx, this.engine, rider, atBegin);
    if (row) throw this.lockedProblem(holderOf(row));
  }

  /**
   * Waits until the change recorded (`target`) has taken effect: here, on this instance's other
   * processes (the relay: each re-reads the lock, after it was recorded), and on every live process
   * on the database (their acknowledgements, read through `db`). 504 LOCK_NOT_CONFIRMED at
   * `deadline`; the change stays recorded.
   */
  private async confirm(target: LockTarget, db: Knex, deadline: number): Promise<void> {
    const local = this.serialized(() => this.apply(target, db));
    const siblings = this.relay ? this.relay.changed(Math.max(0, deadline - Date.now())) : Promise.resolve(true);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), Math.max(0, deadline - Date.now()));
    });
    try {
      // Applying goes on after a 504 (the pool still closes once the requests inside have ended).
      local.catch((err) => this.logger.warn({ err }, 'maintenance lock: applying the change failed; the next re-read tries again'));
      const settled = await Promise.race([Promise.all([local, siblings]), expired]);
      if (settled === 'expired') throw this.notConfirmed(target, ['this instance']);
      if (settled[1] === false) throw this.notConfirmed(target, ['a process of this instance']);
    } finally {
      clearTimeout(timer);
    }
    const state = stateOf(target);
    for (;;) {
      const waiting = this.options.identity ? await processesNotIn(db, state, Date.now()) : [];
      if (waiting.length === 0) return;
      if (Date.now() >= deadline) throw this.notConfirmed(target, waiting);
      await sleep(ACK_POLL_MS);
    }
  }

  /**
   * Brings this process to `target` (called serialized): a lock takes the key snapshot, flips the
   * gate, closes the pool (the requests inside finish first) and destroys it; an un-lock
   * re-creates the pool and flips the gate back. Then acknowledges the state in `insthb`, through
   * `db` (the caller's own connection) or the pool (unlocked) or a connection of its own (locked).
   */
  private async apply(target: LockTarget, db?: Knex): Promise<void> {
    if (stateOf(target) !== this.applied) this.changes += 1;
    if (target.locked) {
      if (!this.holder) {
        await this.withOwnConnection(async (own) => {
          await this.keys.take(own);
          // From here the gate answers 423; requests already in the database finish before the pool goes.
          this.holder = target.holder;
          this.applied = target.id;
          await this.drain.close();
          await this.acknowledge(own);
        }, db);
        this.logger.warn({ lockUser: target.holder.userName, lockId: target.id }, 'maintenance lock applied: gate closed, connections dropped');
        return;
      }
      // Already locked: possibly un-locked and locked again meanwhile: name the current holder.
      this.holder = target.holder;
      this.applied = target.id;
      if (this.acknowledged !== this.applied) await this.withOwnConnection((own) => this.acknowledge(own), db);
      return;
    }
    if (this.holder) {
      this.drain.reopen();
      const previous = this.holder;
      this.holder = null;
      this.keys.clear();
      this.logger.warn({ previousHolder: previous.userName }, 'maintenance lock released here: connections allowed again');
      this.options.onReleased?.();
    }
    this.applied = UNLOCKED_STATE;
    if (this.acknowledged !== this.applied) await this.acknowledge(db ?? this.knex);
  }

  /** Records the applied state in this process's heartbeat row (a failure is retried by the next re-read). */
  private async acknowledge(db: Knex): Promise<void> {
    const identity = this.options.identity;
    const state = this.applied;
    if (!identity || state === null) return;
    try {
      await recordLockState(db, this.engine, identity, state);
      this.acknowledged = state;
    } catch (err) {
      this.logger.warn({ err, state }, 'maintenance lock: acknowledgement not recorded; the next re-read tries again');
    }
  }

  /** Runs `fn` with a connection opened for it (not from the pool), closed afterwards. */
  ownConnection<T>(fn: (db: Knex) => Promise<T>): Promise<T> {
    return this.withOwnConnection(fn);
  }

  /** Runs `fn` with `db` when given, else with a connection of its own, closed afterwards. */
  private async withOwnConnection<T>(fn: (db: Knex) => Promise<T>, db?: Knex): Promise<T> {
    if (db) return fn(db);
    const own = openOwnConnection(this.knex);
    try {
      return await fn(own);
    } finally {
      await own.destroy().catch(() => undefined);
    }
  }

  /** API key lookup while locked (lock-key-snapshot.ts: within `keyMaxAgeMs`, the pool gone). */
  findKeyWhileLocked(key: string): Promise<ApiKeyRecord | undefined> {
    return this.keys.find(key);
  }

  /** The hashes of the active keys while locked (the last snapshot, no database). */
  activeKeyHashesWhileLocked(): Set<string> {
    return this.keys.activeKeyHashes();
  }

  poolStats(): PoolStats {
    const pool = (this.knex.client as any).pool;
    if (!pool) return { exists: false, used: 0, free: 0, pendingAcquires: 0, pendingCreates: 0 };
    return {
      exists: true,
      used: pool.numUsed(),
      free: pool.numFree(),
      pendingAcquires: pool.numPendingAcquires(),
      pendingCreates: pool.numPendingCreates(),
    };
  }

  lockedProblem(holder: LockHolder | null = this.holder): ApiProblem {
    return lockedProblem(holder);
  }

  private notConfirmed(target: LockTarget, waiting: string[]): ApiProblem {
    this.logger.warn({ lock: stateOf(target), waitingFor: waiting, ackTimeoutMs: this.ackTimeoutMs }, 'maintenance lock: not every live process acknowledged in time');
    return notConfirmedProblem(target.locked ? target.holder : null, waiting.length, this.ackTimeoutMs);
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
