import type { Knex } from 'knex';
import { ApiKeyRepository, type ApiKeyRecord, type KeyRole, type KeyState } from './api-keys';
import type { MaintenanceLock } from './lock-store';
import type { Scope } from '../auth/scopes';

/** Keys remembered at most this many at once (a full cache is emptied: unknown keys are never remembered). */
const KEY_CACHE_CAPACITY = 10_000;

/**
 * The API key repository the service uses: while the database is locked it answers from the
 * lock's snapshot instead of the (dropped) pool, a snapshot the lock keeps within the same bound
 * (`cacheMs`) by reading it again through a connection of its own (decision 0450). Loading the lock
 * state happens on the first lookup, so a service restarted while locked drops its pool before
 * serving anything.
 *
 * Authentication (`findForRequest`) reuses a key read from `apikey` for `cacheMs` (API_KEY_CACHE_MS,
 * default 250 ms, at most 1 s: the bound the maintenance lock keeps across processes). The indexed
 * SELECT per request was most of the surface's fixed cost (decision 0033). A key disabled,
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

  override async findForRequest(key: string, options: { outsidePool?: boolean } = {}): Promise<ApiKeyRecord | undefined> {
    const read = (): Promise<ApiKeyRecord | undefined> =>
      // The lock and un-lock requests read the key through the lock's own connection: a lock must not
      // wait in the pool's queue behind the load it is about to turn away.
      options.outsidePool && this.lock.loaded && !this.lock.isLocked() ? this.lock.ownConnection((db) => new ApiKeyRepository(db).findByKey(key)) : this.findByKey(key);
    if (this.cacheMs <= 0 || !this.lock.loaded || this.lock.isLocked()) return read();
    const id = key.trim().toLowerCase();
    const now = performance.now();
    const hit = this.cache.get(id);
    if (hit && now - hit.readAt < this.cacheMs) return hit.record;
    // readAt is taken before the read: the answer is never older than cacheMs when reused.
    const record = await read();
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
