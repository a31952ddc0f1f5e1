import { ApiProblem } from '../../../../errors/problem';
import { Dec } from '../../../../storage/decimal';
import { SCALE, type PostingContext } from '../../context';
import { DerivedLimits } from '../../limits';
import { writeJournal, type JournalLine, type PostedLedgerTransaction } from '../../ledger/journal';
import { MOVEMENT, applyStockMovements, type PostedInventoryHistory, type StockMovement } from '../../ledger/stock';
import { fitText, records } from '../../records';
import { SERVICE_SOURCE, type ServiceInvoicePostInput } from './input';
import type { WorkOrder } from './references';

/**
 * POST /service-invoices/post, the cascade, inside the posting transaction once every check has
 * passed: parts out of stock, the journal, and the work order invoiced (its totals, journal,
 * period, work status Complete, each part line's unit cost and each line's income account).
 */

/** Work status 5: Complete. */
const WORK_COMPLETE = 5;
/** Characters of the client's name in the journal's description (the invoice number follows). */
const CLIENT_NAME_IN_DESCRIPTION = 35;

/** Where and under which journal number the work order posts. */
export interface InvoicePosting {
  ledgerRecord: number;
  period: number;
  year: number;
}

/** Invoices the work order; returns what it posted (the document is read back by the caller). */
export async function postWorkOrder(
  ctx: PostingContext,
  input: ServiceInvoicePostInput,
  order: WorkOrder,
  at: InvoicePosting,
): Promise<{ ledgerTransaction: PostedLedgerTransaction; inventory: PostedInventoryHistory[] }> {
  const { header, label, invoiceDate, lines, partLines, salesTax, amountPaid, receivableAccount, inventoryAccount, client } = order;
  const { period, year } = at;
  // Totals from the lines: the invoice is what its lines and its tax say.
  const linesTotal = lines.reduce((s, l) => s.plus(l.extended), new Dec(0));
  const invoiceTotal = linesTotal.plus(salesTax);
  // What the work order will store, checked before anything is written (limits.ts): the total of
  // its lines and tax, and the due date (the invoice date + the client's terms days). The request
  // names the work order (and the invoice date, when it sends one).
  const limits = new DerivedLimits();
  limits.decimal('recordNumber', `the invoice total of ${label} (its lines and sales tax)`, invoiceTotal, 'service-invoices', 'invoiceTotal');
  const dueDate: string | undefined =
    header.dueDate ??
    limits.dateAfter(input.invoiceDate !== undefined ? 'invoiceDate' : 'recordNumber', `the due date of ${label} (invoiceDate + the client's terms days)`, invoiceDate, client.termsDays ?? 30, 'service-invoices', 'dueDate');
  limits.throwIfAny();
  if (invoiceTotal.isZero() && partLines.length === 0) {
    throw new ApiProblem('BUSINESS_RULE_VIOLATED', `${label} has nothing to invoice: its lines total 0 and it uses no parts.`, {
      errors: [{ field: 'recordNumber', code: 'nothing_to_post' }],
    });
  }

  // Parts leave the location first (lock order: part locks before ledger balance rows).
  const movements: StockMovement[] = partLines.map((l) => ({
    field: `lines[${l.index}]`,
    partNumber: l.part!,
    locationNumber: input.partsLocation!,
    movementType: MOVEMENT.consumed,
    quantity: l.quantity.negated(),
    onHand: true,
    available: true,
    sourceNumber: SERVICE_SOURCE,
    documentNumber: String(header.invoiceNumber ?? ''),
    sourceRecordNumber: input.recordNumber,
    transactionDate: invoiceDate,
    period,
    year,
  }));
  const stock = await applyStockMovements(ctx, movements);
  const costByLine = new Map<number, Dec>();
  partLines.forEach((l, i) => costByLine.set(l.index, stock.applied[i]!.value.negated()));
  const costOfGoods = [...costByLine.values()].reduce((s, v) => s.plus(v), new Dec(0));

  // The journal.
  const clientName = String(client.shortName || client.clientName || `Client ${Number(header.clientNumber)}`);
  const invoiceNumber = String(header.invoiceNumber ?? '') || String(input.recordNumber);
  const journalLines: JournalLine[] = [];
  let n = 0;
  const push = (account: number, description: string, debit: Dec, credit: Dec) => {
    if (debit.isZero() && credit.isZero()) return;
    journalLines.push({ lineNumber: (n += 1), ledgerAccount: account, description: fitText('ledger-transactions.lines', 'description', description), debit, credit });
  };
  push(receivableAccount, `${clientName} ${invoiceNumber} client ${Number(header.clientNumber)}`, invoiceTotal, new Dec(0));
  const income = new Map<string, { account: number; taxable: boolean; amount: Dec }>();
  for (const l of lines) {
    if (l.extended.isZero()) continue;
    const key = `${l.incomeAccount}/${l.taxable}`;
    const sum = income.get(key) ?? { account: l.incomeAccount, taxable: l.taxable, amount: new Dec(0) };
    sum.amount = sum.amount.plus(l.extended);
    income.set(key, sum);
  }
  for (const s of income.values()) push(s.account, s.taxable ? 'Taxable service income' : 'Non-taxable service income', new Dec(0), s.amount);
  push(order.salesTaxAccount ?? 0, 'Sales tax', new Dec(0), salesTax);
  push(input.costOfGoodsAccount ?? 0, 'Parts used', costOfGoods, new Dec(0));
  push(inventoryAccount ?? 0, `Parts from location ${input.partsLocation ?? ''}`.trim(), new Dec(0), costOfGoods);
  if (journalLines.some((l) => l.debit.isNegative() || l.credit.isNegative())) {
    // A negative line (a credit line on the work order) would need the other side: refused, never guessed.
    throw new ApiProblem('BUSINESS_RULE_VIOLATED', `${label} has negative amounts (lines or tax); it cannot be posted as an invoice.`, {
      errors: [{ field: 'recordNumber', code: 'negative_amount' }],
    });
  }
  const ledgerTransaction = await writeJournal(ctx, {
    recordNumber: at.ledgerRecord,
    transactionNumber: fitText('ledger-transactions', 'transactionNumber', invoiceNumber),
    transactionDate: invoiceDate,
    enteredDate: ctx.today,
    description: fitText('ledger-transactions', 'description', `${clientName.slice(0, CLIENT_NAME_IN_DESCRIPTION)} ${invoiceNumber}`),
    sourceNumber: SERVICE_SOURCE,
    period,
    year,
    lines: journalLines,
  });

  // The document: invoiced. The update is conditional on "not posted yet" (the lock makes it certain).
  const updated = await records(ctx, 'service-invoices')
    .where({ id: header.id })
    .whereNull('ledgerRecordNumber')
    .update({
      invoiceDate,
      dueDate: dueDate!,
      workStatus: WORK_COMPLETE,
      invoiceTotal,
      invoiceBalance: invoiceTotal.minus(amountPaid),
      ledgerRecordNumber: at.ledgerRecord,
      period,
      year,
    });
  if (updated !== 1) throw new Error(`service work order ${input.recordNumber} changed while it was being posted`);
  for (const l of lines) {
    const cost = costByLine.get(l.index);
    const change: Record<string, Dec | number> = {};
    if (cost !== undefined) change.unitCost = cost.div(l.quantity).toDecimalPlaces(SCALE.price, Dec.ROUND_HALF_UP);
    if ((l.row.ledgerAccount ?? null) === null && l.incomeAccount !== 0) change.ledgerAccount = l.incomeAccount;
    if (Object.keys(change).length === 0) continue;
    await records(ctx, 'service-invoices.lines').where({ id: l.row.id }).update(change);
  }
  return { ledgerTransaction, inventory: stock.inventory };
}
