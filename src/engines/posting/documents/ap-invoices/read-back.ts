import type { Knex } from 'knex';
import { Dec } from '../../../../storage/decimal';
import { readEquipmentCostsOf, type PostedEquipmentCost } from '../../ledger/equipment-costs';
import { readWriteResultOf, type WriteResult } from '../../ledger/posted-result';
import { readWrittenRecord, type RecordsContext } from '../../records';
import { lineDifferences, periodDiffers } from '../../resend';
import { AP_SOURCE, type ApInvoiceInput } from './input';

/**
 * POST /ap-invoices, the read-back: the invoice and its journal as the query engine reads them
 * (through the catalog), and the comparison of a re-sent invoice with the one already entered.
 */

export interface PostedApInvoice {
  id: string;
  recordNumber: number;
  vendorNumber: number;
  invoiceNumber: string;
  invoiceDate: string;
  dueDate: string | null;
  description: string;
  jobNumber: number | null;
  phaseNumber: number | null;
  orderNumber: string | null;
  invoiceTotal: number;
  amountPaid: number;
  invoiceBalance: number;
  retainage: number;
  salesTax: number;
  status: number;
  enteredDate: string | null;
  enteredBy: string | null;
  period: number;
  year: number;
  ledgerRecordNumber: number | null;
  lines: Array<{
    id: string;
    lineNumber: number;
    ledgerAccount: number;
    description: string;
    jobNumber: number | null;
    phaseNumber: number | null;
    costCode: number | null;
    costType: number | null;
    equipmentNumber: number | null;
    quantity: number;
    unitPrice: number;
    extendedTotal: number;
    salesTax: number;
  }>;
}

/**
 * An AP invoice moves no stock: `inventory` is always empty. `equipmentCosts`: one per line on an
 * equipment-expense account, always present (decision 0430).
 */
export type ApInvoiceWriteResult = Omit<WriteResult<PostedApInvoice>, 'inventory'> & { inventory: never[]; equipmentCosts: PostedEquipmentCost[] };

/** An AP invoice with its lines in the published shape, read back through the catalog (engines/query/read-records.ts). */
export async function readPostedApInvoice(db: Knex | Knex.Transaction, id: string): Promise<PostedApInvoice> {
  return (await readWrittenRecord(db, 'ap-invoices', id, { children: ['lines'] })) as unknown as PostedApInvoice;
}

/** Fields of the request that differ from the invoice already entered (empty when identical). */
export function differences(existing: PostedApInvoice, input: ApInvoiceInput): string[] {
  const out: string[] = [];
  const same = (a: number | null, b: Dec | undefined) => b === undefined || (a !== null && new Dec(a).equals(b));
  if (existing.invoiceDate !== input.invoiceDate) out.push('invoiceDate');
  if (!new Dec(existing.invoiceTotal).equals(input.invoiceTotal)) out.push('invoiceTotal');
  if (!same(existing.salesTax, input.salesTax)) out.push('salesTax');
  if (!new Dec(existing.retainage).equals(input.retainage)) out.push('retainage');
  if (existing.status !== input.status) out.push('status');
  if (input.jobNumber !== undefined && existing.jobNumber !== input.jobNumber) out.push('jobNumber');
  if (input.dueDate !== undefined && existing.dueDate !== input.dueDate) out.push('dueDate');
  if (periodDiffers(existing, input)) out.push('period');
  out.push(
    ...lineDifferences(
      existing.lines,
      input.lines,
      (other, line) =>
        !new Dec(other.extendedTotal).equals(line.extendedTotal) ||
        !new Dec(other.salesTax).equals(line.salesTax) ||
        (line.ledgerAccount !== undefined && other.ledgerAccount !== line.ledgerAccount) ||
        (line.jobNumber !== undefined && other.jobNumber !== line.jobNumber) ||
        (line.phaseNumber !== undefined && other.phaseNumber !== line.phaseNumber) ||
        (line.costType !== undefined && other.costType !== line.costType) ||
        // No default: an absent equipmentNumber is stored as none.
        other.equipmentNumber !== (line.equipmentNumber ?? null) ||
        !same(other.costCode, line.costCode) ||
        !same(other.quantity, line.quantity) ||
        !same(other.unitPrice, line.unitPrice),
    ),
  );
  return out;
}

/** The invoice `id` already entered, as the write result of its posting (a replayed duplicate). */
export async function existingResult(ctx: RecordsContext, id: string): Promise<ApInvoiceWriteResult> {
  const document = await readPostedApInvoice(ctx.trx, id);
  const result = await readWriteResultOf(ctx, AP_SOURCE, document, { inventory: false });
  return { ...result, equipmentCosts: await readEquipmentCostsOf(ctx.trx, AP_SOURCE, document.recordNumber), inventory: [] };
}

