import type { components } from '../../../../../generated/api-types';
import { ApiProblem, type FieldError } from '../../../../errors/problem';
import { Dec } from '../../../../storage/decimal';
import { SCALE } from '../../context';
import { InputErrors, exactDecimal, uniqueLineNumbers, zero } from '../../input';

/**
 * POST /ap-invoices, the input: the body (typed from the contract: generated/api-types.ts) parsed
 * into exact decimals (400 before dispatch), and the 422s decided from the body alone.
 */

export const AP_SOURCE = 11;
export const STATUS_OPEN = 1;
export const STATUS_REVIEW = 2;
export const STATUS_VOID = 5;

/** The request body; `status` may be absent (1, Open). */
export type ApInvoiceBody = Omit<components['schemas']['ApInvoiceInput'], 'status'> & { status?: 1 | 2 };
export type ApInvoiceLineBody = components['schemas']['ApInvoiceLineInput'];

export interface ApLineInput {
  index: number;
  lineNumber: number;
  ledgerAccount?: number;
  description: string;
  jobNumber?: number;
  phaseNumber?: number;
  costCode?: Dec;
  costType?: number;
  equipmentNumber?: number;
  quantity?: Dec;
  unitPrice?: Dec;
  extendedTotal: Dec;
  salesTax: Dec;
}

export interface ApInvoiceInput {
  vendorNumber: number;
  invoiceNumber: string;
  invoiceDate: string;
  dueDate?: string;
  description: string;
  jobNumber?: number;
  phaseNumber?: number;
  orderNumber?: string;
  status: number;
  invoiceTotal: Dec;
  salesTax?: Dec;
  retainage: Dec;
  period?: number;
  year?: number;
  lines: ApLineInput[];
}

const optInt = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : Number(v));

export function prepareApInvoice(body: unknown): ApInvoiceInput {
  // The contract validator has checked the body against ApInvoiceInput before dispatch.
  const b = (body ?? {}) as ApInvoiceBody;
  const errors = new InputErrors();
  const rawLines: ApInvoiceLineBody[] = Array.isArray(b.lines) ? b.lines : [];
  const lines: ApLineInput[] = rawLines.map((l, i) => {
    const at = (f: string) => `lines[${i}].${f}`;
    const line: ApLineInput = {
      index: i,
      lineNumber: Number(l.lineNumber),
      description: typeof l.description === 'string' ? l.description : '',
      extendedTotal: exactDecimal(l.extendedTotal, at('extendedTotal'), SCALE.money, errors) ?? zero(),
      salesTax: exactDecimal(l.salesTax, at('salesTax'), SCALE.money, errors) ?? zero(),
    };
    const ledgerAccount = optInt(l.ledgerAccount);
    if (ledgerAccount !== undefined) line.ledgerAccount = ledgerAccount;
    const jobNumber = optInt(l.jobNumber);
    if (jobNumber !== undefined) line.jobNumber = jobNumber;
    const phaseNumber = optInt(l.phaseNumber);
    if (phaseNumber !== undefined) line.phaseNumber = phaseNumber;
    const costType = optInt(l.costType);
    if (costType !== undefined) line.costType = costType;
    const equipmentNumber = optInt(l.equipmentNumber);
    if (equipmentNumber !== undefined) line.equipmentNumber = equipmentNumber;
    const costCode = exactDecimal(l.costCode, at('costCode'), SCALE.costCode, errors);
    if (costCode) line.costCode = costCode;
    const quantity = exactDecimal(l.quantity, at('quantity'), SCALE.quantity, errors);
    if (quantity) line.quantity = quantity;
    const unitPrice = exactDecimal(l.unitPrice, at('unitPrice'), SCALE.price, errors);
    if (unitPrice) line.unitPrice = unitPrice;
    return line;
  });
  uniqueLineNumbers(lines, errors);
  const invoiceTotal = exactDecimal(b.invoiceTotal, 'invoiceTotal', SCALE.money, errors) ?? zero();
  const salesTax = exactDecimal(b.salesTax, 'salesTax', SCALE.money, errors);
  const retainage = exactDecimal(b.retainage, 'retainage', SCALE.money, errors) ?? zero();
  errors.throwIfAny();
  const input: ApInvoiceInput = {
    vendorNumber: Number(b.vendorNumber),
    invoiceNumber: String(b.invoiceNumber),
    invoiceDate: String(b.invoiceDate),
    description: typeof b.description === 'string' ? b.description : '',
    status: b.status === undefined ? STATUS_OPEN : Number(b.status),
    invoiceTotal,
    retainage,
    lines,
  };
  if (typeof b.dueDate === 'string') input.dueDate = b.dueDate;
  const jobNumber = optInt(b.jobNumber);
  if (jobNumber !== undefined) input.jobNumber = jobNumber;
  const phaseNumber = optInt(b.phaseNumber);
  if (phaseNumber !== undefined) input.phaseNumber = phaseNumber;
  if (typeof b.orderNumber === 'string') input.orderNumber = b.orderNumber;
  if (salesTax) input.salesTax = salesTax;
  if (b.period !== undefined) input.period = b.period;
  if (b.year !== undefined) input.year = b.year;
  return input;
}

export const jobOf = (input: ApInvoiceInput, line: ApLineInput) => line.jobNumber ?? input.jobNumber;
export const phaseOf = (input: ApInvoiceInput, line: ApLineInput) => line.phaseNumber ?? (line.jobNumber === undefined || line.jobNumber === input.jobNumber ? input.phaseNumber : undefined);

/** 422 TOTALS_DISAGREE / BUSINESS_RULE_VIOLATED decided from the body alone. */
export function checkApTotals(input: ApInvoiceInput): void {
  const errors: FieldError[] = [];
  const texts: string[] = [];
  let lineTotal = new Dec(0);
  let lineTax = new Dec(0);
  for (const line of input.lines) {
    lineTotal = lineTotal.plus(line.extendedTotal);
    lineTax = lineTax.plus(line.salesTax);
    if (line.quantity !== undefined && line.unitPrice !== undefined) {
      const extended = line.quantity.times(line.unitPrice).toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);
      if (!extended.equals(line.extendedTotal)) {
        errors.push({ field: `lines[${line.index}].extendedTotal`, code: 'totals_disagree', message: `quantity x unitPrice = ${extended.toFixed(2)}` });
        texts.push(`lines[${line.index}].extendedTotal is ${line.extendedTotal.toFixed(2)} but quantity x unitPrice is ${extended.toFixed(2)}`);
      }
    }
  }
  if (input.salesTax !== undefined && !input.salesTax.equals(lineTax)) {
    errors.push({ field: 'salesTax', code: 'totals_disagree', message: `sum of lines[].salesTax = ${lineTax.toFixed(2)}` });
    texts.push(`salesTax is ${input.salesTax.toFixed(2)} but the lines carry ${lineTax.toFixed(2)}`);
  }
  const expected = lineTotal.plus(lineTax);
  if (!expected.equals(input.invoiceTotal)) {
    errors.push({ field: 'invoiceTotal', code: 'totals_disagree', message: `sum of lines[].extendedTotal + salesTax = ${expected.toFixed(2)}` });
    texts.push(`invoiceTotal is ${input.invoiceTotal.toFixed(2)} but the lines add up to ${expected.toFixed(2)} (extended ${lineTotal.toFixed(2)} + tax ${lineTax.toFixed(2)})`);
  }
  if (errors.length > 0) throw new ApiProblem('TOTALS_DISAGREE', `The totals disagree with the lines: ${texts.join('; ')}.`, { errors });
  if (input.retainage.greaterThan(input.invoiceTotal)) {
    throw new ApiProblem('BUSINESS_RULE_VIOLATED', `retainage ${input.retainage.toFixed(2)} exceeds invoiceTotal ${input.invoiceTotal.toFixed(2)}.`, {
      errors: [{ field: 'retainage', code: 'exceeds_total' }],
    });
  }
}
