/**
 * In-memory match index: per entity, the key and the normalised value of every match field of
 * every row. Exact, never stale: an index is used only by a snapshot whose change token
 * (QueryDialect.changeToken) equals the token of the snapshot it was built from, i.e. when no
 * data of the database can have changed in between; any commit anywhere in the database makes
 * the next match rebuild it (one scan of the key and match columns). Engines without an exact
 * token (SQL Server) do not use it.
 */
import type { Knex } from 'knex';
import type { EntityDef } from '../../catalog/types';
import { keyOf } from '../query/children';
import type { SnapshotReader } from '../../storage/dialect';
import { BASE, col } from '../query/sql';
import { normalise } from './normalize';

export interface MatchIndex {
  token: string;
  keys: unknown[];
  /** keyOf(key), the tie order. */
  sortKeys: string[];
  /** Storage column -> normalised value per row (null where the column is null). */
  values: Map<string, Array<string | null>>;
}

/** Tables larger than this are matched by streaming instead (memory bound). */
export const MATCH_INDEX_MAX_ROWS = 1_000_000;

const BATCH = 10_000;

interface Entry {
  token: string;
  index: Promise<MatchIndex | undefined>;
}

const caches = new WeakMap<Knex, Map<string, Entry>>();

async function build(reader: SnapshotReader, entity: EntityDef, token: string): Promise<MatchIndex | undefined> {
  const key = entity.keyColumn;
  const columns = [...new Set(entity.matchFields.map((f) => entity.fields[f]!.column))];
  const index: MatchIndex = { token, keys: [], sortKeys: [], values: new Map(columns.map((c) => [c, []])) };
  let after: unknown;
  for (;;) {
    const qb = reader.db({ [BASE]: entity.table }).select([key, ...columns].map((c) => col(BASE, c)));
    if (after !== undefined) qb.where(col(BASE, key), '>', after as Knex.Value);
    const rows = await reader.all(qb.orderBy(col(BASE, key), 'asc').limit(BATCH));
    for (const row of rows) {
      index.keys.push(row[key]);
      index.sortKeys.push(keyOf(row[key]));
      for (const c of columns) {
        const raw = row[c];
        index.values.get(c)!.push(raw === null || raw === undefined ? null : normalise(String(raw)));
      }
    }
    if (index.keys.length > MATCH_INDEX_MAX_ROWS) return undefined;
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]![key];
  }
  return index;
}

/**
 * The index of `entity` for the snapshot of `reader` (whose change token is `token`): the cached
 * one when the token is unchanged, else built now inside that snapshot. `undefined` when the
 * table is too large to index.
 */
export async function matchIndex(knex: Knex, reader: SnapshotReader, entity: EntityDef, token: string): Promise<MatchIndex | undefined> {
  let perKnex = caches.get(knex);
  if (!perKnex) {
    perKnex = new Map();
    caches.set(knex, perKnex);
  }
  const entry = perKnex.get(entity.entity);
  if (entry && entry.token === token) return entry.index;
  const index = build(reader, entity, token);
  const fresh: Entry = { token, index };
  perKnex.set(entity.entity, fresh);
  index.catch(() => {
    if (perKnex!.get(entity.entity) === fresh) perKnex!.delete(entity.entity);
  });
  return index;
}
