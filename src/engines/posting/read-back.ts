import type { Knex } from 'knex';
import { CATALOG } from '../../../generated/catalog';
import { engineOf, queryDialectFor, type SnapshotReader } from '../../storage/dialect';
import { Pending, type StatementBatch } from '../../storage/statement-batch';
import { installedSchemaOf } from '../../storage/installed-schema';
import { columnsUnavailable, installedView } from '../../catalog/installed';
import { attachChildren } from '../query/children';
import { recordDecoder, type PublishedRecord, type Row } from '../query/envelope';
import { planQuery } from '../query/plan';
import { pageQuery } from '../query/sql';
import type { FilterNode } from '../query/types';
import type { PostedJobCost } from './ledger/job-costs';
import type { PostedLedgerTransaction } from './ledger/journal';
import type { PostedInventoryHistory } from './ledger/stock';

/**
 * Read-back of posted documents through the catalog (generated/catalog.ts: x-table, x-column,
 * x-scale): the same plan, SQL and decoding as POST /{entity}/query, run inside the posting
 * transaction. A write result's `document` and `ledgerTransaction` are therefore field for field
 * what a query returns for the same id; no engine keeps a column list of its own. On an older
 * build of the accounting database the entity is read as that build has it (src/catalog/installed.ts):
 * a field whose column is missing is absent, as in a query; one the read filters or orders on is 422.
 */

export interface ReadBackOptions {
  /** Child collections to attach (e.g. ['lines']). */
  children?: string[];
}

export interface ReadManyOptions extends ReadBackOptions {
  /** Published field names, "field ASC|DESC", as in a query's orderBy (the key breaks ties). */
  orderBy?: string[];
}

/** Page size of a read-back (the query engine's maximum): more records are read page by page. */
const READ_BACK_PAGE_SIZE = 1000;
/** Ids per IN list when reading records back by id (under every engine's parameter limit). */
const IDS_PER_READ = 500;

/** Filters deeper than this are never built here (the read-back filters are one or two leaves). */
const READ_BACK_FILTER_DEPTH = 8;

/** The entity as the installed build of the database `db` talks to has it. */
function entityOf(entityName: string, db: Knex | Knex.Transaction) {
  const entity = CATALOG[entityName];
  if (!entity) throw new Error(`read-back: no entity ${entityName} in the catalog`);
  return installedView(entity, installedSchemaOf(db as Knex));
}

/** Reads inside the posting transaction (its uncommitted rows are what is read back). */
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
  const records = rows.map(recordDecoder(qd, plan.fields));
  if (plan.children.length > 0) {
    await attachChildren(reader, qd, plan.children, rows.map((r) => r[entity.keyColumn]), records);
  }
  return records;
}

/** The records matching `filters` (in `orderBy` order, then key order), at most `limit` (default 1). */
export async function readRecords(trx: Knex | Knex.Transaction, entityName: string, filters: FilterNode, options: ReadManyOptions & { limit?: number } = {}): Promise<PublishedRecord[]> {
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

/** Rows per insert statement under every engine's parameter limit (SQL Server: 2,100). */
function rowsPerStatement(rows: ReadonlyArray<Record<string, unknown>>): number {
  const columns = rows.length === 0 ? 1 : Object.keys(rows[0]!).length;
  return Math.max(1, Math.floor(2000 / Math.max(columns, 1)));
}

/**
 * Inserts `rows` into `table` and returns what was stored, columns `columns`, in the order of
 * `rows`: the insert's RETURNING clause (SQL Server: OUTPUT INSERTED into a temporary table,
 * which knex writes when asked to include trigger modifications: every table there has an
 * upddte trigger, and a plain OUTPUT is refused on a table with triggers).
 */
function insertReturningRows(batch: StatementBatch, table: string, keyColumn: string, columns: readonly string[], rows: ReadonlyArray<Record<string, unknown>>): Pending<Row[]> {
  const size = rowsPerStatement(rows);
  const chunks: Array<Pending<Row[]>> = [];
  for (let i = 0; i < rows.length; i += size) {
    chunks.push(
      batch.add({
        query: batch.trx(table).insert(rows.slice(i, i + size)).returning([...columns], { includeTriggerModifications: true }),
        returning: columns,
      }) as Pending<Row[]>,
    );
  }
  return Pending.all(batch, chunks).map((stored) => {
    const byKey = new Map<string, Row>();
    for (const chunk of stored) for (const row of chunk) byKey.set(String(row[keyColumn]).toLowerCase(), row);
    return rows.map((r) => {
      const row = byKey.get(String(r[keyColumn]).toLowerCase());
      if (!row) throw new Error(`read-back: ${table} ${String(r[keyColumn])} not returned by its own insert`);
      return row;
    });
  });
}

/**
 * Write and read back in ONE statement: inserts records of `entityName` (storage rows built by
 * write-rows.ts, each with its key) and returns them as readRecordsById would read them right
 * after, without the SELECT. Provably the same: the insert returns the very columns the read
 * selects (every field of the catalog, no `select`), as the engine stored them (defaults and
 * type conversion applied; no trigger changes an inserted row), and they are decoded by the same
 * recordDecoder; nothing runs between the insert and where the read stood. One round trip per
 * insert instead of two (PostgreSQL pays a round trip per statement). The insert is queued in the
 * posting's statement batch (storage/statement-batch.ts): awaiting the result sends it, after
 * every write queued before it.
 */
export function insertRecordsReturning(batch: StatementBatch, entityName: string, rows: ReadonlyArray<Record<string, unknown>>): Pending<PublishedRecord[]> {
  const entity = entityOf(entityName, batch.trx);
  const fields = Object.values(entity.fields);
  const columns = [...new Set([...fields.map((f) => f.column), entity.keyColumn])];
  const decode = recordDecoder(queryDialectFor(engineOf(batch.trx as unknown as Knex)), fields);
  return insertReturningRows(batch, entity.table, entity.keyColumn, columns, rows).map((stored) => stored.map(decode));
}

/**
 * The lines of ONE parent record, inserted and returned as attachChildren reads them (every field
 * of the collection, in the order column's order): the same argument as insertRecordsReturning.
 * `keyColumn` is the child table's own key (`_idnum`), present in every row.
 */
export function insertChildrenReturning(batch: StatementBatch, entityName: string, collection: string, rows: ReadonlyArray<Record<string, unknown>>, keyColumn = '_idnum'): Pending<PublishedRecord[]> {
  const entity = entityOf(entityName, batch.trx);
  const child = Object.hasOwn(entity.children, collection) ? entity.children[collection] : undefined;
  if (!child && entity.unavailable?.includes(collection)) throw columnsUnavailable([`${entityName}.${collection}`], 'this posting');
  if (!child) throw new Error(`read-back: ${entityName} has no child collection ${collection}`);
  const fields = Object.values(child.fields);
  const columns = [...new Set([...fields.map((f) => f.column), child.parentColumn, child.orderColumn, keyColumn])];
  const decode = recordDecoder(queryDialectFor(engineOf(batch.trx as unknown as Knex)), fields);
  // The read orders by (parent, order column); one parent here. Stable: ties keep insert order.
  const order = (row: Row) => row[child.orderColumn] as number | string;
  return insertReturningRows(batch, child.table, keyColumn, columns, rows).map((stored) => sortedByOrder(stored, order).map(decode));
}

function sortedByOrder(stored: Row[], order: (row: Row) => number | string): Row[] {
  return [...stored].sort((a, b) => {
    const x = order(a);
    const y = order(b);
    const nx = Number(x);
    const ny = Number(y);
    // Numbers (a bigint arrives as text from pg) compare as numbers, anything else as text.
    if (x !== null && y !== null && x !== '' && y !== '' && Number.isFinite(nx) && Number.isFinite(ny)) return nx - ny;
    return String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
  });
}

/**
 * The TypeScript shape of a record read back with every field (the contract's entity schema,
 * generated/api-types.ts, all fields present since no `select` is given), with its `lines`.
 */
export type FullRecord<T> = { [K in keyof T]-?: T[K] };
export type FullRecordWithLines<Header extends { lines?: unknown }, Line> = FullRecord<Omit<Header, 'lines'>> & { lines: Array<FullRecord<Line>> };

/** The result of a write: every record in it is read back through the catalog (as /query returns it). */
export interface WriteResult<Document> {
  document: Document;
  /** Absent (not null) when the document posted nothing to the ledger. */
  ledgerTransaction?: PostedLedgerTransaction;
  jobCosts: PostedJobCost[];
  inventory: PostedInventoryHistory[];
  period: number;
  year: number;
}
