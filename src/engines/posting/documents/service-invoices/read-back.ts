import type { Knex } from 'knex';
import type { components } from '../../../../../generated/api-types';
import type { PostedLedgerTransaction } from '../../ledger/journal';
import type { PostedJobCost } from '../../ledger/job-costs';
import type { PostedInventoryHistory } from '../../ledger/stock';
import { readRecord, type FullRecordWithLines } from '../../records';

/** POST /service-invoices/post, the result: the invoiced work order as the query engine reads it (through the catalog). */

/** A service invoice as POST /service-invoices/query returns it with its `lines` (the contract's ServiceInvoice). */
export type PostedServiceInvoice = FullRecordWithLines<components['schemas']['ServiceInvoice'], components['schemas']['ServiceInvoiceLine']>;

export interface ServiceInvoicePostResult {
  document: PostedServiceInvoice;
  ledgerTransaction: PostedLedgerTransaction;
  jobCosts: PostedJobCost[];
  inventory: PostedInventoryHistory[];
  period: number;
  year: number;
}

/** The work order as the service-invoices query returns it, with its lines (engines/query/read-records.ts). */
export async function readServiceInvoice(db: Knex | Knex.Transaction, id: string): Promise<PostedServiceInvoice> {
  return (await readRecord(db, 'service-invoices', id, { children: ['lines'] })) as unknown as PostedServiceInvoice;
}
