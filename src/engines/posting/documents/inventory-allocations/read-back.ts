import type { Knex } from 'knex';
import type { components } from '../../../../../generated/api-types';
import { Dec } from '../../../../storage/decimal';
import { readWriteResultOf, type WriteResult } from '../../ledger/posted-result';
import { readWrittenRecord, type FullRecordWithLines, type RecordsContext } from '../../records';
import { lineDifferences, periodDiffers } from '../../resend';
import { ALLOCATION_SOURCE, type AllocationInput } from './input';

/**
 * POST /inventory-allocations, the read-back: the allocation as the query engine reads it (through
 * the catalog), and the comparison of a re-sent allocation with the one already entered.
 */

/** An allocation as POST /inventory-allocations/query returns it with `children: ['lines']`. */
export type PostedAllocation = FullRecordWithLines<components['schemas']['InventoryAllocation'], components['schemas']['InventoryAllocationLine']>;

export type AllocationWriteResult = WriteResult<PostedAllocation>;

/** An allocation with its lines, read back through the catalog (engines/query/read-records.ts). */
export async function readAllocation(db: Knex | Knex.Transaction, id: string): Promise<PostedAllocation> {
  return (await readWrittenRecord(db, 'inventory-allocations', id, { children: ['lines'] })) as unknown as PostedAllocation;
}

/** Fields of the request that differ from the allocation already entered (empty when identical). */
export function differences(existing: PostedAllocation, input: AllocationInput): string[] {
  const out: string[] = [];
  if (existing.transactionDate !== input.allocationDate) out.push('allocationDate');
  if (existing.status !== input.status) out.push('status');
  if (existing.purpose !== input.purpose) out.push('purpose');
  if (existing.fromLocation !== input.fromLocation) out.push('fromLocation');
  if (existing.toLocation !== (input.toLocation ?? null)) out.push('toLocation');
  if (existing.jobNumber !== (input.jobNumber ?? null)) out.push('jobNumber');
  if (existing.phaseNumber !== (input.phaseNumber ?? null)) out.push('phaseNumber');
  if (input.description !== '' && existing.description !== input.description) out.push('description');
  if (periodDiffers(existing, input)) out.push('period');
  out.push(
    ...lineDifferences(
      existing.lines,
      input.lines,
      (other, line) =>
        other.partNumber !== line.partNumber ||
        !new Dec(other.quantity).equals(line.quantity) ||
        (line.newUnitCost !== undefined && !new Dec(other.unitCost).equals(line.newUnitCost)) ||
        (line.costCode !== undefined && (other.costCode === null || !new Dec(other.costCode).equals(line.costCode))) ||
        (line.costType !== undefined && other.costType !== line.costType) ||
        (line.description !== undefined && other.description !== line.description),
    ),
  );
  return out;
}

/** The allocation `id` already entered, as the write result of its posting (a replayed duplicate). */
export async function existingResult(ctx: RecordsContext, id: string): Promise<AllocationWriteResult> {
  return readWriteResultOf(ctx, ALLOCATION_SOURCE, await readAllocation(ctx.trx, id));
}
