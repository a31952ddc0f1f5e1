/**
 * The read pipeline: validated body -> plan -> SQL -> envelope. Count, page and children are
 * read in ONE snapshot (QueryDialect.readSnapshot), so totalCount and data always agree (a
 * reused count is one computed in a snapshot with the same change token: count-cache.ts).
 */
import type { Knex } from 'knex';
import type { PageRead, QueryDialect } from '../../storage/dialect';
import { attachChildren } from './children';
import { entitySubject, isUnnamedUnreadable, readEnvelope, recordDecoder, type PublishedRecord, type ReadEnvelope, type Row } from './envelope';
import { countQuery, pageQuery } from './sql';
import { cachedCount, countKey, holdsCount, rememberCount } from './count-cache';
import { countSpent, holdsValues, indexableCount, indexedCount, readColumnValues, type IndexableCount } from './count-index';
import type { QueryPlan } from './types';

/** Where the totalCounts of a database's reads came from (the `query_counts_total` metric). */
export interface CountSources {
  /** The same query's count, reused (count-cache.ts). */
  cache: number;
  /** The column's sorted values (count-index.ts). */
  index: number;
  /** A count statement. */
  database: number;
}

const sources = new WeakMap<Knex, CountSources>();

export function countSourcesOf(knex: Knex): CountSources {
  let s = sources.get(knex);
  if (!s) {
    s = { cache: 0, index: 0, database: 0 };
    sources.set(knex, s);
  }
  return s;
}

export async function executePlan(knex: Knex, qd: QueryDialect, plan: QueryPlan): Promise<ReadEnvelope> {
  // The envelope's asOf: the clock before the snapshot is taken (readEnvelope says why).
  const asOf = new Date();
  if (qd.readPageAtOnce && plan.children.length === 0) return executeAtOnce(knex, qd, plan, asOf);
  return executeInSnapshot(knex, qd, plan, asOf);
}

/** Count, page and children read in one snapshot (QueryDialect.readSnapshot), statement by statement. */
async function executeInSnapshot(knex: Knex, qd: QueryDialect, plan: QueryPlan, asOf: Date): Promise<ReadEnvelope> {
  const decode = recordDecoder(qd, plan.fields, entitySubject(plan.entity));
  const counted = countSourcesOf(knex);
  return qd.readSnapshot(knex, async (reader) => {
    const count = countQuery(reader.db, qd, plan);
    const token = await reader.changeToken();
    const key = token === undefined ? undefined : countKey(count);
    const indexable = token === undefined ? undefined : indexableCount(qd, plan);
    let totalCount = cachedCount(knex, key, token);
    if (totalCount !== undefined) counted.cache += 1;
    else if (indexable && (totalCount = indexedCount(knex, indexable, token)) !== undefined) counted.index += 1;
    if (totalCount === undefined) {
      const started = performance.now();
      const countRows = await reader.all(count);
      totalCount = Number(countRows[0]?.n ?? 0);
      counted.database += 1;
      rememberCount(knex, key, token, totalCount);
      // The count statement this column's index would have spared: read its values once that pays.
      if (indexable && countSpent(knex, indexable, token, performance.now() - started)) await readColumnValues(knex, reader, indexable, token!);
    }
    // Past the last row there is nothing to read.
    const rows: Row[] = plan.offset < totalCount ? await reader.all(pageQuery(reader.db, qd, plan)) : [];
    const records = await decodePage(rows, decode, async () => {
      // The page did not select its key: read it again with the key (the same snapshot, the same rows).
      return { rows: await reader.all(pageQuery(reader.db, qd, plan, { withKey: true })), decode };
    });
    const keys = plan.children.length > 0 ? rows.map((r) => r[plan.entity.keyColumn]) : [];
    // The driver rows are garbage from here: not kept alive while the children are read.
    rows.length = 0;
    if (plan.children.length > 0) await attachChildren(reader, qd, plan.entity.entity, plan.children, keys, records);
    return readEnvelope(asOf, plan.pageNumber, plan.pageSize, totalCount, records);
  });
}

/**
 * A read without children where the dialect reads the token, the count and the page in one
 * statement (QueryDialect.readPageAtOnce: one snapshot, one round trip). When this process holds
 * a count that may still be good (the same query's, or the column's values), the token and the page
 * come first and the count only if the token moved; otherwise all three at once.
 *
 * An empty page answers no row, so no token and no count: on the first page that means nothing
 * matches (totalCount 0, in that very snapshot); past the first page the total is unknown, and the
 * read is done again in a snapshot transaction (a page past the end: rare, and never wrong).
 */
async function executeAtOnce(knex: Knex, qd: QueryDialect, plan: QueryPlan, asOf: Date): Promise<ReadEnvelope> {
  const readPageAtOnce = qd.readPageAtOnce!.bind(qd);
  const counted = countSourcesOf(knex);
  const count = countQuery(knex, qd, plan);
  const key = countKey(count);
  const indexable = indexableCount(qd, plan);
  const page = pageQuery(knex, qd, plan);
  let read: PageRead | undefined;
  let totalCount: number | undefined;
  if (holdsCount(knex, key) || (indexable && holdsValues(knex, indexable))) {
    read = await readPageAtOnce(knex, { page });
    if (read.rows.length === 0) return emptyPage(knex, qd, plan, asOf);
    totalCount = cachedCount(knex, key, read.token);
    if (totalCount !== undefined) counted.cache += 1;
    else if (indexable && (totalCount = indexedCount(knex, indexable, read.token)) !== undefined) counted.index += 1;
  }
  if (totalCount === undefined) {
    const started = performance.now();
    read = await readPageAtOnce(knex, { page, count });
    if (read.rows.length === 0) return emptyPage(knex, qd, plan, asOf);
    totalCount = read.count ?? 0;
    counted.database += 1;
    rememberCount(knex, key, read.token, totalCount);
    if (indexable && countSpent(knex, indexable, read.token, performance.now() - started)) await readValuesAt(knex, qd, indexable, read.token!);
  }
  try {
    return readEnvelope(asOf, plan.pageNumber, plan.pageSize, totalCount, read!.rows.map(recordDecoder(qd, plan.fields, entitySubject(plan.entity))));
  } catch (err) {
    // A value that cannot be read, on a page that did not select its key: the read in a snapshot
    // selects it and throws the problem naming the record (decodePage); only a failing read pays.
    if (!isUnnamedUnreadable(err)) throw err;
    await executeInSnapshot(knex, qd, plan, asOf);
    throw err;
  }
}

/**
 * The page's records. A stored value that cannot be read is named by its record's key: when the
 * page did not select the key, `withKey` reads the page again with it and decodes that (which
 * throws the named problem), so that only a failing read pays for the key.
 */
async function decodePage(rows: Row[], decode: (row: Row) => PublishedRecord, withKey: () => Promise<{ rows: Row[]; decode: (row: Row) => PublishedRecord }>): Promise<PublishedRecord[]> {
  try {
    return rows.map(decode);
  } catch (err) {
    if (!isUnnamedUnreadable(err)) throw err;
    const again = await withKey();
    again.rows.forEach(again.decode);
    throw err;
  }
}

/** An empty page read at once: the first page is empty only when nothing matches; past it, read again in a snapshot. */
function emptyPage(knex: Knex, qd: QueryDialect, plan: QueryPlan, asOf: Date): Promise<ReadEnvelope> | ReadEnvelope {
  // Read again in a later snapshot, under the first clock: earlier than needed is harmless for a watermark.
  if (plan.offset > 0) return executeInSnapshot(knex, qd, plan, asOf);
  countSourcesOf(knex).database += 1;
  return readEnvelope(asOf, plan.pageNumber, plan.pageSize, 0, []);
}

/** The column's values for the count index, in a snapshot of the same token (else not now). */
async function readValuesAt(knex: Knex, qd: QueryDialect, c: IndexableCount, token: string): Promise<void> {
  await qd.readSnapshot(knex, async (reader) => {
    if ((await reader.changeToken()) === token) await readColumnValues(knex, reader, c, token);
  });
}
