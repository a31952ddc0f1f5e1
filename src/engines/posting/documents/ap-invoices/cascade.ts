import { randomUUID } from 'node:crypto';
import { Dec } from '../../../../storage/decimal';
import { Pending } from '../../../../storage/statement-batch';
import type { PostingContext } from '../../context';
import { writeEquipmentCosts, type EquipmentCostToWrite, type PostedEquipmentCost } from '../../ledger/equipment-costs';
import { writeJobCosts, type JobCostToWrite, type PostedJobCost } from '../../ledger/job-costs';
import { writeJournal, type JournalLine, type PostedLedgerTransaction } from '../../ledger/journal';
import { childRow, childTableOf, fitText, insertChildrenReturning, insertRecordsReturning, recordRow } from '../../records';
import type { PostedApInvoice } from './read-back';
import type { LedgerSetup } from '../../ledger/period';
import { AP_SOURCE, type ApInvoiceInput } from './input';
import type { ResolvedLine } from './references';

/**
 * POST /ap-invoices, the cascade (domain notes, "How it posts", source 11), inside the posting
 * transaction, once every check has passed:
 *
 *   invoice    the AP invoice and its lines
 *   journal    each line debited to its ledger account (extended total + its sales tax);
 *              credited: the AP control account (invoice total - retainage when the ledger
 *              setup has a retainage payable account, which gets the retainage; else the total)
 *   job costs  one per job line (job, phase, cost code, cost type; amount = what the line debits)
 *   equipment costs  one per line on an equipment-expense account (its equipment, that account;
 *              amount = what the line debits; category 6 Other: decision 0430)
 *   balances   the ledger balances of the resolved period (through the journal)
 */

export interface InvoiceToWrite {
  input: ApInvoiceInput;
  lines: ResolvedLine[];
  recordNumber: number;
  ledgerRecord: number | null;
  dueDate: string;
  enteredDate: string;
  period: number;
  year: number;
}

/**
 * Inserts the invoice and its lines; returns the invoice as stored, with its lines, as
 * readPostedApInvoice reads it (the inserts' RETURNING: records/insert.ts insertRecordsReturning).
 */
export function insertInvoice(ctx: PostingContext, invoice: InvoiceToWrite): Pending<PostedApInvoice> {
  const { input, lines } = invoice;
  const invoiceId = randomUUID();
  const salesTax = lines.reduce((sum, r) => sum.plus(r.line.salesTax), new Dec(0));
  const header = insertRecordsReturning(ctx.writes, 'ap-invoices', [
    recordRow(
      ctx,
      'ap-invoices',
      {
        id: invoiceId,
        recordNumber: invoice.recordNumber,
        vendorNumber: input.vendorNumber,
        invoiceNumber: input.invoiceNumber,
        invoiceDate: input.invoiceDate,
        dueDate: invoice.dueDate,
        description: input.description,
        jobNumber: input.jobNumber ?? null,
        phaseNumber: input.phaseNumber ?? null,
        orderNumber: input.orderNumber ?? null,
        invoiceTotal: input.invoiceTotal,
        amountPaid: new Dec(0),
        invoiceBalance: input.invoiceTotal,
        retainage: input.retainage,
        salesTax,
        status: input.status,
        enteredDate: invoice.enteredDate,
        enteredBy: ctx.user,
        period: invoice.period,
        year: invoice.year,
        ledgerRecordNumber: invoice.ledgerRecord,
      },
    ),
  ]);
  const lineTable = childTableOf('ap-invoices', 'lines');
  const postedLines = insertChildrenReturning(
    ctx.writes,
    'ap-invoices',
    'lines',
    lines.map((r) =>
      childRow(
        ctx,
        'ap-invoices',
        'lines',
        {
          id: randomUUID(),
          lineNumber: r.line.lineNumber,
          ledgerAccount: r.ledgerAccount,
          description: r.line.description,
          jobNumber: r.jobNumber,
          phaseNumber: r.phaseNumber,
          costCode: r.costCode,
          costType: r.costType,
          equipmentNumber: r.line.equipmentNumber ?? null,
          quantity: r.line.quantity ?? new Dec(0),
          unitPrice: r.line.unitPrice ?? new Dec(0),
          extendedTotal: r.line.extendedTotal,
          salesTax: r.line.salesTax,
        },
        { [lineTable.parentColumn]: invoiceId },
      ),
    ),
  );
  return Pending.all(ctx.writes, [header, postedLines] as const).map(([[stored], storedLines]) => ({ ...stored!, lines: storedLines }) as unknown as PostedApInvoice);
}

/** The journal's lines: each line debited, AP control (and retainage payable) credited. */
export function invoiceJournalLines(invoice: InvoiceToWrite, setup: LedgerSetup): JournalLine[] {
  const { input, lines } = invoice;
  const journalLines: JournalLine[] = [];
  let n = 0;
  for (const r of lines) {
    if (r.amount.isZero()) continue;
    journalLines.push({
      lineNumber: (n += 1),
      ledgerAccount: r.ledgerAccount,
      description: fitText('ledger-transactions.lines', 'description', r.line.description || input.description),
      debit: r.amount,
      credit: new Dec(0),
      jobNumber: r.jobNumber,
      equipmentNumber: r.line.equipmentNumber ?? null,
    });
  }
  const splitRetainage = input.retainage.greaterThan(0) && setup.retainagePayableAccount !== null;
  const apCredit = splitRetainage ? input.invoiceTotal.minus(input.retainage) : input.invoiceTotal;
  if (apCredit.greaterThan(0)) {
    journalLines.push({ lineNumber: (n += 1), ledgerAccount: setup.apControlAccount!, description: 'Accounts payable', debit: new Dec(0), credit: apCredit });
  }
  if (splitRetainage) {
    journalLines.push({ lineNumber: (n += 1), ledgerAccount: setup.retainagePayableAccount!, description: 'Retainage payable', debit: new Dec(0), credit: input.retainage });
  }
  return journalLines;
}

/** The journal of the invoice, under `sourceNumber` (11 for an AP invoice, 13 for a PO receipt). */
export async function postInvoiceJournal(ctx: PostingContext, invoice: InvoiceToWrite, setup: LedgerSetup, description: string, sourceNumber: number = AP_SOURCE): Promise<PostedLedgerTransaction> {
  const { input } = invoice;
  return writeJournal(ctx, {
    recordNumber: invoice.ledgerRecord!,
    transactionNumber: input.invoiceNumber,
    transactionDate: input.invoiceDate,
    enteredDate: invoice.enteredDate,
    description,
    sourceNumber,
    period: invoice.period,
    year: invoice.year,
    lines: invoiceJournalLines(invoice, setup),
  });
}

/** A job cost per job line: the same amount the ledger posts to its direct expense / WIP account. */
export function invoiceJobCosts(invoice: InvoiceToWrite, jobCostRecords: number[], sourceNumber: number = AP_SOURCE): JobCostToWrite[] {
  const { input, lines } = invoice;
  const jobLines = lines.filter((r) => r.jobNumber !== null);
  return jobLines.map((r, i) => ({
    recordNumber: jobCostRecords[i]!,
    jobNumber: r.jobNumber!,
    phaseNumber: r.phaseNumber,
    costCode: r.costCode!,
    costType: r.costType!,
    transactionDate: input.invoiceDate,
    description: fitText('job-costs', 'description', r.line.description || input.description),
    sourceNumber,
    documentNumber: input.invoiceNumber,
    sourceRecordNumber: invoice.recordNumber,
    sourceLineNumber: r.line.lineNumber,
    vendorNumber: input.vendorNumber,
    equipmentNumber: r.line.equipmentNumber ?? null,
    costAmount: r.amount,
    enteredDate: invoice.enteredDate,
    period: invoice.period,
    year: invoice.year,
  }));
}

export function postInvoiceJobCosts(ctx: PostingContext, invoice: InvoiceToWrite, jobCostRecords: number[]): Pending<PostedJobCost[]> {
  return writeJobCosts(ctx, invoiceJobCosts(invoice, jobCostRecords));
}

/** Category of an invoice line's equipment cost: 6 Other (the invoice line has no category field: decision 0430). */
const EQUIPMENT_COST_OTHER = 6;

/**
 * An equipment cost per line on an equipment-expense account: the same amount the ledger posts
 * there, retention included (the whole amount is expensed, as for job costs).
 */
export function invoiceEquipmentCosts(invoice: InvoiceToWrite, equipmentCostRecords: number[], sourceNumber: number = AP_SOURCE): EquipmentCostToWrite[] {
  const { input, lines } = invoice;
  const equipmentLines = lines.filter((r) => r.equipmentExpense);
  if (equipmentLines.length > equipmentCostRecords.length) throw new Error(`${equipmentLines.length} equipment cost(s) to write, ${equipmentCostRecords.length} record number(s) reserved`);
  return equipmentLines.map((r, i) => ({
    recordNumber: equipmentCostRecords[i]!,
    equipmentNumber: r.equipmentNumber!,
    costCategory: EQUIPMENT_COST_OTHER,
    ledgerAccount: r.ledgerAccount,
    transactionDate: input.invoiceDate,
    description: fitText('equipment-costs', 'description', r.line.description || input.description),
    sourceNumber,
    documentNumber: input.invoiceNumber,
    sourceRecordNumber: invoice.recordNumber,
    sourceLineNumber: r.line.lineNumber,
    vendorNumber: input.vendorNumber,
    costAmount: r.amount,
    enteredDate: invoice.enteredDate,
    period: invoice.period,
    year: invoice.year,
  }));
}

export function postInvoiceEquipmentCosts(ctx: PostingContext, invoice: InvoiceToWrite, equipmentCostRecords: number[]): Pending<PostedEquipmentCost[]> {
  return writeEquipmentCosts(ctx, invoiceEquipmentCosts(invoice, equipmentCostRecords));
}
