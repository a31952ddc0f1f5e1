import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ApiProblem } from '../../../../errors/problem';
import { Dec } from '../../../../storage/decimal';
import type { NumberAllocator } from '../../../../storage/numbers';
import { SCALE, type PostingContext } from '../../context';
import { InputErrors, exactDecimal, uniqueLineNumbers } from '../../input';
import type { components } from '../../../../../generated/api-types';
import { writeJournal, type JournalLine } from '../../ledger/journal';
import { childRow, childTableOf, insertRecords, readRecord, recordRow, tableOf, type FullRecordWithLines } from '../../records';
import { writeJobCosts, type JobCostToWrite } from '../../ledger/job-costs';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { readWriteResultOf, type WriteResult } from '../../ledger/posted-result';
import { ReferenceCheck, checkCostCodesAndTypes, loadReferenceRows, loadReferenced, phaseOf } from '../../ledger/references';
import { MOVEMENT, applyStockMovements, type StockMovement } from '../../ledger/stock';
import { lineDifferences, periodDiffers } from '../../resend';
import type { PostOutcome, WriteDefinition } from '../../runner';

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
 *     2 consumption  out of fromLocation; per line an inventory-consumed row and a job cost; journal
 *                    debit direct expense (job-coded), credit the location's inventory account
 *     3 loss         out of fromLocation; debit the setup's inventory adjustment account
 *     4 revaluation  the part's average becomes newUnitCost; the change in value between the
 *                    location's inventory account and the adjustment account
 *
 * A location's inventory account is invloc.lgract, else the ledger setup's inventory account.
 */

export const ALLOCATION_SOURCE = 23;
const STATUS = { open: 1, review: 2, hold: 3, shipped: 4 } as const;
const PURPOSE = { transfer: 1, consume: 2, loss: 3, revaluation: 4 } as const;

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

/** An allocation as POST /inventory-allocations/query returns it with `children: ['lines']`. */
export type PostedAllocation = FullRecordWithLines<components['schemas']['InventoryAllocation'], components['schemas']['InventoryAllocationLine']>;

export type AllocationWriteResult = WriteResult<PostedAllocation>;

interface Numbers {
  allocationRecord: number;
  ledgerRecord: number | null;
  jobCostRecords: number[];
  consumedRecords: number[];
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

/** An allocation with its lines, read back through the catalog (read-back.ts). */
export async function readAllocation(db: Knex | Knex.Transaction, id: string): Promise<PostedAllocation> {
  const record = await readRecord(db, 'inventory-allocations', id, { children: ['lines'] });
  if (!record) throw new Error(`inventory allocation ${id} not found in its own transaction`);
  return record as unknown as PostedAllocation;
}

/** Fields of the request that differ from the allocation already entered (empty when identical). */
function differences(existing: PostedAllocation, input: AllocationInput): string[] {
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

async function existingResult(ctx: PostingContext, id: string): Promise<AllocationWriteResult> {
  return readWriteResultOf(ctx, ALLOCATION_SOURCE, await readAllocation(ctx.trx, id));
}

interface ResolvedLine {
  line: AllocationLineInput;
  description: string;
  average: Dec;
  costCode: Dec | null;
  costType: number | null;
}

interface Resolved {
  lines: ResolvedLine[];
  fromAccount: number | null;
  toAccount: number | null;
  directExpenseAccount: number | null;
  adjustmentAccount: number | null;
}

/** Looks up every referenced record (404 for each missing one, 422 for unusable ones) and the accounts. */
async function resolve(ctx: PostingContext, input: AllocationInput, setup: { directExpenseAccount: number | null }): Promise<Resolved> {
  const { trx } = ctx;
  const check = new ReferenceCheck();
  const extra = (await trx('lgrstp').orderBy('recnum').first('invact', 'invadj')) ?? {};
  const setupInventory = optInt(extra.invact) ?? null;

  const locationRefs = [{ field: 'fromLocation', value: input.fromLocation }];
  if (input.toLocation !== undefined) locationRefs.push({ field: 'toLocation', value: input.toLocation });
  const locations = await loadReferenced(ctx, 'inventory-locations', 'recordNumber', locationRefs, ['inventoryAccount', 'inactive']);
  for (const ref of locationRefs) {
    const loc = locations.get(String(ref.value));
    if (!loc) check.notFound(ref.field, `inventory location ${ref.value}`);
    else if (loc.inactive) check.notPostable(ref.field, `inventory location ${ref.value} is inactive`, 'inactive');
  }
  const accountOf = (n: number | undefined) => (n === undefined ? null : (optInt(locations.get(String(n))?.inventoryAccount) ?? setupInventory));

  if (input.jobNumber !== undefined) {
    const jobs = await loadReferenceRows(ctx, 'jobs', [{ field: 'jobNumber', value: input.jobNumber }], ['status']);
    const job = jobs.get(String(input.jobNumber));
    if (!job) check.notFound('jobNumber', `job ${input.jobNumber}`);
    else {
      if (Number(job.status) === 6) check.notPostable('jobNumber', `job ${input.jobNumber} is closed`, 'closed');
      if (input.phaseNumber !== undefined) {
        const phase = await phaseOf(ctx, input.jobNumber, input.phaseNumber);
        if (!phase) check.notFound('phaseNumber', `phase ${input.phaseNumber} of job ${input.jobNumber}`);
        else if (Number(phase.status) === 3) check.notPostable('phaseNumber', `phase ${input.phaseNumber} of job ${input.jobNumber} is closed`, 'closed');
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
    const costCode = consume ? (line.costCode ?? part.costCode) : null;
    const costType = consume ? (line.costType ?? part.costType ?? 1) : null;
    if (consume && costCode === null) check.notPostable(`lines[${line.index}].costCode`, `a job line needs a cost code and part ${line.partNumber} has no default`, 'required');
    lines.push({
      line,
      description: (line.description ?? String(part.partName ?? '')).slice(0, 50),
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
    adjustmentAccount: optInt(extra.invadj) ?? null,
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
    const source = await trx('source').where({ recnum: ALLOCATION_SOURCE }).first('recnum');
    if (!source) check.notPostable('status', `transaction source ${ALLOCATION_SOURCE} (Inventory Allocation) does not exist`, 'setup_incomplete');
  }
  check.throwIfAny();
  return resolved;
}

const r2 = (v: Dec) => v.toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);

export const inventoryAllocationsWrite: WriteDefinition<AllocationInput, Numbers, AllocationWriteResult> = {
  route: '/inventory-allocations',
  what: 'entering an inventory allocation',
  prepare: prepareAllocation,

  async allocate(input, numbers: NumberAllocator): Promise<Numbers> {
    const ships = input.status === STATUS.shipped;
    const consume = ships && input.purpose === PURPOSE.consume;
    const got = await numbers.allocateMany({
      invalc: 1,
      lgrtrn: ships ? 1 : 0,
      jobcst: consume ? input.lines.length : 0,
      invcsm: consume ? input.lines.length : 0,
    });
    const range = (r: { first: number; count: number }) => Array.from({ length: r.count }, (_, i) => r.first + i);
    return {
      allocationRecord: got.invalc!.first,
      ledgerRecord: ships ? got.lgrtrn!.first : null,
      jobCostRecords: range(got.jobcst!),
      consumedRecords: range(got.invcsm!),
    };
  },

  async post(ctx, input, numbers): Promise<PostOutcome<AllocationWriteResult>> {
    const { trx } = ctx;

    // One allocation number is entered once: serialise, then look.
    await ctx.lockName(`invalc:${input.allocationNumber}`);
    const already = await trx('invalc').where({ alcnum: input.allocationNumber }).orderBy('recnum').first('_idnum');
    if (already) {
      const existing = await existingResult(ctx, String(already._idnum));
      const diff = differences(existing.document, input);
      if (diff.length === 0) return { result: existing, duplicate: true };
      throw new ApiProblem(
        'DOCUMENT_NUMBER_CONFLICT',
        `Allocation ${input.allocationNumber} was already entered (inventory allocation ${existing.document.recordNumber}) with different content: ${diff.join(', ')}.`,
        {
          errors: [{ field: 'allocationNumber', code: 'already_entered' }, ...diff.map((field) => ({ field, code: 'differs' }))],
          extensions: { existingRecordNumber: existing.document.recordNumber },
        },
      );
    }

    const periodRequest = { date: input.allocationDate, dateField: 'allocationDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const resolved = await resolve(ctx, input, setup);
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);
    const enteredDate = ctx.today;
    const recordNumber = numbers.allocationRecord;

    // Stock first (part locks before ledger balance rows: the lock order of every posting).
    const base = { sourceNumber: ALLOCATION_SOURCE, documentNumber: input.allocationNumber, sourceRecordNumber: recordNumber, transactionDate: input.allocationDate, enteredDate, period, year };
    const movements: StockMovement[] = [];
    const lineMovement: number[] = [];
    for (const r of resolved.lines) {
      const field = `lines[${r.line.index}]`;
      const q = r.line.quantity;
      lineMovement.push(movements.length);
      if (input.status === STATUS.hold) {
        movements.push({ ...base, field, partNumber: r.line.partNumber, locationNumber: input.fromLocation, movementType: MOVEMENT.consumed, quantity: q.negated(), onHand: false, available: true });
      } else if (input.status === STATUS.shipped) {
        const common = { ...base, field, partNumber: r.line.partNumber, onHand: true, available: true };
        if (input.purpose === PURPOSE.transfer) {
          movements.push({ ...common, locationNumber: input.fromLocation, movementType: MOVEMENT.transferOut, quantity: q.negated() });
          movements.push({ ...common, locationNumber: input.toLocation!, movementType: MOVEMENT.transferIn, quantity: q, valueFrom: movements.length - 1 });
        } else if (input.purpose === PURPOSE.consume) {
          movements.push({ ...common, locationNumber: input.fromLocation, movementType: MOVEMENT.consumed, quantity: q.negated() });
        } else if (input.purpose === PURPOSE.loss) {
          movements.push({ ...common, locationNumber: input.fromLocation, movementType: MOVEMENT.loss, quantity: q.negated() });
        } else {
          movements.push({ ...common, locationNumber: input.fromLocation, movementType: MOVEMENT.revaluation, quantity: new Dec(0), newAverageCost: r.line.newUnitCost! });
        }
      }
    }
    const stock = await applyStockMovements(ctx, movements);

    // Line costs: what the stock left at (Shipped), else an estimate at the current average.
    const costs = resolved.lines.map((r, i) => {
      if (input.status === STATUS.shipped) {
        const applied = stock.applied[lineMovement[i]!]!;
        if (input.purpose === PURPOSE.revaluation) return { unitCost: r.line.newUnitCost!, extended: applied.value };
        return { unitCost: applied.unitCost.toDecimalPlaces(SCALE.price, Dec.ROUND_HALF_UP), extended: applied.value.negated() };
      }
      if (input.purpose === PURPOSE.revaluation) return { unitCost: r.line.newUnitCost!, extended: new Dec(0) };
      return { unitCost: r.average, extended: r2(r.line.quantity.times(r.average)) };
    });
    const totalCost = costs.reduce((s, c) => s.plus(c.extended), new Dec(0));

    // The journal (Shipped only; none when nothing changes value or both sides share the account).
    const journalLines: JournalLine[] = [];
    let n = 0;
    const push = (ledgerAccount: number, description: string, amount: Dec, side: 'debit' | 'credit', jobNumber: number | null = null) => {
      if (amount.isZero()) return;
      journalLines.push({ lineNumber: (n += 1), ledgerAccount, description: description.slice(0, 50), debit: side === 'debit' ? amount : new Dec(0), credit: side === 'credit' ? amount : new Dec(0), jobNumber });
    };
    if (input.status === STATUS.shipped) {
      const from = resolved.fromAccount!;
      if (input.purpose === PURPOSE.transfer && resolved.toAccount !== from) {
        push(resolved.toAccount!, `Into location ${input.toLocation}`, totalCost, 'debit');
        push(from, `Out of location ${input.fromLocation}`, totalCost, 'credit');
      } else if (input.purpose === PURPOSE.consume) {
        resolved.lines.forEach((r, i) => push(resolved.directExpenseAccount!, r.description || 'Stock issued to job', costs[i]!.extended, 'debit', input.jobNumber!));
        push(from, 'Stock issued to job', totalCost, 'credit');
      } else if (input.purpose === PURPOSE.loss) {
        push(resolved.adjustmentAccount!, input.description || 'Inventory loss', totalCost, 'debit');
        push(from, 'Stock written off', totalCost, 'credit');
      } else if (input.purpose === PURPOSE.revaluation) {
        if (totalCost.isNegative()) {
          push(resolved.adjustmentAccount!, input.description || 'Inventory revaluation', totalCost.negated(), 'debit');
          push(from, 'Revaluation down', totalCost.negated(), 'credit');
        } else {
          push(from, 'Revaluation up', totalCost, 'debit');
          push(resolved.adjustmentAccount!, input.description || 'Inventory revaluation', totalCost, 'credit');
        }
      }
    }
    const posts = journalLines.length > 0;

    const allocationId = randomUUID();
    await trx(tableOf('inventory-allocations')).insert(
      recordRow(ctx, 'inventory-allocations', {
        id: allocationId,
        recordNumber,
        allocationNumber: input.allocationNumber,
        transactionDate: input.allocationDate,
        description: input.description,
        purpose: input.purpose,
        fromLocation: input.fromLocation,
        toLocation: input.toLocation ?? null,
        jobNumber: input.jobNumber ?? null,
        phaseNumber: input.phaseNumber ?? null,
        totalCost,
        status: input.status,
        enteredDate,
        enteredBy: ctx.user,
        period,
        year,
        ledgerRecordNumber: posts ? numbers.ledgerRecord : null,
      }),
    );
    const lineTable = childTableOf('inventory-allocations', 'lines');
    await insertRecords(
      trx,
      'inventory-allocations.lines',
      resolved.lines.map((r, i) =>
        childRow(
          ctx,
          'inventory-allocations',
          'lines',
          {
            id: randomUUID(),
            lineNumber: r.line.lineNumber,
            partNumber: r.line.partNumber,
            description: r.description,
            quantity: r.line.quantity,
            unitCost: costs[i]!.unitCost,
            extendedCost: costs[i]!.extended,
            costCode: r.costCode,
            costType: r.costType,
          },
          { [lineTable.parentColumn]: allocationId },
        ),
      ),
    );

    // The document as the query engine reads it (read-back.ts), not as built here.
    const document = await readAllocation(trx, allocationId);
    const result: AllocationWriteResult = { document, jobCosts: [], inventory: stock.inventory, period, year };
    if (posts) {
      result.ledgerTransaction = await writeJournal(ctx, {
        recordNumber: numbers.ledgerRecord!,
        transactionNumber: input.allocationNumber,
        transactionDate: input.allocationDate,
        enteredDate,
        description: (input.description || `Inventory allocation ${input.allocationNumber}`).slice(0, 50),
        sourceNumber: ALLOCATION_SOURCE,
        period,
        year,
        lines: journalLines,
      });
    }

    if (input.status === STATUS.shipped && input.purpose === PURPOSE.consume) {
      // A job cost per line, equal to what the ledger debits to direct expense for it, and the
      // consumption record. Stock of no value (nothing posted) makes no job cost: a job cost
      // always leads to the journal of its document.
      const jobCosts: JobCostToWrite[] = resolved.lines.map((r, i) => ({
        recordNumber: numbers.jobCostRecords[i]!,
        jobNumber: input.jobNumber!,
        phaseNumber: input.phaseNumber ?? null,
        costCode: r.costCode!,
        costType: r.costType!,
        transactionDate: input.allocationDate,
        description: `Stock: ${r.description}`.slice(0, 50),
        sourceNumber: ALLOCATION_SOURCE,
        documentNumber: input.allocationNumber,
        sourceRecordNumber: recordNumber,
        sourceLineNumber: r.line.lineNumber,
        vendorNumber: null,
        equipmentNumber: null,
        costAmount: costs[i]!.extended,
        enteredDate,
        period,
        year,
      }));
      if (posts) result.jobCosts = await writeJobCosts(ctx, jobCosts);
      await insertRecords(
        trx,
        'inventory-consumed',
        resolved.lines.map((r, i) =>
          recordRow(ctx, 'inventory-consumed', {
            id: randomUUID(),
            recordNumber: numbers.consumedRecords[i]!,
            partNumber: r.line.partNumber,
            locationNumber: input.fromLocation,
            jobNumber: input.jobNumber!,
            phaseNumber: input.phaseNumber ?? null,
            costCode: r.costCode!,
            costType: r.costType,
            transactionDate: input.allocationDate,
            quantity: r.line.quantity,
            unitCost: costs[i]!.unitCost,
            extendedCost: costs[i]!.extended,
            allocationRecordNumber: recordNumber,
            jobCostRecordNumber: posts ? numbers.jobCostRecords[i]! : null,
            enteredDate,
            enteredBy: ctx.user,
            period,
            year,
          }),
        ),
      );
    }
    return { result };
  },
};
