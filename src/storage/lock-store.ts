import knexFactory, { type Knex } from 'knex';
import type { Logger } from 'pino';
import { ApiProblem } from '../errors/problem';
import { ApiKeyRepository, hashApiKey, scopesFromColumn, type ApiKeyRecord, type KeyRole, type KeyState } from './api-keys';
import type { Engine } from './database';
import { toDatabaseProblem } from './boundary';
import type { Scope } from '../auth/scopes';
import { fromDbTime, toDbTime } from './db-time';

/**
 * The maintenance lock (spec, States and transitions).
 *
 * The table `mntlck` (at most one row, id 1) is the persistent copy; the state the gate reads
 * on every request is held here in memory, so answering 423 never needs the database. While
 * locked the service holds NO database connection: the knex pool is destroyed when the lock is
 * taken (after the requests already inside have finished) and re-created only by un-lock.
 * Authentication keeps working meanwhile from a snapshot of the API keys taken just before the
 * pool was dropped.
 *
 * The state is loaded from the table once, before the first request is served (or explicitly
 * with `load()` at boot); a database that was locked when the service stopped is locked again
 * after the restart, and its pool is dropped right after reading the lock.
 *
 * Several processes (WORKERS, instances) share one database, so a lock taken or released through
 * another process must reach this one: after loading, `mntlck` is read again every `pollMs`
 * (LOCK_POLL_MS, default 250 ms: the gate is stale by at most that plus one read, inside the
 * spec's 1 s). While unlocked the read goes through the pool; while locked the pool is gone, so each read opens one connection of its
 * own and closes it right after (a probe: no connection is held between reads). A read that fails
 * changes nothing (a database under maintenance may well refuse it).
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

export const LOCK_RETRY_AFTER_SECONDS = 60;

export interface MaintenanceLockOptions {
  /** How often `mntlck` is re-read to see locks taken and released by other processes; 0 = never. */
  pollMs?: number;
  /** Called once the lock is released, here or through another process (connections allowed again). */
  onReleased?: () => void;
}

function holderOf(row: any): LockHolder {
  return {
    userName: String(row.user_name),
    apiKeyId: row.api_key_id ?? null,
    lockedAt: (fromDbTime(row.locked_at) ?? new Date()).toISOString(),
  };
}

function sameUser(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

export class MaintenanceLock {
  private holder: LockHolder | null = null;
  private loading: Promise<void> | null = null;
  private loadedOnce = false;
  private keySnapshot: Map<string, ApiKeyRecord> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private poller: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly pollMs: number;
  private readonly onReleased: (() => void) | undefined;

  constructor(
    private readonly knex: Knex,
    private readonly engine: Engine,
    private readonly logger: Logger,
    options: MaintenanceLockOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 250;
    this.onReleased = options.onReleased;
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

  /** Reads `mntlck`; when a lock is recorded, takes the key snapshot and drops the pool. */
  async load(): Promise<void> {
    await this.serialized(async () => {
      if (this.loadedOnce) return;
      const row = await this.knex('mntlck').where({ id: 1 }).first();
      if (row) {
        const holder = holderOf(row);
        await this.takeSnapshot();
        this.holder = holder;
        await this.dropPool();
        this.logger.warn({ lockUser: holder.userName, lockedAt: holder.lockedAt }, 'database is locked for maintenance (restored at start); connections dropped');
      }
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
   * Reads `mntlck` and applies what other processes did: a lock taken elsewhere drops this
   * process's pool (after the requests inside finish, as a local lock does); an un-lock elsewhere
   * brings it back. Throws when the table cannot be read (nothing changes then).
   */
  async refresh(): Promise<void> {
    if (!this.loadedOnce || this.stopped) return;
    await this.serialized(async () => {
      if (this.stopped) return;
      const row = this.holder ? await this.probe() : await this.knex('mntlck').where({ id: 1 }).first();
      if (row && !this.holder) {
        await this.takeSnapshot();
        this.holder = holderOf(row);
        await this.dropPool();
        this.logger.warn({ lockUser: this.holder.userName }, 'database locked for maintenance through another process; connections dropped');
      } else if (row && this.holder) {
        // Possibly un-locked and locked again by someone else meanwhile: name the current holder.
        const now = holderOf(row);
        if (now.userName !== this.holder.userName || now.apiKeyId !== this.holder.apiKeyId) this.holder = now;
      } else if (!row && this.holder) {
        this.knex.initialize();
        const previous = this.holder;
        this.holder = null;
        this.keySnapshot = null;
        this.logger.warn({ previousHolder: previous.userName }, 'maintenance lock released through another process; connections allowed again');
        this.onReleased?.();
      }
    });
  }

  /** One read of `mntlck` through a connection opened for it and closed right after (the pool is gone while locked). */
  private async probe(): Promise<any> {
    const config = this.knex.client.config as Knex.Config;
    const probe = knexFactory({ ...config, pool: { ...(config.pool ?? {}), min: 0, max: 1 } });
    try {
      return await probe('mntlck').where({ id: 1 }).first();
    } finally {
      await probe.destroy().catch(() => undefined);
    }
  }

  /**
   * Locks. Same holder again (same API key and userName): answered as locked, nothing changes.
   * Held by anyone else: 409 LOCK_HELD naming the holder. A driver error is its problem
   * (toDatabaseProblem: 502/503), as for un-lock.
   */
  async lock(apiKeyId: string, userName: string): Promise<{ holder: LockHolder; already: boolean }> {
    return this.take(apiKeyId, userName).catch((err: unknown) => Promise.reject(toDatabaseProblem(err, this.engine) ?? err));
  }

  private async take(apiKeyId: string, userName: string): Promise<{ holder: LockHolder; already: boolean }> {
    await this.ensureLoaded();
    // A lock taken through another process within the last poll: answer it as this process would.
    await this.refresh().catch(() => undefined);
    return this.serialized(async () => {
      if (this.holder) {
        if (this.holder.apiKeyId === apiKeyId && sameUser(this.holder.userName, userName)) return { holder: this.holder, already: true };
        throw this.heldBy(this.holder, 'lock');
      }
      const lockedAt = new Date();
      try {
        await this.knex('mntlck').insert({ id: 1, user_name: userName, api_key_id: apiKeyId, locked_at: toDbTime(this.engine, lockedAt) });
      } catch (err) {
        // Another instance locked it meanwhile: report that holder.
        const row = await this.knex('mntlck').where({ id: 1 }).first().catch(() => undefined);
        if (row) throw this.heldBy({ userName: String(row.user_name), apiKeyId: row.api_key_id ?? null, lockedAt: '' }, 'lock');
        throw err;
      }
      await this.takeSnapshot();
      // From here the gate answers 423; requests already inside finish before the pool goes.
      this.holder = { userName, apiKeyId, lockedAt: lockedAt.toISOString() };
      await this.dropPool();
      this.logger.warn({ lockUser: userName, apiKeyId }, 'database locked for maintenance; every connection dropped');
      return { holder: this.holder, already: false };
    });
  }

  /**
   * Unlocks. The holder (same API key and userName) unlocks; anyone else gets 409 LOCK_HELD
   * unless `override`. Unlocking an unlocked database answers unlocked (nothing to do).
   */
  async unlock(apiKeyId: string, userName: string, override: boolean): Promise<{ previous: LockHolder | null }> {
    return this.release(apiKeyId, userName, override).catch((err: unknown) => Promise.reject(toDatabaseProblem(err, this.engine) ?? err));
  }

  private async release(apiKeyId: string, userName: string, override: boolean): Promise<{ previous: LockHolder | null }> {
    await this.ensureLoaded();
    // A lock taken through another process within the last poll: learn it now, so that it can be released here.
    await this.refresh().catch(() => undefined);
    return this.serialized(async () => {
      const previous = this.holder;
      if (!previous) return { previous: null };
      const isHolder = previous.apiKeyId === apiKeyId && sameUser(previous.userName, userName);
      if (!isHolder && !override) throw this.heldBy(previous, 'un-lock');
      this.knex.initialize();
      try {
        await this.knex('mntlck').where({ id: 1 }).del();
      } catch (err) {
        await this.dropPool();
        throw err;
      }
      this.holder = null;
      this.keySnapshot = null;
      this.logger.warn({ previousHolder: previous.userName, by: userName, override: !isHolder }, 'maintenance lock released; connections allowed again');
      this.onReleased?.();
      return { previous };
    });
  }

  /** The hashes of the active keys while locked (no database). */
  activeKeyHashesWhileLocked(): Set<string> {
    const hashes = new Set<string>();
    for (const [hash, record] of this.keySnapshot ?? []) if (record.state === 'active') hashes.add(hash);
    return hashes;
  }

  /** API key lookup while locked (no database). */
  findKeyWhileLocked(key: string): ApiKeyRecord | undefined {
    return this.keySnapshot?.get(hashApiKey(key));
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

  lockedProblem(): ApiProblem {
    const holder = this.holder;
    return new ApiProblem(
      'MAINTENANCE_LOCK',
      holder ? `The accounting database is locked for maintenance by ${holder.userName} since ${holder.lockedAt}.` : 'The accounting database is locked for maintenance.',
      { headers: { 'Retry-After': String(LOCK_RETRY_AFTER_SECONDS) }, extensions: holder ? { lockUser: holder.userName, lockedAt: holder.lockedAt } : {} },
    );
  }

  private heldBy(holder: LockHolder, action: 'lock' | 'un-lock'): ApiProblem {
    return new ApiProblem(
      'LOCK_HELD',
      action === 'lock'
        ? `The database is already locked for maintenance by ${holder.userName}.`
        : `The maintenance lock is held by ${holder.userName}; only the holder may release it, or send override: true.`,
      { extensions: { lockUser: holder.userName } },
    );
  }

  private async takeSnapshot(): Promise<void> {
    const rows = await this.knex('apikey').select('id', 'key_hash', 'name', 'role', 'state', 'reason', 'created_at', 'scopes');
    const map = new Map<string, ApiKeyRecord>();
    for (const row of rows) {
      map.set(String(row.key_hash), {
        id: row.id,
        name: row.name,
        role: row.role,
        state: row.state,
        reason: row.reason ?? null,
        createdAt: (fromDbTime(row.created_at) ?? new Date(0)).toISOString(),
        scopes: scopesFromColumn(row.scopes),
      });
    }
    this.keySnapshot = map;
  }

  private async dropPool(): Promise<void> {
    await this.knex.destroy();
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/** Keys remembered at most this many at once (a full cache is emptied: unknown keys are never remembered). */
const KEY_CACHE_CAPACITY = 10_000;

/**
 * The API key repository the service uses: while the database is locked it answers from the
 * lock's snapshot instead of the (dropped) pool. Loading the lock state happens on the first
 * lookup, so a service restarted while locked drops its pool before serving anything.
 *
 * Authentication (`findForRequest`) reuses a key read from `apikey` for `cacheMs` (API_KEY_CACHE_MS,
 * default 250 ms, at most 1 s: the bound the maintenance lock keeps across processes). The indexed
 * SELECT per request was most of the surface's fixed cost (bench/README.md, Posting). A key disabled,
 * revoked or enabled through another process (the keys CLI, another instance) is therefore answered
 * from the new state at most `cacheMs` later; through this process, at once (every change here
 * empties the cache). Unknown keys are not remembered: a key created anywhere works on its first
 * request, and random keys cannot fill memory.
 */
export class LockAwareApiKeys extends ApiKeyRepository {
  private readonly cache = new Map<string, { record: ApiKeyRecord; readAt: number }>();

  constructor(
    knex: Knex,
    private readonly lock: MaintenanceLock,
    private readonly cacheMs = 0,
  ) {
    super(knex);
  }

  override async findByKey(key: string): Promise<ApiKeyRecord | undefined> {
    await this.lock.ensureLoaded();
    if (this.lock.isLocked()) return this.lock.findKeyWhileLocked(key);
    return super.findByKey(key);
  }

  override async findForRequest(key: string): Promise<ApiKeyRecord | undefined> {
    if (this.cacheMs <= 0 || !this.lock.loaded || this.lock.isLocked()) return this.findByKey(key);
    const id = key.trim().toLowerCase();
    const now = performance.now();
    const hit = this.cache.get(id);
    if (hit && now - hit.readAt < this.cacheMs) return hit.record;
    // readAt is taken before the read: the answer is never older than cacheMs when reused.
    const record = await this.findByKey(key);
    if (!record || this.lock.isLocked()) {
      this.cache.delete(id);
      return record;
    }
    if (this.cache.size >= KEY_CACHE_CAPACITY) this.cache.clear();
    this.cache.set(id, { record, readAt: now });
    return record;
  }

  override async activeKeyHashes(): Promise<Set<string>> {
    await this.lock.ensureLoaded();
    if (this.lock.isLocked()) return this.lock.activeKeyHashesWhileLocked();
    return super.activeKeyHashes();
  }

  /** Forgets every remembered key (a change made through this process is answered at once). */
  forget(): void {
    this.cache.clear();
    this.forgetActiveKeys();
  }

  override async create(name: string, role: KeyRole, key?: string, scopes?: readonly Scope[] | null): Promise<{ key: string; record: ApiKeyRecord }> {
    try {
      return await super.create(name, role, key, scopes);
    } finally {
      this.forget();
    }
  }

  override async ensure(key: string, name: string, role: KeyRole): Promise<ApiKeyRecord> {
    try {
      return await super.ensure(key, name, role);
    } finally {
      this.forget();
    }
  }

  override async setStateById(id: string, state: KeyState, reason: string | null): Promise<ApiKeyRecord | undefined> {
    try {
      return await super.setStateById(id, state, reason);
    } finally {
      this.forget();
    }
  }

  override async setState(key: string, state: KeyState, reason: string | null): Promise<ApiKeyRecord | undefined> {
    try {
      return await super.setState(key, state, reason);
    } finally {
      this.forget();
    }
  }
}
