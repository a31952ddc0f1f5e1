import type { Knex } from 'knex';
import { CATALOG } from '../../../generated/catalog';
import { engineOf, queryDialectFor } from '../../storage/dialect';
import { Pending, type StatementBatch } from '../../storage/statement-batch';
import { installedSchemaOf } from '../../storage/installed-schema';
import { columnsUnavailable, installedView } from '../../catalog/installed';
import { recordDecoder, type PublishedRecord, type Row } from '../query/envelope';
import type { PostedJobCost } from './ledger/job-costs';
import type { PostedLedgerTransaction } from './ledger/journal';
import type { PostedInventoryHistory } from './ledger/stock';

/**
 * Read-back of posted documents through the catalog: the reads are the query engine's
 * (engines/query/read-records.ts, shared with the event detector); here, the inserts that return
 * what they stored, decoded as those reads decode it.
 */

export { readRecord, readAllRecords, readRecordsById, type ReadBackOptions, type ReadManyOptions } from '../query/read-records';

/** The entity as the installed build of the database `db` talks to has it. */
function entityOf(entityName: string, db: Knex | Knex.Transaction) {
  const entity = CATALOG[entityName];
  if (!entity) throw new Error(`read-back: no entity ${entityName} in the catalog`);
  return installedView(entity, installedSchemaOf(db as Knex));
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
