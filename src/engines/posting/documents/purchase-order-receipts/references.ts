import { ApiProblem, type FieldError } from '../../../../errors/problem';
import { Dec } from '../../../../storage/decimal';
import type { PostingContext } from '../../context';
import type { LedgerSetup } from '../../ledger/period';
import { ReferenceCheck } from '../../ledger/references';
import { fitText, records, type StoredRecord } from '../../records';
import { resolveApLines, type ApInvoiceInput, type ApLineInput, type MissingEquipment, type ResolvedApLine } from '../ap-invoices';
import { PO_RECEIPT_SOURCE, PO_STATUS, PO_STATUS_NAMES, checkReceiptLimits, extensionOf, type ReceiptInput, type ReceiptLineInput } from './input';

/**
 * POST /purchase-order-receipts, the references: the order (receivable or not), its lines the
 * receipt names, each line's cost and whether it goes into stock, and the payable invoice the
 * receipt creates, checked by the AP rules (vendor, accounts, job, cost codes: ap-invoices/references.ts).
 */

/** The payable invoice a receipt creates is in status 2, Review. */
const INVOICE_REVIEW = 2;

/** A receipt line joined to its PO line. */
export interface ReceivedLine {
  input: ReceiptLineInput;
  /** The PO line (every published field, and `id`). */
  row: StoredRecord;
  unitCost: Dec;
  extended: Dec;
  intoStock: boolean;
}

/** The order a receipt receives: its record, its status, the lines received and the invoice they make. */
export interface ReceivedOrder {
  /** The purchase order (every published field). */
  order: StoredRecord;
  status: number;
  /** The order's inventory location (stock lines go there), or null. */
  location: number | null;
  received: ReceivedLine[];
  /** The payable invoice the receipt creates (status 2 Review). */
  invoice: ApInvoiceInput;
}

/**
 * The order (404 when it does not exist, 422 when Void or Master) and the lines the receipt names
 * (404 for each line the order lacks). The caller holds the order's lock.
 */
export async function readOrder(ctx: PostingContext, input: ReceiptInput, invoiceRecord: number): Promise<ReceivedOrder> {
  const order = await records(ctx, 'purchase-orders').where({ orderNumber: input.orderNumber }).first();
  if (!order) {
    throw new ApiProblem('REFERENCE_NOT_FOUND', `Referenced records do not exist: orderNumber: purchase order ${input.orderNumber} does not exist.`, {
      errors: [{ field: 'orderNumber', code: 'not_found', message: `purchase order ${input.orderNumber} does not exist` }],
    });
  }
  const status = Number(order.status);
  // A Closed order still receives (an identical second receipt of the receipt that closed it is
  // received again: spec, Writes); a Void order was cancelled and a Master (blanket) order
  // receives through its releases.
  if (status === PO_STATUS.void || status === PO_STATUS.master) {
    throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `Purchase order ${input.orderNumber} is ${PO_STATUS_NAMES[status]} (status ${status}); it accepts no receipts.`, {
      errors: [{ field: 'orderNumber', code: 'not_receivable', message: `status ${status} ${PO_STATUS_NAMES[status]}` }],
      extensions: { orderStatus: status },
    });
  }
  const poLines = await records(ctx, 'purchase-orders.lines').ofParent(order.id).orderBy('lineNumber').all();
  const byNumber = new Map(poLines.map((l) => [Number(l.lineNumber), l]));
  const missing: FieldError[] = [];
  for (const l of input.lines) {
    if (!byNumber.has(l.lineNumber)) missing.push({ field: `lines[${l.index}].lineNumber`, code: 'not_found', message: `line ${l.lineNumber} of purchase order ${input.orderNumber} does not exist` });
  }
  if (missing.length > 0) {
    throw new ApiProblem('REFERENCE_NOT_FOUND', `Referenced records do not exist: ${missing.map((e) => `${e.field}: ${e.message}`).join('; ')}.`, { errors: missing });
  }

  const location: number | null = order.locationNumber ?? null;
  const received: ReceivedLine[] = input.lines.map((l) => {
    const row = byNumber.get(l.lineNumber)!;
    const unitCost: Dec = l.unitCost ?? row.unitPrice ?? new Dec(0);
    return {
      input: l,
      row,
      unitCost,
      extended: extensionOf(l.updateQuantity, unitCost),
      intoStock: location !== null && (row.partNumber ?? null) !== null,
    };
  });
  // With the costs the order gives the lines that carry none (400 VALUE_OUT_OF_RANGE, stored under the key).
  checkReceiptLimits(received.map((r) => ({ index: r.input.index, extended: r.extended })));
  const invoice = await invoiceOf(ctx, input, order, location, received, invoiceRecord);
  return { order, status, location, received, invoice };
}

/** The payable invoice the receipt creates: one line per received line, on the account its value goes to. */
async function invoiceOf(ctx: PostingContext, input: ReceiptInput, order: StoredRecord, location: number | null, received: ReceivedLine[], invoiceRecord: number): Promise<ApInvoiceInput> {
  const jobNumber: number | undefined = order.jobNumber ?? undefined;
  const phaseNumber: number | undefined = order.phaseNumber ?? undefined;
  const invoiceNumber = fitText('ap-invoices', 'invoiceNumber', input.vendorInvoiceNumber ?? `RCV${invoiceRecord}`);
  const description = fitText('ap-invoices', 'description', input.description ?? `Receipt of ${input.orderNumber}`);
  const locationRow = location === null ? undefined : await records(ctx, 'inventory-locations').where({ recordNumber: location }).first(['inventoryAccount']);
  const locationAccount: number | undefined = locationRow?.inventoryAccount ?? undefined;
  const apLines: ApLineInput[] = received.map((r) => {
    const line: ApLineInput = {
      index: r.input.index,
      lineNumber: r.input.lineNumber,
      description: String(r.row.description ?? ''),
      quantity: r.input.updateQuantity,
      unitPrice: r.unitCost,
      extendedTotal: r.extended,
      salesTax: new Dec(0),
    };
    // Stock is valued on the location's inventory account (so the ledger equals the stock
    // movements); other lines post to the PO line's account (else the vendor's default).
    const lineAccount: number | undefined = r.row.ledgerAccount ?? undefined;
    const account = r.intoStock ? (locationAccount ?? lineAccount) : lineAccount;
    if (account !== undefined) line.ledgerAccount = account;
    // A job line: the order has a job and the line is not received into stock.
    if (jobNumber !== undefined && !r.intoStock) {
      line.jobNumber = jobNumber;
      if (phaseNumber !== undefined) line.phaseNumber = phaseNumber;
      const code: Dec | null = r.row.costCode;
      if (code !== null) line.costCode = code;
      const type: number | null = r.row.costType;
      if (type !== null) line.costType = type;
    }
    return line;
  });
  const invoiceTotal = received.reduce((s, r) => s.plus(r.extended), new Dec(0));
  const invoice: ApInvoiceInput = {
    vendorNumber: Number(order.vendorNumber),
    invoiceNumber,
    invoiceDate: input.receiptDate,
    description,
    orderNumber: input.orderNumber,
    status: INVOICE_REVIEW,
    invoiceTotal,
    retainage: new Dec(0),
    lines: apLines,
  };
  if (jobNumber !== undefined && location === null) invoice.jobNumber = jobNumber;
  if (jobNumber !== undefined && location === null && phaseNumber !== undefined) invoice.phaseNumber = phaseNumber;
  return invoice;
}

/**
 * A PO line on an equipment-expense account: the AP rules want the unit its cost is booked to, and
 * a purchase order line carries no equipment number (pcorln has none), so the receipt cannot post
 * it without leaving the equipment ledger short of an equipment cost (decision 0430): 422 naming
 * the received line.
 */
const equipmentLineRefused: MissingEquipment = (check, line, ledgerAccount) =>
  check.notPostable(
    `lines[${line.index}].lineNumber`,
    `purchase order line ${line.lineNumber} is on equipment-expense account ${ledgerAccount} which needs an equipment number, and a purchase order line has none`,
    'equipment_account',
  );

/** The invoice's lines resolved by the AP rules, its vendor, and what posting a receipt needs of the setup. */
export async function resolveInvoice(ctx: PostingContext, invoice: ApInvoiceInput, setup: LedgerSetup): Promise<{ lines: ResolvedApLine[]; vendor: StoredRecord }> {
  const resolved = await resolveApLines(ctx, invoice, setup, { missingEquipment: equipmentLineRefused });
  const check = new ReferenceCheck();
  if (setup.apControlAccount === null) check.notPostable('orderNumber', 'the ledger setup has no AP control account', 'setup_incomplete');
  const source = await records(ctx, 'transaction-sources').where({ recordNumber: PO_RECEIPT_SOURCE }).first(['recordNumber']);
  if (!source) check.notPostable('orderNumber', `transaction source ${PO_RECEIPT_SOURCE} (PO Receipts) does not exist`, 'setup_incomplete');
  check.throwIfAny();
  return resolved;
}
