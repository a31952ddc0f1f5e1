import type { Knex } from 'knex';
import type { components } from '../../../../../generated/api-types';
import { Dec, decToJson } from '../../../../storage/decimal';
import type { WriteResult } from '../../ledger/posted-result';
import { readWrittenRecord, type FullRecordWithLines } from '../../records';
import type { PostedApInvoice } from '../ap-invoices';
import { PO_STATUS } from './input';
import type { ReceivedLine } from './references';

/**
 * POST /purchase-order-receipts, the result: the order and the payable invoice as the query engine
 * reads them (through the catalog); the receipt's own lines are the invoice lines it wrote
 * (quantity, unit price, amount) next to the order line.
 */

/** A purchase order as POST /purchase-orders/query returns it with `children: ['lines']`. */
export type PostedPurchaseOrder = FullRecordWithLines<components['schemas']['PurchaseOrder'], components['schemas']['PurchaseOrderLine']>;

export interface PostedReceipt {
  orderNumber: string;
  receiptDate: string;
  /** The AP invoice the receipt created (status 2 Review). */
  invoiceRecordNumber: number;
  invoiceNumber: string;
  receivedTotal: number;
  /** The order was closed by this receipt (automatic close of its type). */
  closedOrder: boolean;
  lines: Array<{
    lineNumber: number;
    partNumber: number | null;
    updateQuantity: number;
    unitCost: number;
    extendedTotal: number;
    receivedToDate: number;
    /** Received into stock at the order's inventory location. */
    intoStock: boolean;
    /** How far received + cancelled exceeds ordered on the PO line after this receipt (0 when it does not). */
    overReceived: number;
  }>;
  purchaseOrder: PostedPurchaseOrder;
  payableInvoice: PostedApInvoice;
}

export type ReceiptWriteResult = WriteResult<PostedReceipt>;

/** A purchase order with its lines, read back through the catalog (engines/query/read-records.ts). */
async function readPurchaseOrder(db: Knex | Knex.Transaction, id: string): Promise<PostedPurchaseOrder> {
  return (await readWrittenRecord(db, 'purchase-orders', id, { children: ['lines'] })) as unknown as PostedPurchaseOrder;
}

/**
 * The excess of a PO line as read back: received + cancelled beyond ordered, never negative. Exact:
 * the read model's numbers carry at most 4 decimal places, so the difference is taken in decimals.
 */
function overReceived(line: PostedPurchaseOrder['lines'][number]): number {
  const excess = new Dec(line.receivedToDate ?? 0).plus(line.canceledQuantity ?? 0).minus(line.quantity ?? 0);
  return excess.greaterThan(0) ? decToJson(excess) : 0;
}

/**
 * The receipt as its result reports it, from the order read back after the receipt and the payable
 * invoice as stored. `statusBefore`: the order's status before the receipt.
 */
export async function readReceipt(trx: Knex.Transaction, orderId: string, statusBefore: number, received: ReceivedLine[], payableInvoice: PostedApInvoice): Promise<PostedReceipt> {
  const purchaseOrder = await readPurchaseOrder(trx, orderId);
  const orderLines = new Map(purchaseOrder.lines.map((l) => [l.lineNumber, l]));
  const invoiceLines = new Map(payableInvoice.lines.map((l) => [l.lineNumber, l]));
  return {
    orderNumber: purchaseOrder.orderNumber,
    receiptDate: payableInvoice.invoiceDate,
    invoiceRecordNumber: payableInvoice.recordNumber,
    invoiceNumber: payableInvoice.invoiceNumber,
    receivedTotal: payableInvoice.invoiceTotal,
    closedOrder: statusBefore !== PO_STATUS.closed && purchaseOrder.status === PO_STATUS.closed,
    lines: received.map((r) => {
      const orderLine = orderLines.get(r.input.lineNumber)!;
      const invoiceLine = invoiceLines.get(r.input.lineNumber)!;
      return {
        lineNumber: r.input.lineNumber,
        partNumber: orderLine.partNumber,
        updateQuantity: invoiceLine.quantity,
        unitCost: invoiceLine.unitPrice,
        extendedTotal: invoiceLine.extendedTotal,
        receivedToDate: orderLine.receivedToDate,
        intoStock: r.intoStock,
        overReceived: overReceived(orderLine),
      };
    }),
    purchaseOrder,
    payableInvoice,
  };
}
