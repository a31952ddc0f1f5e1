import type { Knex } from 'knex';
import type { WriteResult } from '../read-back';
import { readJobCostsOf } from './job-costs';
import { readPostedLedgerTransaction } from './journal';
import { readStockMovementsOf } from './stock';

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
  trx: Knex.Transaction,
  sourceNumber: number,
  document: D,
  options: { inventory?: boolean } = {},
): Promise<WriteResult<D>> {
  const result: WriteResult<D> = {
    document,
    jobCosts: await readJobCostsOf(trx, sourceNumber, document.recordNumber),
    inventory: options.inventory === false ? [] : await readStockMovementsOf(trx, sourceNumber, document.recordNumber),
    period: document.period,
    year: document.year,
  };
  if (document.ledgerRecordNumber !== null) {
    const journal = await trx('lgrtrn').where({ recnum: document.ledgerRecordNumber }).first('_idnum');
    if (journal) result.ledgerTransaction = await readPostedLedgerTransaction(trx, String(journal._idnum));
  }
  return result;
}
