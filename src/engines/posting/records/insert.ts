import type { Knex } from 'knex';
import { rowsPerInsert } from '../../../storage/parameter-budget';
import { CATALOG } from '../../../../generated/catalog';
import { engineOf, queryDialectFor } from '../../../storage/dialect';
import { Pending, type StatementBatch } from '../../../storage/statement-batch';
import { compiledInsert } from '../../../storage/compiled-statements';
import { installedSchemaOf } from '../../../storage/installed-schema';
import { columnsUnavailable, installedView } from '../../../catalog/installed';
import { childSubject, entitySubject, recordDecoder, type PublishedRecord, type RecordSubject, type Row } from '../../query/envelope';
import type { StorageRow } from './rows';
import type { FieldDef } from '../../../catalog/types';
import { shapeOf } from './shapes';

/**
 * Inserts of posted records (rows built from published names by rows.ts), in chunks under every
 * engine's parameter limit: plain, or returning what was stored, decoded as a read of the entity
 * (engines/query/read-records.ts) would decode it.
 */

/** Rows per insert statement under every engine's parameter limit (the one budget: storage/parameter-budget.ts). */
function rowsPerStatement(rows: ReadonlyArray<StorageRow>): number {
  return rowsPerInsert(rows.length === 0 ? 1 : Object.keys(rows[0]!).length);
}

/** The entity as the installed build of the database `db` talks to has it. */
function entityOf(entityName: string, db: Knex | Knex.Transaction) {
  const entity = CATALOG[entityName];
  if (!entity) throw new Error(`read-back: no entity ${entityName} in the catalog`);
  return installedView(entity, installedSchemaOf(db as Knex));
}

/** Inserts `rows` (built by rows.ts) into the table of `set` (`entity` or `entity.collection`), sent at once (not queued), in chunks. */
export async function insertRecords(trx: Knex.Transaction, set: string, rows: ReadonlyArray<StorageRow>): Promise<void> {
  if (rows.length === 0) return;
  const { table } = shapeOf(set);
  const size = rowsPerStatement(rows);
  for (let i = 0; i < rows.length; i += size) {
    const chunk = rows.slice(i, i + size);
    // Compiled once per table, columns and row count (storage/compiled-statements.ts).
    await compiledInsert(`insert into ${table}`, chunk, () => trx(table).insert(chunk));
  }
}

/**
 * Inserts `rows` into `table` and returns what was stored, columns `columns`, in the order of
 * `rows`: the insert's RETURNING clause (SQL Server: OUTPUT INSERTED into a temporary table,
 * which knex writes when asked to include trigger modifications: every table there has an
 * upddte trigger, and a plain OUTPUT is refused on a table with triggers).
 */
function insertReturningRows(batch: StatementBatch, table: string, keyColumn: string, plan: ReturningPlan, rows: ReadonlyArray<StorageRow>): Pending<Row[]> {
  const { columns, shape } = plan;
  const size = rowsPerStatement(rows);
  const chunks: Array<Pending<Row[]>> = [];
  for (let i = 0; i < rows.length; i += size) {
    const chunk = rows.slice(i, i + size);
    // Compiled once per shape (storage/compiled-statements.ts): the table, the columns returned, the rows' columns and count.
    const query = compiledInsert(shape, chunk, () =>
      batch.trx(table).insert(chunk).returning([...columns], { includeTriggerModifications: true }),
    );
    chunks.push(batch.add({ query, returning: columns }) as Pending<Row[]>);
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
 * rows.ts, each with its key) and returns them as readRecordsById would read them right after,
 * without the SELECT. Provably the same: the insert returns the very columns the read selects
 * (every field of the catalog, no `select`), as the engine stored them (defaults and type
 * conversion applied; no trigger changes an inserted row), and they are decoded by the same
 * recordDecoder; nothing runs between the insert and where the read stood. One round trip per
 * insert instead of two (PostgreSQL pays a round trip per statement). The insert is queued in the
 * posting's statement batch (storage/statement-batch.ts): awaiting the result sends it, after
 * every write queued before it.
 */
export function insertRecordsReturning(batch: StatementBatch, entityName: string, rows: ReadonlyArray<StorageRow>): Pending<PublishedRecord[]> {
  const entity = entityOf(entityName, batch.trx);
  const plan = returningPlan(entity, entity.table, batch.trx, entity.keyColumn, () => {
    const fields = Object.values(entity.fields);
    return { fields, columns: [...new Set([...fields.map((f) => f.column), entity.keyColumn])], subject: entitySubject(entity) };
  });
  return insertReturningRows(batch, entity.table, entity.keyColumn, plan, rows).map((stored) => stored.map(plan.decode));
}

interface ReturningPlan {
  columns: readonly string[];
  decode: (row: Row) => PublishedRecord;
  /** The insert's shape for storage/compiled-statements.ts: the table and what it returns. */
  shape: string;
}

/**
 * The RETURNING columns and the decoder of a set's records, per engine and key column, built once per set as the
 * installed build has it (`owner`: the entity or child definition in use, a new object whenever
 * the installed schema changes it): a posting rebuilt both for every insert.
 */
const returningPlans = new WeakMap<object, Map<string, ReturningPlan>>();

function returningPlan(
  owner: object,
  table: string,
  db: Knex | Knex.Transaction,
  keyColumn: string,
  build: () => { fields: FieldDef[]; columns: string[]; subject: RecordSubject },
): ReturningPlan {
  const engine = engineOf(db as unknown as Knex);
  let byEngine = returningPlans.get(owner);
  if (!byEngine) returningPlans.set(owner, (byEngine = new Map()));
  const key = `${engine}\u0000${keyColumn}`;
  let plan = byEngine.get(key);
  if (!plan) {
    const { fields, columns, subject } = build();
    plan = { columns, decode: recordDecoder(queryDialectFor(engine), fields, subject), shape: `insert into ${table} returning ${columns.join(',')} with trigger modifications` };
    byEngine.set(key, plan);
  }
  return plan;
}

/**
 * The lines of ONE parent record, inserted and returned as attachChildren reads them (every field
 * of the collection, in the order column's order): the same argument as insertRecordsReturning.
 * `keyColumn` is the child table's own key (`_idnum`), present in every row.
 */
export function insertChildrenReturning(batch: StatementBatch, entityName: string, collection: string, rows: ReadonlyArray<StorageRow>, keyColumn = '_idnum'): Pending<PublishedRecord[]> {
  const entity = entityOf(entityName, batch.trx);
  const child = Object.hasOwn(entity.children, collection) ? entity.children[collection] : undefined;
  if (!child && entity.unavailable?.includes(collection)) throw columnsUnavailable([`${entityName}.${collection}`], 'this posting');
  if (!child) throw new Error(`read-back: ${entityName} has no child collection ${collection}`);
  const plan = returningPlan(child, child.table, batch.trx, keyColumn, () => {
    const fields = Object.values(child.fields);
    const columns = [...new Set([...fields.map((f) => f.column), child.parentColumn, child.orderColumn, keyColumn])];
    return { fields, columns, subject: { ...childSubject(entityName, child), keyColumn } };
  });
  // The read orders by (parent, order column); one parent here. Stable: ties keep insert order.
  const order = (row: Row) => row[child.orderColumn] as number | string;
  return insertReturningRows(batch, child.table, keyColumn, plan, rows).map((stored) => sortedByOrder(stored, order).map(plan.decode));
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
