import { records, type RecordsContext } from '../records';
import { readJobCostsOf, type PostedJobCost } from './job-costs';
import { readPostedLedgerTransaction, type PostedLedgerTransaction } from './journal';
import { readStockMovementsOf, type PostedInventoryHistory } from './stock';

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

/** What a stored document says about its posting (fields of every posted document's record). */
export interface PostedDocument {
  recordNumber: number;
  ledgerRecordNumber: number | null;
  period: number;
  year: number;
}

/**
 * The write result of a document already entered (a replayed duplicate), every record read back
 * through the catalog: its job costs and stock movements (by source and its record number) and
 * the journal it points to. `inventory: false` for documents that never move stock.
 */
export async function readWriteResultOf<D extends PostedDocument>(
  ctx: RecordsContext,
  sourceNumber: number,
  document: D,
  options: { inventory?: boolean } = {},
): Promise<WriteResult<D>> {
  const { trx } = ctx;
  const result: WriteResult<D> = {
    document,
    jobCosts: await readJobCostsOf(trx, sourceNumber, document.recordNumber),
    inventory: options.inventory === false ? [] : await readStockMovementsOf(trx, sourceNumber, document.recordNumber),
    period: document.period,
    year: document.year,
  };
  if (document.ledgerRecordNumber !== null) {
    const journal = await records(ctx, 'ledger-transactions').where({ recordNumber: document.ledgerRecordNumber }).first(['id']);
    if (journal) result.ledgerTransaction = await readPostedLedgerTransaction(trx, journal.id);
  }
  return result;
}
