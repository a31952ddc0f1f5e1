import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Scope } from '../auth/scopes';
import { fromDbTime } from './db-time';

export type KeyRole = 'integration' | 'admin';
export type KeyState = 'active' | 'disabled' | 'revoked';

export interface ApiKeyRecord {
  id: string;
  name: string;
  role: KeyRole;
  state: KeyState;
  reason: string | null;
  createdAt: string;
  /** null: an unscoped key (everything the spec grants). Stored space-separated in `apikey.scopes`. */
  scopes: Scope[] | null;
}

const TABLE = 'apikey';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Keys are stored as SHA-256 of the key: the key is a random UUID (122 bits of entropy), so
 * a fast hash is enough and lets every request look the key up by index.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key.trim().toLowerCase()).digest('hex');
}

/** `apikey.scopes` (space-separated, NULL for an unscoped key) as the record holds it. */
export function scopesFromColumn(value: unknown): Scope[] | null {
  return value == null ? null : (String(value).split(' ').filter(Boolean) as Scope[]);
}

/** An `apikey` row as the record the service works with (the repository's, and the lock's snapshot of every key). */
export function toRecord(row: any): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    state: row.state,
    reason: row.reason ?? null,
    createdAt: (fromDbTime(row.created_at) ?? new Date(0)).toISOString(),
    scopes: scopesFromColumn(row.scopes),
  };
}

/**
 * How long the set of active key hashes (isKnownActive) is reused before a key it does not hold
 * makes it read again: however many requests ask, at most one read per this interval.
 */
export const ACTIVE_KEYS_REREAD_MS = 1_000;

export class ApiKeyRepository {
  private activeKeys: { hashes: Set<string>; readAtMs: number } | undefined;
  private readingActiveKeys: Promise<Set<string>> | undefined;

  constructor(private readonly knex: Knex) {}

  /**
   * The key as a request presents it (authentication); subclasses may answer from memory.
   * `outsidePool`: read without waiting in the connection pool's queue (the maintenance lock's own
   * operations, storage/lock-store.ts); a subclass decides how.
   */
  findForRequest(key: string, _options: { outsidePool?: boolean } = {}): Promise<ApiKeyRecord | undefined> {
    return this.findByKey(key);
  }

  /**
   * Whether the key is an active key, answered from the set of active key hashes held in memory,
   * not by a lookup of this key: read at most once per ACTIVE_KEYS_REREAD_MS, when a key it does
   * not hold is asked about. The failed-authentication throttle lets such a key through from an
   * address it refuses, at no database cost per refused request. A key created or enabled
   * through another process may be missed for up to ACTIVE_KEYS_REREAD_MS.
   */
  async isKnownActive(key: string): Promise<boolean> {
    const hash = hashApiKey(key);
    const known = this.activeKeys;
    if (known && (known.hashes.has(hash) || performance.now() - known.readAtMs < ACTIVE_KEYS_REREAD_MS)) return known.hashes.has(hash);
    if (!this.readingActiveKeys) {
      // Taken before the read: the set is never older than the interval when reused.
      const readAtMs = performance.now();
      this.readingActiveKeys = this.activeKeyHashes()
        .then((hashes) => ((this.activeKeys = { hashes, readAtMs }), hashes))
        .finally(() => (this.readingActiveKeys = undefined));
    }
    return (await this.readingActiveKeys).has(hash);
  }

  /** The hashes of every active key (one statement; the table holds a few keys per integrator). */
  async activeKeyHashes(): Promise<Set<string>> {
    const rows: Array<{ key_hash: string }> = await this.knex(TABLE).where({ state: 'active' }).select('key_hash');
    return new Set(rows.map((r) => String(r.key_hash)));
  }

  /** Drops the set of active keys (a key created, disabled or enabled through this process counts at once). */
  protected forgetActiveKeys(): void {
    this.activeKeys = undefined;
  }

  async findByKey(key: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.knex(TABLE).where({ key_hash: hashApiKey(key) }).first();
    return row ? toRecord(row) : undefined;
  }

  /** `scopes` null (the default): an unscoped key. An empty list is a key that may only ping. */
  async create(name: string, role: KeyRole, key: string = randomUUID(), scopes: readonly Scope[] | null = null): Promise<{ key: string; record: ApiKeyRecord }> {
    const id = randomUUID();
    await this.knex(TABLE).insert({
      id,
      key_hash: hashApiKey(key),
      name,
      role,
      state: 'active',
      reason: null,
      created_at: new Date().toISOString(),
      scopes: scopes === null ? null : scopes.join(' '),
    });
    const record = await this.knex(TABLE).where({ id }).first();
    return { key, record: toRecord(record) };
  }

  /** Makes sure `key` exists with the given role (DEMO_API_KEY); re-activates it if it was switched off. */
  async ensure(key: string, name: string, role: KeyRole): Promise<ApiKeyRecord> {
    const existing = await this.findByKey(key);
    if (!existing) return (await this.create(name, role, key)).record;
    if (existing.role !== role || existing.state !== 'active') {
      await this.knex(TABLE).where({ id: existing.id }).update({ role, state: 'active', reason: null });
    }
    return (await this.findByKey(key))!;
  }

  async findById(id: string): Promise<ApiKeyRecord | undefined> {
    if (!UUID.test(id.trim())) return undefined;
    const row = await this.knex(TABLE).where({ id: id.trim().toLowerCase() }).first();
    return row ? toRecord(row) : undefined;
  }

  /** The operator CLI accepts the key itself or its id (the id is what `list` shows). */
  async findByKeyOrId(value: string): Promise<ApiKeyRecord | undefined> {
    return (await this.findByKey(value)) ?? (await this.findById(value));
  }

  async setStateById(id: string, state: KeyState, reason: string | null): Promise<ApiKeyRecord | undefined> {
    await this.knex(TABLE).where({ id }).update({ state, reason });
    return this.findById(id);
  }

  async list(): Promise<ApiKeyRecord[]> {
    return (await this.knex(TABLE).orderBy('created_at').orderBy('id')).map(toRecord);
  }

  async count(): Promise<number> {
    const row = await this.knex(TABLE).count<{ n: number | string }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  async setState(key: string, state: KeyState, reason: string | null): Promise<ApiKeyRecord | undefined> {
    const existing = await this.findByKey(key);
    if (!existing) return undefined;
    await this.knex(TABLE).where({ id: existing.id }).update({ state, reason });
    return this.findByKey(key);
  }
}
