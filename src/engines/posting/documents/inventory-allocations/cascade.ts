import { randomUUID } from 'node:crypto';
import { Dec } from '../../../../storage/decimal';
import { SCALE, type PostingContext } from '../../context';
import { writeJournal, type JournalLine } from '../../ledger/journal';
import { writeJobCosts, type JobCostToWrite } from '../../ledger/job-costs';
import { MOVEMENT, applyStockMovements, type StockMovement, type StockResult } from '../../ledger/stock';
import { childRow, childTableOf, fitText, insertChildrenReturning, insertRecords, insertRecordsReturning, recordRow } from '../../records';
import { Pending } from '../../../../storage/statement-batch';
import { ALLOCATION_SOURCE, PURPOSE, STATUS, type AllocationInput } from './input';
import type { AllocationWriteResult, PostedAllocation } from './read-back';
import type { Resolved } from './references';

/**
 * POST /inventory-allocations, the cascade, inside the posting transaction once every check has
 * passed (the statuses and purposes: index.ts):
 *
 *   stock       first (part locks before ledger balance rows: the lock order of every posting)
 *   allocation  the allocation and its lines, each priced at what the stock left at (Shipped), else
 *               an estimate at the part's current average; read back as the query engine reads it
 *   journal     Shipped only; none when nothing changes value or both sides share the account
 *   job costs   a consumption on a job: one per line, with its inventory-consumed record
 */

export interface AllocationNumbers {
  allocationRecord: number;
  ledgerRecord: number | null;
  jobCostRecords: number[];
  consumedRecords: number[];
}

/** Where the allocation posts. */
export interface AllocationPosting {
  recordNumber: number;
  enteredDate: string;
  period: number;
  year: number;
}

interface LineCost {
  unitCost: Dec;
  extended: Dec;
}

const r2 = (v: Dec) => v.toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);

/** The stock movements of the allocation, and for each line the index of its (first) movement. */
function stockMovementsOf(input: AllocationInput, resolved: Resolved, at: AllocationPosting): { movements: StockMovement[]; lineMovement: number[] } {
  const { recordNumber, enteredDate, period, year } = at;
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
  return { movements, lineMovement };
}

/** Line costs: what the stock left at (Shipped), else an estimate at the current average. */
function lineCosts(input: AllocationInput, resolved: Resolved, stock: StockResult, lineMovement: number[]): LineCost[] {
  return resolved.lines.map((r, i) => {
    if (input.status === STATUS.shipped) {
      const applied = stock.applied[lineMovement[i]!]!;
      if (input.purpose === PURPOSE.revaluation) return { unitCost: r.line.newUnitCost!, extended: applied.value };
      return { unitCost: applied.unitCost.toDecimalPlaces(SCALE.price, Dec.ROUND_HALF_UP), extended: applied.value.negated() };
    }
    if (input.purpose === PURPOSE.revaluation) return { unitCost: r.line.newUnitCost!, extended: new Dec(0) };
    return { unitCost: r.average, extended: r2(r.line.quantity.times(r.average)) };
  });
}

/** The journal's lines (Shipped only; none when nothing changes value or both sides share the account). */
function journalLinesOf(input: AllocationInput, resolved: Resolved, costs: LineCost[], totalCost: Dec): JournalLine[] {
  const journalLines: JournalLine[] = [];
  let n = 0;
  const push = (ledgerAccount: number, description: string, amount: Dec, side: 'debit' | 'credit', jobNumber: number | null = null) => {
    if (amount.isZero()) return;
    journalLines.push({ lineNumber: (n += 1), ledgerAccount, description: fitText('ledger-transactions.lines', 'description', description), debit: side === 'debit' ? amount : new Dec(0), credit: side === 'credit' ? amount : new Dec(0), jobNumber });
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
  return journalLines;
}

/**
 * The allocation: stock moved, the allocation and its lines stored, then its journal and, for a
 * consumption on a job, its job costs and consumption records. Returns the write result.
 */
export async function postAllocation(ctx: PostingContext, input: AllocationInput, resolved: Resolved, numbers: AllocationNumbers, at: AllocationPosting): Promise<AllocationWriteResult> {
  const { recordNumber, enteredDate, period, year } = at;
  const { movements, lineMovement } = stockMovementsOf(input, resolved, at);
  const stock = await applyStockMovements(ctx, movements);
  const costs = lineCosts(input, resolved, stock, lineMovement);
  const totalCost = costs.reduce((s, c) => s.plus(c.extended), new Dec(0));
  const journalLines = journalLinesOf(input, resolved, costs, totalCost);
  const posts = journalLines.length > 0;

  const allocationId = randomUUID();
  // Written and read back in the same statements (records/insert.ts: the stored rows, decoded as
  // the query engine reads the allocation with its lines), not as built here.
  const header = insertRecordsReturning(ctx.writes, 'inventory-allocations', [
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
  ]);
  const lineTable = childTableOf('inventory-allocations', 'lines');
  const lines = insertChildrenReturning(
    ctx.writes,
    'inventory-allocations',
    'lines',
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

  const [[stored], storedLines] = await Pending.all(ctx.writes, [header, lines] as const);
  const document = { ...stored!, lines: storedLines } as unknown as PostedAllocation;
  const result: AllocationWriteResult = { document, jobCosts: [], inventory: stock.inventory, period, year };
  if (posts) {
    result.ledgerTransaction = await writeJournal(ctx, {
      recordNumber: numbers.ledgerRecord!,
      transactionNumber: input.allocationNumber,
      transactionDate: input.allocationDate,
      enteredDate,
      description: fitText('ledger-transactions', 'description', input.description || `Inventory allocation ${input.allocationNumber}`),
      sourceNumber: ALLOCATION_SOURCE,
      period,
      year,
      lines: journalLines,
    });
  }
  if (input.status === STATUS.shipped && input.purpose === PURPOSE.consume) {
    const jobCosts = await writeConsumption(ctx, input, resolved, costs, numbers, at, posts);
    if (posts) result.jobCosts = jobCosts;
  }
  return result;
}

/**
 * A consumption on a job: a job cost per line, equal to what the ledger debits to direct expense
 * for it, and the consumption record. Stock of no value (nothing posted) makes no job cost: a job
 * cost always leads to the journal of its document.
 */
async function writeConsumption(
  ctx: PostingContext,
  input: AllocationInput,
  resolved: Resolved,
  costs: LineCost[],
  numbers: AllocationNumbers,
  at: AllocationPosting,
  posts: boolean,
): Promise<AllocationWriteResult['jobCosts']> {
  const { recordNumber, enteredDate, period, year } = at;
  const jobCosts: JobCostToWrite[] = resolved.lines.map((r, i) => ({
    recordNumber: numbers.jobCostRecords[i]!,
    jobNumber: input.jobNumber!,
    phaseNumber: input.phaseNumber ?? null,
    costCode: r.costCode!,
    costType: r.costType!,
    transactionDate: input.allocationDate,
    description: fitText('job-costs', 'description', `Stock: ${r.description}`),
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
  const posted = posts ? await writeJobCosts(ctx, jobCosts) : [];
  await insertRecords(
    ctx.trx,
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
  return posted;
}
