/**
 * Exact totalCount reuse: an integrator paging through one filter asks for the same count on
 * every page. A count is reused only by a snapshot whose change token (SnapshotReader
 * .changeToken) equals the token of the snapshot that computed it, i.e. when no book data can
 * have changed in between (the data change counter, migration 20261125000001); otherwise it is
 * computed again.
 */
import type { Knex } from 'knex';

const MAX_ENTRIES = 512;
const MAX_KEY_LENGTH = 8192;

interface Entry {
  token: string;
  count: number;
}

const caches = new WeakMap<Knex, Map<string, Entry>>();

export function countKey(query: Knex.QueryBuilder): string | undefined {
  const { sql, bindings } = query.toSQL();
  const key = `${sql}\u0000${JSON.stringify(bindings)}`;
  return key.length <= MAX_KEY_LENGTH ? key : undefined;
}

export function cachedCount(knex: Knex, key: string | undefined, token: string | undefined): number | undefined {
  if (key === undefined || token === undefined) return undefined;
  const entry = caches.get(knex)?.get(key);
  return entry && entry.token === token ? entry.count : undefined;
}

export function rememberCount(knex: Knex, key: string | undefined, token: string | undefined, count: number): void {
  if (key === undefined || token === undefined) return;
  let cache = caches.get(knex);
  if (!cache) {
    cache = new Map();
    caches.set(knex, cache);
  }
  if (cache.size >= MAX_ENTRIES && !cache.has(key)) cache.clear();
  cache.set(key, { token, count });
}

/** Whether a count of this query is held under some token (the next read may reuse it). */
export function holdsCount(knex: Knex, key: string | undefined): boolean {
  return key !== undefined && caches.get(knex)?.has(key) === true;
}
