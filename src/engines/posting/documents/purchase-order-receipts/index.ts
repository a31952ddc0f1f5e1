import type { Knex } from 'knex';
import { ApiProblem, type FieldError } from '../../../../errors/problem';
import { Dec, decToJson } from '../../../../storage/decimal';
import type { NumberAllocator } from '../../../../storage/numbers';
import type { components } from '../../../../../generated/api-types';
import { SCALE } from '../../context';
import { readRecord, type FullRecordWithLines } from '../../records';
import type { WriteResult } from '../../ledger/posted-result';
import { InputErrors, exactDecimal, uniqueLineNumbers } from '../../input';
import { writeJournal } from '../../ledger/journal';
import { writeJobCosts } from '../../ledger/job-costs';
import { MOVEMENT, applyStockMovements } from '../../ledger/stock';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { ReferenceCheck, isTrue } from '../../ledger/references';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { addDays } from '../../dates';
import { insertInvoice, invoiceJobCosts, invoiceJournalLines, resolveApLines, type ApInvoiceInput, type ApLineInput, type InvoiceToWrite, type PostedApInvoice } from '../ap-invoices';

/**
 * POST /purchase-order-receipts (source 13, domain notes "How it posts": PO receipt). One
 * transaction, under a lock on the order number:
 *
 *   order      each line's updateQuantity is added to its received-to-date quantity (pcorln.rcvdte),
 *              the received value to the order's received total (pchord.rcvttl); an Open order
 *              becomes Received (3); with the automatic close of its type (pchtyp.atocls) it becomes
 *              Closed (4) once received + cancelled reaches ordered on every line. More than the
 *              open quantity is received too; each result line reports its excess (overReceived)
 *   invoice    a payable invoice in status 2 (Review) for the received value, orderNumber set to the
 *              order and one line per received line (linnum = the PO line, linqty = the quantity
 *              received): these lines ARE the record of the receipt (received to date = their sum)
 *   journal    source 13: each line's amount debited to the PO line's account (inventory location
 *              account for stock, direct expense / WIP for job lines), AP control credited. The
 *              invoice stays in Review (for approval before payment) yet its journal is posted, as
 *              the accounting system does for receipts (docs/decisions.md)
 *   job costs  one per job line (the order has a job and the line is not received into stock)
 *   stock      inventory lines (a part, and the order has an inventory location) go into stock there
 *
 * Nothing refuses an identical second receipt (spec, Writes): the required Idempotency-Key is the
 * protection against doubles, so neither an over-receipt nor an order that is already Closed (the
 * first receipt may have closed it) refuses one; a Closed order stays Closed
 * (docs/decisions/0220-po-receipts-over-receipt.md). Void and Master orders receive nothing.
 */

export const PO_RECEIPT_SOURCE = 13;
const PO_OPEN = 1;
const PO_RECEIVED = 3;
const PO_CLOSED = 4;
const PO_VOID = 5;
const PO_MASTER = 6;
const INVOICE_REVIEW = 2;
const PO_STATUS_NAMES: Record<number, string> = { 1: 'Open', 2: 'Review', 3: 'Received', 4: 'Closed', 5: 'Void', 6: 'Master' };

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

interface Numbers {
  invoiceRecord: number;
  ledgerRecord: number;
  /** One per line at most (only job lines use theirs). */
  jobCostRecords: number[];
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
  const input: ReceiptInput = { orderNumber: String(b.orderNumber), receiptDate: String(b.receiptDate), lines };
  if (typeof b.vendorInvoiceNumber === 'string') input.vendorInvoiceNumber = b.vendorInvoiceNumber;
  if (typeof b.description === 'string') input.description = b.description;
  const period = optInt(b.period);
  if (period !== undefined) input.period = period;
  const year = optInt(b.year);
  if (year !== undefined) input.year = year;
  return input;
}

/** A purchase order with its lines, read back through the catalog (read-back.ts). */
export async function readPurchaseOrder(db: Knex | Knex.Transaction, id: string): Promise<PostedPurchaseOrder> {
  const record = await readRecord(db, 'purchase-orders', id, { children: ['lines'] });
  if (!record) throw new Error(`purchase order ${id} not found`);
  return record as unknown as PostedPurchaseOrder;
}

/**
 * The excess of a PO line as read back: received + cancelled beyond ordered, never negative. Exact:
 * the read model's numbers carry at most 4 decimal places, so the difference is taken in decimals.
 */
function overReceived(line: PostedPurchaseOrder['lines'][number]): number {
  const excess = new Dec(line.receivedToDate ?? 0).plus(line.canceledQuantity ?? 0).minus(line.quantity ?? 0);
  return excess.greaterThan(0) ? decToJson(excess) : 0;
}

/** A receipt line joined to its PO line. */
interface ReceivedLine {
  input: ReceiptLineInput;
  row: Record<string, any>;
  unitCost: Dec;
  extended: Dec;
  intoStock: boolean;
}

export const purchaseOrderReceiptsWrite: WriteDefinition<ReceiptInput, Numbers, ReceiptWriteResult> = {
  route: '/purchase-order-receipts',
  what: 'receiving a purchase order',
  requireKey: true,
  prepare: prepareReceipt,

  async allocate(input, numbers: NumberAllocator): Promise<Numbers> {
    // Which lines are job lines is known only from the order: reserve one job cost number per
    // line (unused ones are gaps, which numbers are allowed to have: spec, Writes rule 7).
    const got = await numbers.allocateMany({ acpinv: 1, lgrtrn: 1, jobcst: input.lines.length });
    return {
      invoiceRecord: got.acpinv!.first,
      ledgerRecord: got.lgrtrn!.first,
      jobCostRecords: Array.from({ length: got.jobcst!.count }, (_, i) => got.jobcst!.first + i),
    };
  },

  async post(ctx, input, numbers): Promise<PostOutcome<ReceiptWriteResult>> {
    const { trx, dialect } = ctx;
    const qty = (raw: unknown) => dialect.decodeDecimal(raw, SCALE.quantity) ?? new Dec(0);

    // Receipts of one order are serialised: the close and the excess reported see every earlier receipt.
    await ctx.lockName(`pchord:${input.orderNumber}`);
    const order = await trx('pchord').where({ ordnum: input.orderNumber }).first();
    if (!order) {
      throw new ApiProblem('REFERENCE_NOT_FOUND', `Referenced records do not exist: orderNumber: purchase order ${input.orderNumber} does not exist.`, {
        errors: [{ field: 'orderNumber', code: 'not_found', message: `purchase order ${input.orderNumber} does not exist` }],
      });
    }
    const status = Number(order.status);
    // A Closed order still receives (an identical second receipt of the receipt that closed it is
    // received again: spec, Writes); a Void order was cancelled and a Master (blanket) order
    // receives through its releases.
    if (status === PO_VOID || status === PO_MASTER) {
      throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `Purchase order ${input.orderNumber} is ${PO_STATUS_NAMES[status]} (status ${status}); it accepts no receipts.`, {
        errors: [{ field: 'orderNumber', code: 'not_receivable', message: `status ${status} ${PO_STATUS_NAMES[status]}` }],
        extensions: { orderStatus: status },
      });
    }
    const poLines = await trx('pcorln').where({ _idref: order._idnum }).orderBy('linnum');
    const byNumber = new Map(poLines.map((l: any) => [Number(l.linnum), l]));
    const missing: FieldError[] = [];
    for (const l of input.lines) {
      if (!byNumber.has(l.lineNumber)) missing.push({ field: `lines[${l.index}].lineNumber`, code: 'not_found', message: `line ${l.lineNumber} of purchase order ${input.orderNumber} does not exist` });
    }
    if (missing.length > 0) {
      throw new ApiProblem('REFERENCE_NOT_FOUND', `Referenced records do not exist: ${missing.map((e) => `${e.field}: ${e.message}`).join('; ')}.`, { errors: missing });
    }

    const location = optInt(order.locnum) ?? null;
    const received: ReceivedLine[] = input.lines.map((l) => {
      const row = byNumber.get(l.lineNumber)!;
      const unitCost = l.unitCost ?? dialect.decodeDecimal(row.linprc, SCALE.price) ?? new Dec(0);
      return {
        input: l,
        row,
        unitCost,
        extended: l.updateQuantity.times(unitCost).toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP),
        intoStock: location !== null && row.prtnum !== null && row.prtnum !== undefined,
      };
    });
    // The payable invoice the receipt creates, checked by the AP rules (accounts, job, cost codes).
    const jobNumber = optInt(order.jobnum);
    const phaseNumber = optInt(order.phsnum);
    const invoiceNumber = (input.vendorInvoiceNumber ?? `RCV${numbers.invoiceRecord}`).slice(0, 20);
    const description = (input.description ?? `Receipt of ${input.orderNumber}`).slice(0, 50);
    const locationRow = location === null ? undefined : await trx('invloc').where({ recnum: location }).first('lgract');
    const locationAccount = optInt(locationRow?.lgract);
    const apLines: ApLineInput[] = received.map((r) => {
      const line: ApLineInput = {
        index: r.input.index,
        lineNumber: r.input.lineNumber,
        description: String(r.row.dscrpt ?? ''),
        quantity: r.input.updateQuantity,
        unitPrice: r.unitCost,
        extendedTotal: r.extended,
        salesTax: new Dec(0),
      };
      // Stock is valued on the location's inventory account (so the ledger equals the stock
      // movements); other lines post to the PO line's account (else the vendor's default).
      const account = r.intoStock ? (locationAccount ?? optInt(r.row.lgract)) : optInt(r.row.lgract);
      if (account !== undefined) line.ledgerAccount = account;
      // A job line: the order has a job and the line is not received into stock.
      if (jobNumber !== undefined && !r.intoStock) {
        line.jobNumber = jobNumber;
        if (phaseNumber !== undefined) line.phaseNumber = phaseNumber;
        const code = dialect.decodeDecimal(r.row.cstcde, SCALE.costCode);
        if (code !== null) line.costCode = code;
        const type = optInt(r.row.csttyp);
        if (type !== undefined) line.costType = type;
      }
      return line;
    });
    const invoiceTotal = received.reduce((s, r) => s.plus(r.extended), new Dec(0));
    const invoice: ApInvoiceInput = {
      vendorNumber: Number(order.vndnum),
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

    const periodRequest = { date: input.receiptDate, dateField: 'receiptDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const { lines, vendor } = await resolveApLines(ctx, invoice, setup);
    const check = new ReferenceCheck();
    if (setup.apControlAccount === null) check.notPostable('orderNumber', 'the ledger setup has no AP control account', 'setup_incomplete');
    const source = await trx('source').where({ recnum: PO_RECEIPT_SOURCE }).first('recnum');
    if (!source) check.notPostable('orderNumber', `transaction source ${PO_RECEIPT_SOURCE} (PO Receipts) does not exist`, 'setup_incomplete');
    check.throwIfAny();
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);

    // The order: received to date, received total, status.
    for (const r of received) {
      await trx('pcorln')
        .where({ _idnum: r.row._idnum })
        .update({ rcvdte: trx.raw('rcvdte + ?', [dialect.encodeDecimal(r.input.updateQuantity, SCALE.quantity)]), upddte: ctx.now, updusr: ctx.user });
    }
    const after = await trx('pcorln').where({ _idref: order._idnum }).select('linqty', 'rcvdte', 'cancel');
    const complete = after.every((l: any) => qty(l.rcvdte).plus(qty(l.cancel)).greaterThanOrEqualTo(qty(l.linqty)));
    const type = order.ordtyp === null || order.ordtyp === undefined ? undefined : await trx('pchtyp').where({ recnum: order.ordtyp }).first('atocls');
    const autoClose = type !== undefined && isTrue(type.atocls);
    const newStatus = complete && autoClose ? PO_CLOSED : status === PO_OPEN ? PO_RECEIVED : status;
    await trx('pchord')
      .where({ _idnum: order._idnum })
      .update({ rcvttl: trx.raw('rcvttl + ?', [dialect.encodeDecimal(invoiceTotal, SCALE.money)]), status: newStatus, upddte: ctx.now, updusr: ctx.user });

    // The payable invoice (Review) and its posting.
    const enteredDate = ctx.today;
    const dueDate = addDays(input.receiptDate, Number(vendor.termsDays ?? 30));
    // A receipt at zero cost posts no journal: the invoice then points to none.
    const posts = invoiceTotal.greaterThan(0);
    const toWrite: InvoiceToWrite = { input: invoice, lines, recordNumber: numbers.invoiceRecord, ledgerRecord: posts ? numbers.ledgerRecord : null, dueDate, enteredDate, period, year };
    const payableInvoice = await insertInvoice(ctx, toWrite);
    const result: ReceiptWriteResult = { document: undefined as unknown as PostedReceipt, jobCosts: [], inventory: [], period, year };

    // Stock in (before the journal: part locks, then ledger balance rows). Each movement is
    // valued at exactly what the journal debits to the location's inventory account.
    const stockLines = received.filter((r) => r.intoStock);
    if (stockLines.length > 0) {
      const stock = await applyStockMovements(
        ctx,
        stockLines.map((r) => ({
          field: `lines[${r.input.index}]`,
          partNumber: Number(r.row.prtnum),
          locationNumber: location!,
          movementType: MOVEMENT.receipt,
          quantity: r.input.updateQuantity,
          onHand: true,
          available: true,
          unitCost: r.unitCost,
          value: r.extended,
          sourceNumber: PO_RECEIPT_SOURCE,
          documentNumber: invoiceNumber,
          sourceRecordNumber: numbers.invoiceRecord,
          transactionDate: input.receiptDate,
          enteredDate,
          period,
          year,
        })),
      );
      result.inventory = stock.inventory;
      // What arrived is no longer on order at the location.
      for (const r of stockLines) {
        const q = dialect.encodeDecimal(r.input.updateQuantity, SCALE.quantity);
        await trx('invqty')
          .where({ prtnum: Number(r.row.prtnum), locnum: location! })
          .update({ qtyord: trx.raw('CASE WHEN qtyord > ? THEN qtyord - ? ELSE 0 END', [q, q]), upddte: ctx.now, updusr: ctx.user });
      }
    }

    if (posts) {
      result.ledgerTransaction = await writeJournal(ctx, {
        recordNumber: numbers.ledgerRecord,
        transactionNumber: invoiceNumber,
        transactionDate: input.receiptDate,
        enteredDate,
        description,
        sourceNumber: PO_RECEIPT_SOURCE,
        period,
        year,
        lines: invoiceJournalLines(toWrite, setup),
      });
    }
    // A job cost per job line with a value (a line at zero cost posts nothing to the ledger either).
    const costs = invoiceJobCosts(toWrite, numbers.jobCostRecords, PO_RECEIPT_SOURCE);
    result.jobCosts = await writeJobCosts(ctx, costs.filter((c) => !c.costAmount.isZero()));


    // The order and the invoice as the query engine reads them (read-back.ts); the receipt's own
    // lines are the invoice lines it wrote (quantity, unit price, amount) next to the order line.
    const purchaseOrder = await readPurchaseOrder(trx, String(order._idnum));
    const orderLines = new Map(purchaseOrder.lines.map((l) => [l.lineNumber, l]));
    const invoiceLines = new Map(payableInvoice.lines.map((l) => [l.lineNumber, l]));
    result.document = {
      orderNumber: purchaseOrder.orderNumber,
      receiptDate: payableInvoice.invoiceDate,
      invoiceRecordNumber: payableInvoice.recordNumber,
      invoiceNumber: payableInvoice.invoiceNumber,
      receivedTotal: payableInvoice.invoiceTotal,
      closedOrder: status !== PO_CLOSED && purchaseOrder.status === PO_CLOSED,
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
    return { result };
  },
};
