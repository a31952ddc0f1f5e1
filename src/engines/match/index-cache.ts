/**
 * In-memory match index: per entity, the key of every row (in key order) and, per match field
 * (built when first asked for), the distinct normalised values sorted by length, each with the
 * rows holding it (compressed: one Int32Array of row numbers plus offsets). A match scores each
 * distinct value within the length window |len - target| <= maxDistance once.
 *
 * Exact, never stale: an index is used only by a snapshot whose change token
 * (SnapshotReader.changeToken) equals the token of the snapshot it was built from, i.e. when no
 * book data can have changed in between; any commit that changes book data, from any process or
 * connection, makes the next match rebuild what it needs (one scan of the key and the match
 * column). The service's bookkeeping writes (heartbeats, claims) do not.
 */
import type { Knex } from 'knex';
import type { EntityDef } from '../../catalog/types';
import type { SnapshotReader } from '../../storage/dialect';
import { BASE, col } from '../query/sql';
import { normalise } from './normalize';
import { rowKeys, type RowKeys } from './row-keys';

export interface ColumnIndex {
  /** Distinct normalised values, shortest first. */
  values: string[];
  /** Rows holding values[v]: rowsFlat[rowStart[v] .. rowStart[v + 1]). */
  rowStart: Int32Array;
  rowsFlat: Int32Array;
  /** byLength[n] = index in `values` of the first value of length >= n (maxLength + 2 entries). */
  byLength: Int32Array;
}

export interface MatchIndex {
  keys: RowKeys;
  columns: Map<string, ColumnIndex>;
}

/** Tables larger than this are matched by streaming instead (memory bound). */
export const MATCH_INDEX_MAX_ROWS = 1_000_000;

const BATCH = 2_000;

interface Scanned {
  keys: RowKeys;
  column: ColumnIndex;
}

interface Entry {
  token: string;
  keys?: RowKeys;
  columns: Map<string, Promise<Scanned | undefined>>;
}

const caches = new WeakMap<Knex, Map<string, Entry>>();

/**
 * The column index from the normalised value of every row (null: no value). Built by sorting row
 * numbers rather than grouping into a Map of arrays: one Int32Array instead of an array per
 * distinct value (100,000 parts: ~10 MB less transient heap, which set the peak resident set).
 */
function compress(norm: ReadonlyArray<string | null>): ColumnIndex {
  let present = 0;
  for (const v of norm) if (v !== null) present++;
  const order = new Int32Array(present);
  let k = 0;
  norm.forEach((v, row) => {
    if (v !== null) order[k++] = row;
  });
  order.sort((a, b) => {
    const x = norm[a]!;
    const y = norm[b]!;
    return x.length - y.length || (x < y ? -1 : x > y ? 1 : a - b);
  });
  const values: string[] = [];
  const starts: number[] = [];
  for (let n = 0; n < order.length; n++) {
    const v = norm[order[n]!]!;
    if (values.length === 0 || values[values.length - 1] !== v) {
      values.push(v);
      starts.push(n);
    }
  }
  const rowStart = new Int32Array(values.length + 1);
  rowStart.set(starts);
  rowStart[values.length] = order.length;
  const maxLength = values.length === 0 ? 0 : values[values.length - 1]!.length;
  const byLength = new Int32Array(maxLength + 2);
  let i = 0;
  for (let n = 0; n <= maxLength + 1; n++) {
    while (i < values.length && values[i]!.length < n) i++;
    byLength[n] = i;
  }
  return { values, rowStart, rowsFlat: order, byLength };
}

/** Reads the key and one match column of every row, in key order, inside the snapshot. */
async function scan(reader: SnapshotReader, entity: EntityDef, column: string): Promise<Scanned | undefined> {
  const key = entity.keyColumn;
  const norm: Array<string | null> = [];
  const keys: unknown[] = [];
  // Each distinct stored value is normalised once (normalise allocates several strings; 100,000
  // parts hold ~1,650 distinct names): the rows then share one string per value.
  const seen = new Map<string, string>();
  let after: unknown;
  for (;;) {
    const qb = reader.db({ [BASE]: entity.table }).select([...new Set([key, column])].map((c) => col(BASE, c)));
    if (after !== undefined) qb.where(col(BASE, key), '>', after as Knex.Value);
    const rows = await reader.all(qb.orderBy(col(BASE, key), 'asc').limit(BATCH));
    for (const row of rows) {
      keys.push(row[key]);
      const raw = row[column];
      if (raw === null || raw === undefined) {
        norm.push(null);
        continue;
      }
      const text = String(raw);
      let v = seen.get(text);
      if (v === undefined) {
        v = normalise(text);
        if (seen.size < 200_000) seen.set(text, v);
      }
      norm.push(v);
    }
    if (keys.length > MATCH_INDEX_MAX_ROWS) return undefined;
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]![key];
  }
  return { keys: rowKeys(keys), column: compress(norm) };
}

/**
 * The index of `entity` over `columns` for the snapshot of `reader` (whose change token is
 * `token`): what is cached under the same token, the rest built now inside that snapshot.
 * `undefined` when the table is too large to index.
 */
export async function matchIndex(knex: Knex, reader: SnapshotReader, entity: EntityDef, columns: readonly string[], token: string): Promise<MatchIndex | undefined> {
  let perKnex = caches.get(knex);
  if (!perKnex) {
    perKnex = new Map();
    caches.set(knex, perKnex);
  }
  let entry = perKnex.get(entity.entity);
  if (!entry || entry.token !== token) {
    entry = { token, columns: new Map() };
    perKnex.set(entity.entity, entry);
  }
  const out = new Map<string, ColumnIndex>();
  for (const c of columns) {
    let pending = entry.columns.get(c);
    if (!pending) {
      pending = scan(reader, entity, c);
      const current = entry;
      current.columns.set(c, pending);
      pending.catch(() => current.columns.delete(c));
    }
    const scanned = await pending;
    if (!scanned) return undefined;
    // Same token, same data, same key order: every column numbers the rows alike.
    entry.keys ??= scanned.keys;
    if (entry.keys.length !== scanned.keys.length) throw new Error(`match index of ${entity.entity}: row count differs between columns under one token`);
    scanned.keys = entry.keys; // one copy of the keys per entity
    out.set(c, scanned.column);
  }
  return { keys: entry.keys ?? rowKeys([]), columns: out };
}
