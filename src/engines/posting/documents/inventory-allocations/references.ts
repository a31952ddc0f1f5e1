import { Dec } from '../../../../storage/decimal';
import type { PostingContext } from '../../context';
import { ReferenceCheck, checkCostCodesAndTypes, loadReferenceRows, loadReferenced, phaseOf } from '../../ledger/references';
import { fitText, records } from '../../records';
import { ALLOCATION_SOURCE, PURPOSE, STATUS, type AllocationInput, type AllocationLineInput } from './input';

/**
 * POST /inventory-allocations, the references: the locations (and their inventory accounts, else
 * the ledger setup's), the job and phase of a consumption, the parts (their average cost, default
 * cost code and type), cost codes and types, and what posting needs from the setup. 404 when
 * missing, 422 when not usable, every finding at once.
 */

/** Job status 6 and phase status 3: closed. */
const JOB_CLOSED = 6;
const PHASE_CLOSED = 3;

interface ResolvedLine {
  line: AllocationLineInput;
  description: string;
  average: Dec;
  costCode: Dec | null;
  costType: number | null;
}

export interface Resolved {
  lines: ResolvedLine[];
  fromAccount: number | null;
  toAccount: number | null;
  directExpenseAccount: number | null;
  adjustmentAccount: number | null;
}

/** Looks up every referenced record (404 for each missing one, 422 for unusable ones) and the accounts. */
export async function resolve(ctx: PostingContext, input: AllocationInput, setup: { directExpenseAccount: number | null }): Promise<Resolved> {
  const check = new ReferenceCheck();
  const ledgerSetup = (await records(ctx, 'ledger-setups').orderBy('recordNumber').first(['inventoryAccount', 'inventoryAdjustmentAccount'])) ?? {};
  const setupInventory: number | null = ledgerSetup.inventoryAccount ?? null;

  const locationRefs = [{ field: 'fromLocation', value: input.fromLocation }];
  if (input.toLocation !== undefined) locationRefs.push({ field: 'toLocation', value: input.toLocation });
  const locations = await loadReferenced(ctx, 'inventory-locations', 'recordNumber', locationRefs, ['inventoryAccount', 'inactive']);
  for (const ref of locationRefs) {
    const loc = locations.get(String(ref.value));
    if (!loc) check.notFound(ref.field, `inventory location ${ref.value}`);
    else if (loc.inactive) check.notPostable(ref.field, `inventory location ${ref.value} is inactive`, 'inactive');
  }
  const accountOf = (n: number | undefined): number | null => (n === undefined ? null : (locations.get(String(n))?.inventoryAccount ?? setupInventory));

  if (input.jobNumber !== undefined) {
    const jobs = await loadReferenceRows(ctx, 'jobs', [{ field: 'jobNumber', value: input.jobNumber }], ['status']);
    const job = jobs.get(String(input.jobNumber));
    if (!job) check.notFound('jobNumber', `job ${input.jobNumber}`);
    else {
      if (job.status === JOB_CLOSED) check.notPostable('jobNumber', `job ${input.jobNumber} is closed`, 'closed');
      if (input.phaseNumber !== undefined) {
        const phase = await phaseOf(ctx, input.jobNumber, input.phaseNumber);
        if (!phase) check.notFound('phaseNumber', `phase ${input.phaseNumber} of job ${input.jobNumber}`);
        else if (phase.status === PHASE_CLOSED) check.notPostable('phaseNumber', `phase ${input.phaseNumber} of job ${input.jobNumber} is closed`, 'closed');
      }
    }
  }

  const partRefs = input.lines.map((l) => ({ field: `lines[${l.index}].partNumber`, value: l.partNumber }));
  const parts = await loadReferenced(ctx, 'parts', 'recordNumber', partRefs, ['partName', 'averageCost', 'costCode', 'costType', 'inactive']);
  const lines: ResolvedLine[] = [];
  for (const line of input.lines) {
    const field = `lines[${line.index}].partNumber`;
    const part = parts.get(String(line.partNumber));
    if (!part) {
      check.notFound(field, `part ${line.partNumber}`);
      continue;
    }
    if (part.inactive) check.notPostable(field, `part ${line.partNumber} is inactive`, 'inactive');
    const consume = input.purpose === PURPOSE.consume;
    const costCode: Dec | null = consume ? (line.costCode ?? part.costCode) : null;
    const costType: number | null = consume ? (line.costType ?? part.costType ?? 1) : null;
    if (consume && costCode === null) check.notPostable(`lines[${line.index}].costCode`, `a job line needs a cost code and part ${line.partNumber} has no default`, 'required');
    lines.push({
      line,
      description: fitText('inventory-allocations.lines', 'description', line.description ?? String(part.partName ?? '')),
      average: part.averageCost ?? new Dec(0),
      costCode,
      costType,
    });
  }
  await checkCostCodesAndTypes(ctx, check, lines);

  const resolved: Resolved = {
    lines,
    fromAccount: accountOf(input.fromLocation),
    toAccount: accountOf(input.toLocation),
    directExpenseAccount: setup.directExpenseAccount,
    adjustmentAccount: ledgerSetup.inventoryAdjustmentAccount ?? null,
  };
  // What posting needs from the setup (only when the allocation posts).
  if (input.status === STATUS.shipped) {
    if (locations.has(String(input.fromLocation)) && resolved.fromAccount === null) {
      check.notPostable('fromLocation', `inventory location ${input.fromLocation} has no inventory account and the ledger setup none either`, 'setup_incomplete');
    }
    if (input.toLocation !== undefined && locations.has(String(input.toLocation)) && resolved.toAccount === null) {
      check.notPostable('toLocation', `inventory location ${input.toLocation} has no inventory account and the ledger setup none either`, 'setup_incomplete');
    }
    if (input.purpose === PURPOSE.consume && resolved.directExpenseAccount === null) check.notPostable('purpose', 'the ledger setup has no direct expense account', 'setup_incomplete');
    if ((input.purpose === PURPOSE.loss || input.purpose === PURPOSE.revaluation) && resolved.adjustmentAccount === null) {
      check.notPostable('purpose', 'the ledger setup has no inventory adjustment account', 'setup_incomplete');
    }
    const source = await records(ctx, 'transaction-sources').where({ recordNumber: ALLOCATION_SOURCE }).first(['recordNumber']);
    if (!source) check.notPostable('status', `transaction source ${ALLOCATION_SOURCE} (Inventory Allocation) does not exist`, 'setup_incomplete');
  }
  check.throwIfAny();
  return resolved;
}
