import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Scope } from '../auth/scopes';

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

function toRecord(row: any): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    state: row.state,
    reason: row.reason ?? null,
    createdAt: row.created_at instanceof Date ? row.created_at.toISOString() : String(row.created_at),
    scopes: scopesFromColumn(row.scopes),
  };
}

export class ApiKeyRepository {
  constructor(private readonly knex: Knex) {}

  /**
   * The key as a request presents it (authentication); subclasses may answer from memory.
   * `outsidePool`: read without waiting in the connection pool's queue (the maintenance lock's own
   * operations, storage/lock-store.ts); a subclass decides how.
   */
  findForRequest(key: string, _options: { outsidePool?: boolean } = {}): Promise<ApiKeyRecord | undefined> {
    return this.findByKey(key);
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
