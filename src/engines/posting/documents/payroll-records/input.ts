import type { components } from '../../../../../generated/api-types';
import { InputErrors } from '../../input';

/**
 * POST /payroll-records/post, the input: the body (typed from the contract: generated/api-types.ts)
 * checked for what JSON Schema cannot say (one of periodEndDate or recordNumbers, distinct numbers),
 * 400 before dispatch.
 */

export const PAYROLL_SOURCE = 16;
/** Records a batch may name. */
const MAX_RECORDS = 1000;

export interface PayrollPostInput {
  periodEndDate?: string;
  recordNumbers?: number[];
  bankAccountNumber?: number;
  period?: number;
  year?: number;
}

/** The request body as the contract defines it (generated/api-types.ts). */
type PayrollPostBody = components['schemas']['PayrollPostInput'];

export function preparePayrollPost(body: unknown): PayrollPostInput {
  // The contract validator has checked the body against PayrollPostInput before dispatch.
  const b = (body ?? {}) as PayrollPostBody;
  const errors = new InputErrors();
  const byDate = b.periodEndDate !== undefined;
  const byNumbers = b.recordNumbers !== undefined;
  if (byDate === byNumbers) {
    const why = byDate ? 'give periodEndDate or recordNumbers, not both' : 'periodEndDate or recordNumbers is required';
    errors.add('periodEndDate', 'one_of', why);
    errors.add('recordNumbers', 'one_of', why);
  }
  const input: PayrollPostInput = {};
  if (byNumbers) {
    const numbers: unknown[] = Array.isArray(b.recordNumbers) ? b.recordNumbers : [];
    if (numbers.length === 0) errors.add('recordNumbers', 'min_items', 'must name at least one payroll record');
    if (numbers.length > MAX_RECORDS) errors.add('recordNumbers', 'max_items', `at most ${MAX_RECORDS} records per batch`);
    const seen = new Map<number, number>();
    numbers.forEach((raw, i) => {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 1) errors.add(`recordNumbers[${i}]`, 'type', 'must be a positive integer');
      const first = seen.get(n);
      if (first !== undefined) errors.add(`recordNumbers[${i}]`, 'unique', `record ${n} repeats recordNumbers[${first}]`);
      else seen.set(n, i);
    });
    input.recordNumbers = numbers.map(Number);
  }
  if (byDate) input.periodEndDate = String(b.periodEndDate);
  errors.throwIfAny();
  if (b.bankAccountNumber !== undefined) input.bankAccountNumber = Number(b.bankAccountNumber);
  if (b.period !== undefined) input.period = b.period;
  if (b.year !== undefined) input.year = b.year;
  return input;
}
