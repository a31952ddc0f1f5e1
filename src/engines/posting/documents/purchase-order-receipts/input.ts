import type { components } from '../../../../../generated/api-types';
import { Dec } from '../../../../storage/decimal';
import { SCALE } from '../../context';
import { InputErrors, exactDecimal, uniqueLineNumbers } from '../../input';
import { DerivedLimits } from '../../limits';

/**
 * POST /purchase-order-receipts, the input: the body (typed from the contract: generated/api-types.ts)
 * parsed into exact decimals, 400 before dispatch.
 */

export const PO_RECEIPT_SOURCE = 13;
/** A purchase order's status. */
export const PO_STATUS = { open: 1, review: 2, received: 3, closed: 4, void: 5, master: 6 } as const;
export const PO_STATUS_NAMES: Record<number, string> = { 1: 'Open', 2: 'Review', 3: 'Received', 4: 'Closed', 5: 'Void', 6: 'Master' };

export interface ReceiptLineInput {
  index: number;
  lineNumber: number;
  updateQuantity: Dec;
  unitCost?: Dec;
}

export interface ReceiptInput {
  orderNumber: string;
  receiptDate: string;
  vendorInvoiceNumber?: string;
  description?: string;
  period?: number;
  year?: number;
  lines: ReceiptLineInput[];
}

const optInt = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : Number(v));

/** The request body, typed from the contract (generated/api-types.ts). */
export type ReceiptBody = components['schemas']['PurchaseOrderReceiptInput'];
export type ReceiptLineBody = components['schemas']['PurchaseOrderReceiptLineInput'];

export function prepareReceipt(body: unknown): ReceiptInput {
  // The contract validator has checked the body against PurchaseOrderReceiptInput before dispatch.
  const b = (body ?? {}) as ReceiptBody;
  const errors = new InputErrors();
  const rawLines: ReceiptLineBody[] = Array.isArray(b.lines) ? b.lines : [];
  const lines: ReceiptLineInput[] = rawLines.map((l, i) => {
    const quantity = exactDecimal(l.updateQuantity, `lines[${i}].updateQuantity`, SCALE.quantity, errors);
    if (quantity && !quantity.greaterThan(0)) errors.add(`lines[${i}].updateQuantity`, 'minimum', 'must be greater than 0');
    const line: ReceiptLineInput = { index: i, lineNumber: Number(l.lineNumber), updateQuantity: quantity ?? new Dec(0) };
    const unitCost = exactDecimal(l.unitCost, `lines[${i}].unitCost`, SCALE.price, errors);
    if (unitCost) line.unitCost = unitCost;
    return line;
  });
  uniqueLineNumbers(lines, errors);
  errors.throwIfAny();
  // What the body alone decides, before dispatch: the extension of each line that carries its unit cost.
  checkReceiptLimits(lines.map((l) => ({ index: l.index, extended: l.unitCost === undefined ? undefined : extensionOf(l.updateQuantity, l.unitCost) })));
  const input: ReceiptInput = { orderNumber: String(b.orderNumber), receiptDate: String(b.receiptDate), lines };
  if (typeof b.vendorInvoiceNumber === 'string') input.vendorInvoiceNumber = b.vendorInvoiceNumber;
  if (typeof b.description === 'string') input.description = b.description;
  const period = optInt(b.period);
  if (period !== undefined) input.period = period;
  const year = optInt(b.year);
  if (year !== undefined) input.year = year;
  return input;
}

/** A received line's value: quantity x unit cost, rounded to cents (the invoice line's extendedTotal). */
export function extensionOf(quantity: Dec, unitCost: Dec): Dec {
  return quantity.times(unitCost).toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);
}

/**
 * The payable invoice a receipt creates stores each line's extension (ap-invoices lines
 * extendedTotal, debited as it is in the journal) and their sum (invoiceTotal): from a quantity and
 * a unit cost each within its bound, either may exceed its column (400 VALUE_OUT_OF_RANGE naming
 * `lines[i].updateQuantity`, or `lines` for the sum: limits.ts). `extended` undefined: a line whose
 * cost comes from the order (checked once the order is read, references.ts); the sum is checked
 * when every line's is known.
 */
export function checkReceiptLimits(lines: ReadonlyArray<{ index: number; extended: Dec | undefined }>): void {
  const limits = new DerivedLimits();
  let total: Dec | undefined = new Dec(0);
  for (const l of lines) {
    if (l.extended === undefined) {
      total = undefined;
      continue;
    }
    limits.decimal(`lines[${l.index}].updateQuantity`, `updateQuantity x unitCost of lines[${l.index}]`, l.extended, 'ap-invoices.lines', 'extendedTotal');
    total = total?.plus(l.extended);
  }
  if (total !== undefined) limits.decimal('lines', 'the total of the received lines (the payable invoice\'s invoiceTotal)', total, 'ap-invoices', 'invoiceTotal');
  limits.throwIfAny();
}
