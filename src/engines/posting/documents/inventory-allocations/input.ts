import type { components } from '../../../../../generated/api-types';
import { Dec } from '../../../../storage/decimal';
import { SCALE } from '../../context';
import { InputErrors, exactDecimal, uniqueLineNumbers } from '../../input';

/**
 * POST /inventory-allocations, the input: the body (typed from the contract: generated/api-types.ts)
 * parsed into exact decimals, and what each purpose needs and refuses (400 before dispatch).
 */

export const ALLOCATION_SOURCE = 23;
export const STATUS = { open: 1, review: 2, hold: 3, shipped: 4 } as const;
export const PURPOSE = { transfer: 1, consume: 2, loss: 3, revaluation: 4 } as const;

export interface AllocationLineInput {
  index: number;
  lineNumber: number;
  partNumber: number;
  description?: string;
  quantity: Dec;
  newUnitCost?: Dec;
  costCode?: Dec;
  costType?: number;
}

export interface AllocationInput {
  allocationNumber: string;
  allocationDate: string;
  description: string;
  status: number;
  purpose: number;
  fromLocation: number;
  toLocation?: number;
  jobNumber?: number;
  phaseNumber?: number;
  period?: number;
  year?: number;
  lines: AllocationLineInput[];
}

const optInt = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : Number(v));

/** The request body (typed from the contract: generated/api-types.ts); `status` may be absent (1, Open). */
export type AllocationBody = Omit<components['schemas']['InventoryAllocationInput'], 'status'> & { status?: components['schemas']['InventoryAllocationInput']['status'] };
export type AllocationLineBody = components['schemas']['InventoryAllocationLineInput'];

export function prepareAllocation(body: unknown): AllocationInput {
  // The contract validator has checked the body against InventoryAllocationInput before dispatch.
  const b = (body ?? {}) as AllocationBody;
  const errors = new InputErrors();
  const purpose = Number(b.purpose);
  const status = b.status === undefined ? STATUS.open : Number(b.status);
  const rawLines: AllocationLineBody[] = Array.isArray(b.lines) ? b.lines : [];
  const lines: AllocationLineInput[] = rawLines.map((l, i) => {
    const at = (f: string) => `lines[${i}].${f}`;
    const quantity = exactDecimal(l.quantity, at('quantity'), SCALE.quantity, errors);
    const newUnitCost = exactDecimal(l.newUnitCost, at('newUnitCost'), SCALE.price, errors);
    const costCode = exactDecimal(l.costCode, at('costCode'), SCALE.costCode, errors);
    const line: AllocationLineInput = { index: i, lineNumber: Number(l.lineNumber), partNumber: Number(l.partNumber), quantity: quantity ?? new Dec(0) };
    if (typeof l.description === 'string') line.description = l.description;
    if (newUnitCost) line.newUnitCost = newUnitCost;
    if (costCode) line.costCode = costCode;
    const costType = optInt(l.costType);
    if (costType !== undefined) line.costType = costType;
    // What each purpose needs and refuses (decided from the body: a 400 that keeps the key).
    if (purpose === PURPOSE.revaluation) {
      if (l.quantity !== undefined) errors.add(at('quantity'), 'not_allowed', 'a revaluation moves no quantity: give newUnitCost only');
      if (l.newUnitCost === undefined) errors.add(at('newUnitCost'), 'required', 'a revaluation line needs newUnitCost');
    } else {
      if (l.quantity === undefined) errors.add(at('quantity'), 'required', 'required for a transfer, consumption or loss');
      if (l.newUnitCost !== undefined) errors.add(at('newUnitCost'), 'not_allowed', 'only a revaluation (purpose 4) takes newUnitCost');
    }
    if (purpose !== PURPOSE.consume) {
      if (l.costCode !== undefined) errors.add(at('costCode'), 'not_allowed', 'only a consumption on a job (purpose 2) takes a cost code');
      if (l.costType !== undefined) errors.add(at('costType'), 'not_allowed', 'only a consumption on a job (purpose 2) takes a cost type');
    }
    return line;
  });
  uniqueLineNumbers(lines, errors);
  const toLocation = optInt(b.toLocation);
  const jobNumber = optInt(b.jobNumber);
  const phaseNumber = optInt(b.phaseNumber);
  if (purpose === PURPOSE.transfer) {
    if (toLocation === undefined) errors.add('toLocation', 'required', 'a transfer (purpose 1) needs toLocation');
    else if (toLocation === Number(b.fromLocation)) errors.add('toLocation', 'same_location', 'a transfer needs two different locations');
  } else if (toLocation !== undefined) errors.add('toLocation', 'not_allowed', 'only a transfer (purpose 1) takes toLocation');
  if (purpose === PURPOSE.consume) {
    if (jobNumber === undefined) errors.add('jobNumber', 'required', 'a consumption on a job (purpose 2) needs jobNumber');
  } else {
    if (jobNumber !== undefined) errors.add('jobNumber', 'not_allowed', 'only a consumption on a job (purpose 2) takes jobNumber');
    if (phaseNumber !== undefined) errors.add('phaseNumber', 'not_allowed', 'only a consumption on a job (purpose 2) takes phaseNumber');
  }
  if (purpose === PURPOSE.revaluation && status === STATUS.hold) errors.add('status', 'not_allowed', 'a revaluation holds no stock: send status 4 to post it, 1 or 2 to store it');
  errors.throwIfAny();
  const input: AllocationInput = {
    allocationNumber: String(b.allocationNumber),
    allocationDate: String(b.allocationDate),
    description: typeof b.description === 'string' ? b.description : '',
    status,
    purpose,
    fromLocation: Number(b.fromLocation),
    lines,
  };
  if (toLocation !== undefined) input.toLocation = toLocation;
  if (jobNumber !== undefined) input.jobNumber = jobNumber;
  if (phaseNumber !== undefined) input.phaseNumber = phaseNumber;
  if (b.period !== undefined) input.period = b.period;
  if (b.year !== undefined) input.year = b.year;
  return input;
}
