import type { components } from '../../../../../generated/api-types';
import { InputErrors, calendarDate } from '../../input';

/**
 * POST /service-invoices/post, the input: the body (typed from the contract: generated/api-types.ts),
 * its invoice date a real calendar date (400 before dispatch).
 */

export const SERVICE_SOURCE = 22;

export interface ServiceInvoicePostInput {
  recordNumber: number;
  invoiceDate?: string;
  partsLocation?: number;
  receivableAccount?: number;
  costOfGoodsAccount?: number;
  period?: number;
  year?: number;
}

const optInt = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : Number(v));

/** The request body as the contract defines it (generated/api-types.ts). */
type ServiceWorkOrderPostBody = components['schemas']['ServiceWorkOrderPostInput'];

export function prepareServiceInvoicePost(body: unknown): ServiceInvoicePostInput {
  // Shapes, types and ranges were checked by the contract validator (400 naming the field).
  // The contract validator has checked the body against ServiceWorkOrderPostInput before dispatch.
  const b = (body ?? {}) as ServiceWorkOrderPostBody;
  const errors = new InputErrors();
  const input: ServiceInvoicePostInput = { recordNumber: Number(b.recordNumber) };
  const invoiceDate = calendarDate(b.invoiceDate, 'invoiceDate', errors);
  errors.throwIfAny();
  if (invoiceDate !== undefined) input.invoiceDate = invoiceDate;
  const partsLocation = optInt(b.partsLocation);
  if (partsLocation !== undefined) input.partsLocation = partsLocation;
  const receivable = optInt(b.receivableAccount);
  if (receivable !== undefined) input.receivableAccount = receivable;
  const cogs = optInt(b.costOfGoodsAccount);
  if (cogs !== undefined) input.costOfGoodsAccount = cogs;
  if (b.period !== undefined) input.period = b.period;
  if (b.year !== undefined) input.year = b.year;
  return input;
}
