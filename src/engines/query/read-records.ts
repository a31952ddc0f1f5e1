import type { Knex } from 'knex';
import { CATALOG } from '../../../generated/catalog';
import { engineOf, queryDialectFor, type SnapshotReader } from '../../storage/dialect';
import { installedSchemaOf } from '../../storage/installed-schema';
import { installedView } from '../../catalog/installed';
import { attachChildren } from './children';
import { entitySubject, recordDecoder, type DecoderOptions, type PublishedRecord, type Row } from './envelope';
import { planQuery } from './plan';
import { pageQuery } from './sql';
import type { FilterNode } from './types';

/**
 * Records read through the catalog on a connection or transaction the caller holds: the same plan,
 * SQL and decoding as POST /{entity}/query (plan.ts, sql.ts, envelope.ts), without the endpoint's
 * budget, snapshot or paging envelope. A write reads back what it has just written inside its
 * posting transaction (its uncommitted rows are what is read); the event detector reads the
 * records a change window names. A record read here is therefore field for field what a query
 * returns for the same id; no caller keeps a column list of its own. On an older build of the
 * accounting database the entity is read as that build has it (src/catalog/installed.ts): a field
 * whose column is missing is absent, as in a query; one the read filters or orders on is 422.
 */

export interface ReadBackOptions extends DecoderOptions {
  /** Child collections to attach (e.g. ['lines']). */
  children?: string[];
}

export interface ReadManyOptions extends ReadBackOptions {
  /** Published field names, "field ASC|DESC", as in a query's orderBy (the key breaks ties). */
  orderBy?: string[];
}

/** Page size of a read (the query engine's maximum): more records are read page by page. */
const READ_BACK_PAGE_SIZE = 1000;
/** Ids per IN list when reading records by id (under every engine's parameter limit). */
const IDS_PER_READ = 500;

/** Filters deeper than this are never built here (these filters are one or two leaves). */
const READ_BACK_FILTER_DEPTH = 8;

/** The entity as the installed build of the database `db` talks to has it. */
function entityOf(entityName: string, db: Knex | Knex.Transaction) {
  const entity = CATALOG[entityName];
  if (!entity) throw new Error(`read-back: no entity ${entityName} in the catalog`);
  return installedView(entity, installedSchemaOf(db as Knex));
}

/** Reads on the caller's connection or transaction (inside a transaction, its uncommitted rows are read). */
function transactionReader(trx: Knex | Knex.Transaction): SnapshotReader {
  return { db: trx as Knex, all: async (query) => (await query) as Row[], column: async (query) => ((await query) as Row[]).map((row) => Object.values(row)[0]), changeToken: async () => undefined };
}

/** One page of the records matching `filters`, in `orderBy` order (then key order). */
async function readPage(trx: Knex | Knex.Transaction, entityName: string, filters: FilterNode, options: ReadManyOptions, pageNumber: number, pageSize: number): Promise<PublishedRecord[]> {
  const entity = entityOf(entityName, trx);
  const qd = queryDialectFor(engineOf(trx as Knex));
  const plan = planQuery(
    entity,
    {
      filters,
      ...(options.children ? { children: options.children } : {}),
      ...(options.orderBy ? { orderBy: options.orderBy } : {}),
      page: { pageNumber, pageSize },
    },
    { maxFilterDepth: READ_BACK_FILTER_DEPTH },
  );
  const reader = transactionReader(trx);
  const rows = await reader.all(pageQuery(trx as Knex, qd, plan));
  const records = rows.map(recordDecoder(qd, plan.fields, entitySubject(entity), options));
  if (plan.children.length > 0) {
    await attachChildren(reader, qd, entity.entity, plan.children, rows.map((r) => r[entity.keyColumn]), records);
  }
  return records;
}

/** The records matching `filters` (in `orderBy` order, then key order), at most `limit` (default 1). */
async function readRecords(trx: Knex | Knex.Transaction, entityName: string, filters: FilterNode, options: ReadManyOptions & { limit?: number } = {}): Promise<PublishedRecord[]> {
  return readPage(trx, entityName, filters, options, 1, options.limit ?? 1);
}

/** Every record matching `filters`, in `orderBy` order (then key order), read page by page. */
export async function readAllRecords(trx: Knex | Knex.Transaction, entityName: string, filters: FilterNode, options: ReadManyOptions = {}): Promise<PublishedRecord[]> {
  const out: PublishedRecord[] = [];
  for (let pageNumber = 1; ; pageNumber += 1) {
    const page = await readPage(trx, entityName, filters, options, pageNumber, READ_BACK_PAGE_SIZE);
    out.push(...page);
    if (page.length < READ_BACK_PAGE_SIZE) return out;
  }
}

/**
 * The records with these ids, in the order of `ids` (a writer reads back what it has just
 * inserted, in the order it inserted it). Every id must exist: a missing one is a bug.
 */
export async function readRecordsById(trx: Knex | Knex.Transaction, entityName: string, ids: readonly string[], options: ReadBackOptions = {}): Promise<PublishedRecord[]> {
  const byId = new Map<string, PublishedRecord>();
  for (let i = 0; i < ids.length; i += IDS_PER_READ) {
    const chunk = ids.slice(i, i + IDS_PER_READ);
    const page = await readPage(trx, entityName, { match: { field: 'id', operator: 'IN', values: chunk } }, options, 1, chunk.length);
    for (const record of page) byId.set(String(record.id).toLowerCase(), record);
  }
  return ids.map((id) => {
    const record = byId.get(id.toLowerCase());
    if (!record) throw new Error(`read-back: ${entityName} ${id} not found in its own transaction`);
    return record;
  });
}

/** One record by its `id` (the entity's key), with the children asked for; undefined when absent. */
export async function readRecord(trx: Knex | Knex.Transaction, entityName: string, id: string, options: ReadBackOptions = {}): Promise<PublishedRecord | undefined> {
  const [record] = await readRecords(trx, entityName, { match: { field: 'id', operator: '=', value: id } }, options);
  return record;
}

/** The record `id` a writer has just written or updated in this transaction, read back as readRecord reads it: a missing one is a bug. */
export async function readWrittenRecord(trx: Knex | Knex.Transaction, entityName: string, id: string, options: ReadBackOptions = {}): Promise<PublishedRecord> {
  const record = await readRecord(trx, entityName, id, options);
  if (!record) throw new Error(`read-back: ${entityName} ${id} not found in its own transaction`);
  return record;
}
