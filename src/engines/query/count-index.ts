/**
 * Exact totalCount of a comparison on a number column without a count statement: the column's
 * values, sorted, in memory, and a binary search per request.
 *
 * The count cache (count-cache.ts) reuses the count of the SAME query. An integrator whose filter
 * value changes with every request (`partCost > x`, `invoiceTotal >= y` for each new x and y) got
 * nothing from it: every request paid a count, a scan of the table or of a covering index (on the
 * demo data, 100,000 parts: 0.45 ms of a 1.3 ms request; decision 0290). When the
 * filter is one comparison, or a range of comparisons, on ONE column whose values the driver hands
 * back as exact numbers, the count is the number of sorted values on the right side of the bounds.
 *
 * Exact, never stale: values are read in a snapshot and used only by a snapshot with the same
 * change token (SnapshotReader.changeToken), as the count cache and the match index are; NULLs are
 * not stored (a comparison with NULL is not true, in SQL as here); a column with one value that is
 * not a finite number (a safe integer when it is an integer) is never indexed. Which field kinds a
 * driver returns as numbers that compare as the database compares them is the dialect's to say
 * (QueryDialect.exactNumberKinds): on SQLite integers and decimals (scaled integers), elsewhere
 * integers only (PostgreSQL's NUMERIC arrives as text and is never indexed).
 *
 * Built only when it pays: per column and change token the time spent on count statements this
 * index could have answered is summed, and the values are read once that time reaches what the
 * last read of that column took (at first, INITIAL_COUNTS counts). A database whose data changes
 * between most reads (a new token each time) therefore keeps its count statements and pays at most
 * as much again for reads of values; stable data pays one read, then nothing. Bounded: columns of
 * at most MAX_ROWS values (a larger one is left to count statements), at most MAX_COLUMNS columns
 * per database (the oldest dropped).
 */
import type { Knex } from 'knex';
import type { QueryDialect, SnapshotReader } from '../../storage/dialect';
import type { FieldDef } from '../../catalog/types';
import { BASE, col } from './sql';
import type { CompareOp, Condition, QueryPlan } from './types';

/** Columns with more non-null values than this are not indexed (about 2 MB of numbers a column). */
export const COUNT_INDEX_MAX_ROWS = 250_000;
/** Columns indexed at once per database (knex instance). */
const MAX_COLUMNS = 16;
/** Count statements a column's index could have answered under one token before the first read of its values. */
const INITIAL_COUNTS = 8;

/** One bound of a count: `column op value`, the value encoded for the driver (a number). */
interface Bound {
  op: CompareOp;
  value: number;
}

/** The column and bounds of a plan whose count this index can answer; undefined when it cannot. */
export interface IndexableCount {
  table: string;
  field: FieldDef;
  bounds: Bound[];
}

interface Entry {
  /** Token of `values`, or of `spentMs`. */
  token: string;
  /** Sorted non-null values (a read under `token`). */
  values?: Float64Array;
  /** Milliseconds of count statements under `token` this index could have answered. */
  spentMs: number;
  counts: number;
  /** How long the last read of the values took (the price of the next one). */
  lastReadMs?: number;
  /** Not indexable: more than COUNT_INDEX_MAX_ROWS values, or a value that is not an exact number. */
  refused?: 'too large' | 'not numbers';
}

const indexes = new WeakMap<Knex, Map<string, Entry>>();

function compares(cond: Condition): Array<Extract<Condition, { kind: 'compare' }>> | undefined {
  if (cond.kind === 'compare') return [cond];
  if (cond.kind !== 'and' || cond.items.length === 0) return undefined;
  const out: Array<Extract<Condition, { kind: 'compare' }>> = [];
  for (const item of cond.items) {
    if (item.kind !== 'compare') return undefined;
    out.push(item);
  }
  return out;
}

/**
 * The plan's filter as bounds on one number column: a comparison, or an AND of comparisons on the
 * same column, whose values encode to numbers (the dialect's exact kinds). Anything else: undefined.
 */
export function indexableCount(qd: QueryDialect, plan: QueryPlan): IndexableCount | undefined {
  if (!plan.where) return undefined;
  const list = compares(plan.where);
  if (!list) return undefined;
  const field = list[0]!.field;
  if (!qd.exactNumberKinds.has(field.kind)) return undefined;
  const bounds: Bound[] = [];
  for (const c of list) {
    if (c.field.column !== field.column) return undefined;
    const value = qd.encodeValue(field.kind, c.value.value, field.scale);
    if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
    bounds.push({ op: c.op, value });
  }
  return { table: plan.entity.table, field, bounds };
}

/** First position whose value is >= v (strict: > v). */
function position(values: Float64Array, v: number, strict: boolean): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strict ? values[mid]! <= v : values[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Rows of sorted `values` satisfying every bound. */
export function countWithin(values: Float64Array, bounds: readonly Bound[]): number {
  // The rows form a range [from, to) for every operator but <>; <> removes the equal ones from it.
  let from = 0;
  let to = values.length;
  const excluded: number[] = [];
  for (const { op, value } of bounds) {
    switch (op) {
      case '>':
        from = Math.max(from, position(values, value, true));
        break;
      case '>=':
        from = Math.max(from, position(values, value, false));
        break;
      case '<':
        to = Math.min(to, position(values, value, false));
        break;
      case '<=':
        to = Math.min(to, position(values, value, true));
        break;
      case '=':
        from = Math.max(from, position(values, value, false));
        to = Math.min(to, position(values, value, true));
        break;
      case '<>':
        excluded.push(value);
        break;
    }
  }
  if (to <= from) return 0;
  let n = to - from;
  for (const value of new Set(excluded)) {
    const a = Math.max(from, position(values, value, false));
    const b = Math.min(to, position(values, value, true));
    if (b > a) n -= b - a;
  }
  return n;
}

function entryKey(c: IndexableCount): string {
  return `${c.table}\u0000${c.field.column}`;
}

/** Whether the column's values are held under some token (the next read may count from them). */
export function holdsValues(knex: Knex, c: IndexableCount): boolean {
  return indexes.get(knex)?.get(entryKey(c))?.values !== undefined;
}

/** The count from the column's index, when it holds the values of this token; else undefined. */
export function indexedCount(knex: Knex, c: IndexableCount, token: string | undefined): number | undefined {
  if (token === undefined) return undefined;
  const entry = indexes.get(knex)?.get(entryKey(c));
  if (!entry?.values || entry.token !== token) return undefined;
  return countWithin(entry.values, c.bounds);
}

/**
 * After a count statement this index could have answered (it took `ms`): whether the column's
 * values should be read now (the time spent under this token has reached the price of a read).
 */
export function countSpent(knex: Knex, c: IndexableCount, token: string | undefined, ms: number): boolean {
  if (token === undefined) return false;
  let byColumn = indexes.get(knex);
  if (!byColumn) {
    byColumn = new Map();
    indexes.set(knex, byColumn);
  }
  const key = entryKey(c);
  let entry = byColumn.get(key);
  if (!entry) {
    if (byColumn.size >= MAX_COLUMNS) byColumn.delete(byColumn.keys().next().value!);
    entry = { token, spentMs: 0, counts: 0 };
    byColumn.set(key, entry);
  }
  if (entry.refused) return false;
  if (entry.token !== token) {
    entry.token = token;
    entry.values = undefined;
    entry.spentMs = 0;
    entry.counts = 0;
  }
  entry.spentMs += ms;
  entry.counts += 1;
  return entry.lastReadMs === undefined ? entry.counts >= INITIAL_COUNTS : entry.spentMs >= entry.lastReadMs;
}

/**
 * Reads the column's non-null values in the reader's snapshot (whose token is `token`) and keeps
 * them sorted, or marks the column as not indexable. At most COUNT_INDEX_MAX_ROWS + 1 rows are read.
 */
export async function readColumnValues(knex: Knex, reader: SnapshotReader, c: IndexableCount, token: string): Promise<void> {
  const entry = indexes.get(knex)?.get(entryKey(c));
  if (!entry || entry.token !== token) return;
  const started = performance.now();
  const column = col(BASE, c.field.column);
  // The values alone (no row object each: 100,000 parts' row objects were 24 MB of transient heap).
  const read = await reader.column(
    reader
      .db({ [BASE]: c.table })
      .select({ v: column })
      .whereNotNull(column)
      .limit(COUNT_INDEX_MAX_ROWS + 1),
  );
  entry.lastReadMs = performance.now() - started;
  if (read.length > COUNT_INDEX_MAX_ROWS) {
    entry.refused = 'too large';
    return;
  }
  const values = new Float64Array(read.length);
  for (let i = 0; i < read.length; i += 1) {
    const v = read[i];
    if (typeof v !== 'number' || !Number.isFinite(v) || (Number.isInteger(v) && !Number.isSafeInteger(v))) {
      entry.refused = 'not numbers';
      return;
    }
    values[i] = v;
  }
  entry.values = values.sort();
  entry.spentMs = 0;
}
