import { allocateLedgerRecord, type LedgerRecordNumbers } from '../../ledger/journal';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { recordLockName } from '../../records';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { postWorkOrder } from './cascade';
import { prepareServiceInvoicePost, type ServiceInvoicePostInput } from './input';
import { readServiceInvoice, type ServiceInvoicePostResult } from './read-back';
import { readWorkOrder, resolveWorkOrder } from './references';

/**
 * POST /service-invoices/post: invoices an Open service work order (domain notes, "How it posts",
 * source 22 Service Invoices). The work order (the service invoice and its lines) already exists;
 * this write turns it into a posted invoice, in one transaction:
 *
 *   journal    debit the receivable account (invoice total = lines + sales tax); credit each
 *              line's income account (taxable / non-taxable: the line's ledgerAccount, else the
 *              service type's income account, else the ledger setup's service income account) and
 *              the sales tax to the ledger setup's sales tax account; parts: debit cost of goods,
 *              credit the parts location's inventory account (else the ledger setup's)
 *   stock      every part line leaves `partsLocation` (on hand and available) at weighted-average
 *              cost, through applyStockMovements (the code inventory allocations use): history
 *              rows of source 22, 422 INSUFFICIENT_STOCK naming every short line
 *   document   ledgerRecordNumber, period and year, workStatus 5 Complete, invoice total and
 *              balance from the lines, each part line's unit cost; the status stays 1 Open (an
 *              open receivable)
 *
 * Only a work order with status 1 Open that has not posted yet (no ledgerRecordNumber) posts;
 * anything else is 422 DOCUMENT_NOT_POSTABLE naming it, its status and, when it already posted,
 * its journal. Service work orders carry no job: jobCosts is always empty.
 *
 *   input.ts       the body (400 before dispatch)
 *   references.ts  the work order, its lines and their income accounts, client, parts location, accounts
 *   cascade.ts     parts out of stock, the journal, the work order invoiced
 *   read-back.ts   the work order as the query engine reads it
 */


/** The name `post` locks first (taken by the transaction's BEGIN where it can: runner.ts firstLock). */
const lockOf = (input: ServiceInvoicePostInput): string => recordLockName('service-invoices', [input.recordNumber]);

export const serviceInvoicePostWrite: WriteDefinition<ServiceInvoicePostInput, LedgerRecordNumbers, ServiceInvoicePostResult> = {
  route: '/service-invoices/post',
  what: 'posting a service work order',
  prepare: prepareServiceInvoicePost,
  firstLock: lockOf,

  allocate: allocateLedgerRecord,

  async post(ctx, input, numbers): Promise<PostOutcome<ServiceInvoicePostResult>> {
    const { trx } = ctx;
    // One posting per work order: serialise on it, then read its state.
    await ctx.lockName(lockOf(input));
    const { header, label } = await readWorkOrder(ctx, input);

    const invoiceDate: string = input.invoiceDate ?? header.invoiceDate;
    const periodRequest = { date: invoiceDate, dateField: 'invoiceDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const order = await resolveWorkOrder(ctx, input, header, label, invoiceDate);
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);

    const { ledgerTransaction, inventory } = await postWorkOrder(ctx, input, order, { ledgerRecord: numbers.ledgerRecord, period, year });
    const document = await readServiceInvoice(trx, header.id);
    return { result: { document, ledgerTransaction, jobCosts: [], inventory, period, year } };
  },
};
