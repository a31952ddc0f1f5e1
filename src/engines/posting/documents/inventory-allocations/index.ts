import type { NumberAllocator } from '../../../../storage/numbers';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { allocateRecordNumbers, rangeValues, recordLockName, records, type RecordsContext } from '../../records';
import { resendConflict } from '../../resend';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { postAllocation, type AllocationNumbers } from './cascade';
import { PURPOSE, STATUS, prepareAllocation, type AllocationInput } from './input';
import { differences, existingResult, type AllocationWriteResult } from './read-back';
import { resolve } from './references';

/**
 * POST /inventory-allocations (source 23 Inventory Allocation; domain notes, "How it posts"):
 *
 *   status 1 Open, 2 Review   stored only: no stock moves, nothing posts (lines priced at the
 *                             part's current average as an estimate)
 *   status 3 Hold Stock       available at fromLocation reduced by each line (on hand unchanged,
 *                             so no history row and nothing to post)
 *   status 4 Shipped          stock moves (ledger/stock.ts) and, by purpose:
 *     1 transfer     out of fromLocation, into toLocation at the same value; journal between the
 *                    two locations' inventory accounts (none when they share one)
 *     2 consumption  out of fromLocation; per line an inventory-consumed record and a job cost;
 *                    journal debit direct expense (job-coded), credit the location's inventory account
 *     3 loss         out of fromLocation; debit the setup's inventory adjustment account
 *     4 revaluation  the part's average becomes newUnitCost; the change in value between the
 *                    location's inventory account and the adjustment account
 *
 * A location's inventory account is its own (inventoryAccount), else the ledger setup's.
 *
 *   input.ts       the body, and what each purpose needs and refuses (400 before dispatch)
 *   references.ts  locations, job and phase, parts, cost codes and types; the accounts
 *   cascade.ts     stock, the allocation and its lines, journal, job costs and consumption records
 *   read-back.ts   the allocation as the query engine reads it; duplicates
 */


/** The name `post` locks first (taken by the transaction's BEGIN where it can: runner.ts firstLock). */
const lockOf = (input: AllocationInput): string => recordLockName('inventory-allocations', [input.allocationNumber]);

/** The allocations entered under the input's number: read right after the lock (runner.ts firstRead). */
const enteredUnderNumber = (ctx: RecordsContext, input: AllocationInput) => records(ctx, 'inventory-allocations').where({ allocationNumber: input.allocationNumber }).orderBy('recordNumber');

export const inventoryAllocationsWrite: WriteDefinition<AllocationInput, AllocationNumbers, AllocationWriteResult> = {
  route: '/inventory-allocations',
  what: 'entering an inventory allocation',
  prepare: prepareAllocation,
  firstLock: lockOf,
  firstRead: (ctx, input) => enteredUnderNumber(ctx, input).firstStatement(['id']),

  async allocate(input, numbers: NumberAllocator): Promise<AllocationNumbers> {
    const ships = input.status === STATUS.shipped;
    const consume = ships && input.purpose === PURPOSE.consume;
    const got = await allocateRecordNumbers(numbers, {
      'inventory-allocations': 1,
      'ledger-transactions': ships ? 1 : 0,
      'job-costs': consume ? input.lines.length : 0,
      'inventory-consumed': consume ? input.lines.length : 0,
    });
    return {
      allocationRecord: got['inventory-allocations'].first,
      ledgerRecord: ships ? got['ledger-transactions'].first : null,
      jobCostRecords: rangeValues(got['job-costs']),
      consumedRecords: rangeValues(got['inventory-consumed']),
    };
  },

  async post(ctx, input, numbers): Promise<PostOutcome<AllocationWriteResult>> {
    const { trx } = ctx;

    // One allocation number is entered once: serialise, then look.
    await ctx.lockName(lockOf(input));
    const already = await enteredUnderNumber(ctx, input).first(['id']);
    if (already) {
      const existing = await existingResult(ctx, already.id);
      const diff = differences(existing.document, input);
      if (diff.length === 0) return { result: existing, duplicate: true };
      throw resendConflict(
        {
          code: 'DOCUMENT_NUMBER_CONFLICT',
          numberField: 'allocationNumber',
          numberCode: 'already_entered',
          detail: `Allocation ${input.allocationNumber} was already entered (inventory allocation ${existing.document.recordNumber})`,
          existingRecordNumber: existing.document.recordNumber,
        },
        diff,
      );
    }

    const periodRequest = { date: input.allocationDate, dateField: 'allocationDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const resolved = await resolve(ctx, input, setup);
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);
    const result = await postAllocation(ctx, input, resolved, numbers, { recordNumber: numbers.allocationRecord, enteredDate: ctx.today, period, year });
    return { result };
  },
};
