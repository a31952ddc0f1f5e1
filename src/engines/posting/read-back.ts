import type { Knex } from 'knex';
import { CATALOG } from '../../../generated/catalog';
import { engineOf, queryDialectFor, type SnapshotReader } from '../../storage/dialect';
import { attachChildren } from '../query/children';
import { recordDecoder, type PublishedRecord, type Row } from '../query/envelope';
import { planQuery } from '../query/plan';
import { pageQuery } from '../query/sql';
import type { FilterNode } from '../query/types';

/**
 * Read-back of posted documents through the catalog (generated/catalog.ts: x-table, x-column,
 * x-scale): the same plan, SQL and decoding as POST /{entity}/query, run inside the posting
 * transaction. A write result's `document` and `ledgerTransaction` are therefore field for field
 * what a query returns for the same id; no engine keeps a column list of its own.
 */

export interface ReadBackOptions {
  /** Child collections to attach (e.g. ['lines']). */
  children?: string[];
}

/** Filters deeper than this are never built here (the read-back filters are one or two leaves). */
const READ_BACK_FILTER_DEPTH = 8;

function entityOf(entityName: string) {
  const entity = CATALOG[entityName];
  if (!entity) throw new Error(`read-back: no entity ${entityName} in the catalog`);
  return entity;
}

/** Reads inside the posting transaction (its uncommitted rows are what is read back). */
function transactionReader(trx: Knex | Knex.Transaction): SnapshotReader {
  return { db: trx as Knex, all: async (query) => (await query) as Row[], changeToken: async () => undefined };
}

/** The records matching `filters` (by key order), at most `limit`. */
export async function readRecords(trx: Knex | Knex.Transaction, entityName: string, filters: FilterNode, options: ReadBackOptions & { limit?: number } = {}): Promise<PublishedRecord[]> {
  const entity = entityOf(entityName);
  const qd = queryDialectFor(engineOf(trx as Knex));
  const plan = planQuery(
    entity,
    { filters, ...(options.children ? { children: options.children } : {}), page: { pageNumber: 1, pageSize: options.limit ?? 1 } },
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

/** One record by its `id` (the entity's key), with the children asked for; undefined when absent. */
export async function readRecord(trx: Knex | Knex.Transaction, entityName: string, id: string, options: ReadBackOptions = {}): Promise<PublishedRecord | undefined> {
  const [record] = await readRecords(trx, entityName, { match: { field: 'id', operator: '=', value: id } }, options);
  return record;
}
