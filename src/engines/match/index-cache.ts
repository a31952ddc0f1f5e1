/**
 * In-memory match index: per entity, the key of every row and, per match field, the distinct
 * normalised values (sorted by length, each with the rows holding it). A match scores each
 * distinct value within the length window |len - target| <= maxDistance once.
 *
 * Exact, never stale: an index is used only by a snapshot whose change token
 * (SnapshotReader.changeToken) equals the token of the snapshot it was built from, i.e. when no
 * data of the database can have changed in between; any commit anywhere in the database makes
 * the next match rebuild it (one scan of the key and match columns). Engines without an exact
 * token (SQL Server) do not use it.
 */
import type { Knex } from 'knex';
import type { EntityDef } from '../../catalog/types';
import type { SnapshotReader } from '../../storage/dialect';
import { BASE, col } from '../query/sql';
import { normalise } from './normalize';

export interface ColumnIndex {
  /** Distinct normalised values, shortest first. */
  values: string[];
  /** Row numbers (into MatchIndex.keys) holding each value. */
  rows: Int32Array[];
  /** byLength[n] = index in `values` of the first value of length >= n (length values.length + 2 entries). */
  byLength: Int32Array;
}

export interface MatchIndex {
  token: string;
  keys: unknown[];
  columns: Map<string, ColumnIndex>;
}

/** Tables larger than this are matched by streaming instead (memory bound). */
export const MATCH_INDEX_MAX_ROWS = 1_000_000;

const BATCH = 10_000;

interface Entry {
  token: string;
  index: Promise<MatchIndex | undefined>;
}

const caches = new WeakMap<Knex, Map<string, Entry>>();

function finish(groups: Map<string, number[]>): ColumnIndex {
  const values = [...groups.keys()].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  const rows = values.map((v) => Int32Array.from(groups.get(v)!));
  const maxLength = values.length === 0 ? 0 : values[values.length - 1]!.length;
  const byLength = new Int32Array(maxLength + 2);
  let i = 0;
  for (let n = 0; n <= maxLength + 1; n++) {
    while (i < values.length && values[i]!.length < n) i++;
    byLength[n] = i;
  }
  return { values, rows, byLength };
}

async function build(reader: SnapshotReader, entity: EntityDef, token: string): Promise<MatchIndex | undefined> {
  const key = entity.keyColumn;
  const columns = [...new Set(entity.matchFields.map((f) => entity.fields[f]!.column))];
  const groups = new Map(columns.map((c) => [c, new Map<string, number[]>()]));
  const keys: unknown[] = [];
  let after: unknown;
  for (;;) {
    const qb = reader.db({ [BASE]: entity.table }).select([key, ...columns].map((c) => col(BASE, c)));
    if (after !== undefined) qb.where(col(BASE, key), '>', after as Knex.Value);
    const rows = await reader.all(qb.orderBy(col(BASE, key), 'asc').limit(BATCH));
    for (const row of rows) {
      const n = keys.length;
      keys.push(row[key]);
      for (const c of columns) {
        const raw = row[c];
        if (raw === null || raw === undefined) continue;
        const v = normalise(String(raw));
        const g = groups.get(c)!;
        const list = g.get(v);
        if (list) list.push(n);
        else g.set(v, [n]);
      }
    }
    if (keys.length > MATCH_INDEX_MAX_ROWS) return undefined;
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]![key];
  }
  return { token, keys, columns: new Map(columns.map((c) => [c, finish(groups.get(c)!)])) };
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
