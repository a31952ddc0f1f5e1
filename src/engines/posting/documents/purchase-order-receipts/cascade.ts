import { Dec } from '../../../../storage/decimal';
import type { PostingContext } from '../../context';
import { writeJournal } from '../../ledger/journal';
import { writeJobCosts } from '../../ledger/job-costs';
import type { LedgerSetup } from '../../ledger/period';
import { MOVEMENT, applyStockMovements } from '../../ledger/stock';
import { decrementToZero, increment, records } from '../../records';
import { insertInvoice, invoiceJobCosts, invoiceJournalLines, type InvoiceToWrite, type PostedApInvoice } from '../ap-invoices';
import { PO_RECEIPT_SOURCE, PO_STATUS, type ReceiptInput } from './input';
import type { ReceivedOrder } from './references';
import type { ReceiptWriteResult } from './read-back';

/**
 * POST /purchase-order-receipts, the cascade, inside the posting transaction once every check has
 * passed: the order's received quantities and status, the payable invoice (Review), stock in, the
 * journal (source 13) and the job costs.
 */

/** Where and under which numbers the receipt posts. */
export interface ReceiptPosting {
  invoiceRecord: number;
  ledgerRecord: number;
  /** One per line at most (only job lines use theirs). */
  jobCostRecords: number[];
  dueDate: string;
  period: number;
  year: number;
}

/**
 * The order: each line's received to date grows by what arrived, the order's received total by the
 * receipt's value; an Open order becomes Received, and Closed once received + cancelled reaches
 * ordered on every line when its type closes automatically.
 */
async function receiveOnOrder(ctx: PostingContext, received: ReceivedOrder, invoiceTotal: Dec): Promise<void> {
  const { order, status } = received;
  for (const r of received.received) {
    await records(ctx, 'purchase-orders.lines').where({ id: r.row.id }).update({ receivedToDate: increment(r.input.updateQuantity, `lines[${r.input.index}].updateQuantity`) });
  }
  const orZero = (v: Dec | null) => v ?? new Dec(0);
  const after = await records(ctx, 'purchase-orders.lines').ofParent(order.id).all(['quantity', 'receivedToDate', 'canceledQuantity']);
  const complete = after.every((l) => orZero(l.receivedToDate).plus(orZero(l.canceledQuantity)).greaterThanOrEqualTo(orZero(l.quantity)));
  const type = order.orderType === null || order.orderType === undefined ? undefined : await records(ctx, 'purchase-order-types').where({ recordNumber: order.orderType }).first(['autoClose']);
  const autoClose = type !== undefined && type.autoClose === true;
  const newStatus = complete && autoClose ? PO_STATUS.closed : status === PO_STATUS.open ? PO_STATUS.received : status;
  await records(ctx, 'purchase-orders').where({ id: order.id }).update({ receivedTotal: increment(invoiceTotal, 'lines'), status: newStatus });
}

/** The receipt's cascade; the result's document is read back by the caller (read-back.ts). */
export async function postReceipt(
  ctx: PostingContext,
  input: ReceiptInput,
  received: ReceivedOrder,
  resolved: Pick<InvoiceToWrite, 'lines'>,
  setup: LedgerSetup,
  at: ReceiptPosting,
): Promise<{ payableInvoice: PostedApInvoice; result: Omit<ReceiptWriteResult, 'document'> }> {
  const { invoice, location } = received;
  const { period, year } = at;
  const invoiceTotal = invoice.invoiceTotal;
  await receiveOnOrder(ctx, received, invoiceTotal);

  // The payable invoice (Review) and its posting.
  const enteredDate = ctx.today;
  // A receipt at zero cost posts no journal: the invoice then points to none.
  const posts = invoiceTotal.greaterThan(0);
  const toWrite: InvoiceToWrite = { input: invoice, lines: resolved.lines, recordNumber: at.invoiceRecord, ledgerRecord: posts ? at.ledgerRecord : null, dueDate: at.dueDate, enteredDate, period, year };
  const payableInvoice = await insertInvoice(ctx, toWrite);
  const result: Omit<ReceiptWriteResult, 'document'> = { jobCosts: [], inventory: [], period, year };

  // Stock in (before the journal: part locks, then ledger balance rows). Each movement is
  // valued at exactly what the journal debits to the location's inventory account.
  const stockLines = received.received.filter((r) => r.intoStock);
  if (stockLines.length > 0) {
    const stock = await applyStockMovements(
      ctx,
      stockLines.map((r) => ({
        field: `lines[${r.input.index}]`,
        partNumber: Number(r.row.partNumber),
        locationNumber: location!,
        movementType: MOVEMENT.receipt,
        quantity: r.input.updateQuantity,
        onHand: true,
        available: true,
        unitCost: r.unitCost,
        value: r.extended,
        sourceNumber: PO_RECEIPT_SOURCE,
        documentNumber: invoice.invoiceNumber,
        sourceRecordNumber: at.invoiceRecord,
        transactionDate: input.receiptDate,
        enteredDate,
        period,
        year,
      })),
    );
    result.inventory = stock.inventory;
    // What arrived is no longer on order at the location.
    for (const r of stockLines) {
      await records(ctx, 'inventory-quantities')
        .where({ partNumber: Number(r.row.partNumber), locationNumber: location! })
        .update({ quantityOnOrder: decrementToZero(r.input.updateQuantity, `lines[${r.input.index}].updateQuantity`) });
    }
  }

  if (posts) {
    result.ledgerTransaction = await writeJournal(ctx, {
      recordNumber: at.ledgerRecord,
      transactionNumber: invoice.invoiceNumber,
      transactionDate: input.receiptDate,
      enteredDate,
      description: invoice.description,
      sourceNumber: PO_RECEIPT_SOURCE,
      period,
      year,
      lines: invoiceJournalLines(toWrite, setup),
    });
  }
  // A job cost per job line with a value (a line at zero cost posts nothing to the ledger either).
  const costs = invoiceJobCosts(toWrite, at.jobCostRecords, PO_RECEIPT_SOURCE);
  result.jobCosts = await writeJobCosts(ctx, costs.filter((c) => !c.costAmount.isZero()));
  return { payableInvoice, result };
}
