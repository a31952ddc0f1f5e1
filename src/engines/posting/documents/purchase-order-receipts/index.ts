import type { NumberAllocator } from '../../../../storage/numbers';
import { storableDateAfter } from '../../limits';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { allocateRecordNumbers, rangeValues, recordLockName } from '../../records';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { postReceipt } from './cascade';
import { prepareReceipt, type ReceiptInput } from './input';
import { readReceipt, type ReceiptWriteResult } from './read-back';
import { readOrder, resolveInvoice } from './references';

/**
 * POST /purchase-order-receipts (source 13, domain notes "How it posts": PO receipt). One
 * transaction, under a lock on the order number:
 *
 *   order      each line's updateQuantity is added to its received-to-date quantity (receivedToDate),
 *              the received value to the order's received total (receivedTotal); an Open order
 *              becomes Received (3); with the automatic close of its type (autoClose) it becomes
 *              Closed (4) once received + cancelled reaches ordered on every line. More than the
 *              open quantity is received too; each result line reports its excess (overReceived)
 *   invoice    a payable invoice in status 2 (Review) for the received value, orderNumber set to the
 *              order and one line per received line (lineNumber = the PO line, quantity = the
 *              quantity received): these lines ARE the record of the receipt (received to date =
 *              their sum)
 *   journal    source 13: each line's amount debited to the PO line's account (inventory location
 *              account for stock, direct expense / WIP for job lines), AP control credited. The
 *              invoice stays in Review (for approval before payment) yet its journal is posted, as
 *              the accounting system does for receipts (docs/decisions/0018-purchase-order-receipts.md)
 *   job costs  one per job line (the order has a job and the line is not received into stock)
 *   stock      inventory lines (a part, and the order has an inventory location) go into stock
 *              there, and no longer count as on order at that location
 *
 * Nothing refuses an identical second receipt (spec, Writes): the required Idempotency-Key is the
 * protection against doubles, so neither an over-receipt nor an order that is already Closed (the
 * first receipt may have closed it) refuses one; a Closed order stays Closed
 * (docs/decisions/0220-po-receipts-over-receipt.md). Void and Master orders receive nothing.
 *
 *   input.ts       the body (400 before dispatch)
 *   references.ts  the order and its lines, each line's cost and destination, the payable invoice by the AP rules
 *   cascade.ts     the order's quantities and status, the invoice, stock in, journal, job costs
 *   read-back.ts   the order and the invoice as the query engine reads them; the receipt's lines
 */


interface Numbers {
  invoiceRecord: number;
  ledgerRecord: number;
  /** One per line at most (only job lines use theirs). */
  jobCostRecords: number[];
}

/** The name `post` locks first (taken by the transaction's BEGIN where it can: runner.ts firstLock). */
const lockOf = (input: ReceiptInput): string => recordLockName('purchase-orders', [input.orderNumber]);

export const purchaseOrderReceiptsWrite: WriteDefinition<ReceiptInput, Numbers, ReceiptWriteResult> = {
  route: '/purchase-order-receipts',
  what: 'receiving a purchase order',
  requireKey: true,
  prepare: prepareReceipt,
  firstLock: lockOf,

  async allocate(input, numbers: NumberAllocator): Promise<Numbers> {
    // Which lines are job lines is known only from the order: reserve one job cost number per
    // line (unused ones are gaps, which numbers are allowed to have: spec, Writes rule 7).
    const got = await allocateRecordNumbers(numbers, { 'ap-invoices': 1, 'ledger-transactions': 1, 'job-costs': input.lines.length });
    return {
      invoiceRecord: got['ap-invoices'].first,
      ledgerRecord: got['ledger-transactions'].first,
      jobCostRecords: rangeValues(got['job-costs']),
    };
  },

  async post(ctx, input, numbers): Promise<PostOutcome<ReceiptWriteResult>> {
    const { trx } = ctx;
    // Receipts of one order are serialised: the close and the excess reported see every earlier receipt.
    await ctx.lockName(lockOf(input));
    const received = await readOrder(ctx, input, numbers.invoiceRecord);

    const periodRequest = { date: input.receiptDate, dateField: 'receiptDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const { lines, vendor } = await resolveInvoice(ctx, received.invoice, setup);
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);

    const dueDate = storableDateAfter('receiptDate', "the payable invoice's due date (receiptDate + the vendor's terms days)", input.receiptDate, vendor.termsDays ?? 30, 'ap-invoices', 'dueDate');
    const { payableInvoice, result } = await postReceipt(ctx, input, received, { lines }, setup, { ...numbers, dueDate, period, year });
    const document = await readReceipt(trx, received.order.id, received.status, received.received, payableInvoice);
    return { result: { document, ...result } };
  },
};
