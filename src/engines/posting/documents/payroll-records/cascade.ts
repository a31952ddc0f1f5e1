import { Dec } from '../../../../storage/decimal';
import type { PostingContext } from '../../context';
import { writeJournal, type JournalLine, type PostedLedgerTransaction } from '../../ledger/journal';
import { writeJobCosts, type JobCostToWrite, type PostedJobCost } from '../../ledger/job-costs';
import { writeEquipmentCosts, type EquipmentCostToWrite, type PostedEquipmentCost } from '../../ledger/equipment-costs';
import { allocateRecordNumbersIn, fitText, recordLockName, records } from '../../records';
import { PAYROLL_SOURCE } from './input';
import { lineText, type RecordPosting } from './compute';
import { STATUS_COMPUTED, STATUS_POSTED, type RecordRow } from './references';

/**
 * POST /payroll-records/post, the cascade: the claim of the records (Computed -> Posted), the
 * batch's journal from what each record posts (compute.ts: one line per account, and job or
 * equipment, debits first; a key that corrections made negative posts on the other side), a job
 * cost per job line and an equipment cost per shop line (each the amount of its timecard line, a
 * correction's negative too: per job and unit they add up to the ledger lines, debits minus credits).
 */

const COST_TYPE_LABOR = 2;
const EQUIPMENT_COST_LABOR = 5;
/** Record numbers per claim statement. */
const RECORDS_PER_CLAIM = 500;

/** What the batch posted, and its totals. */
export interface PostedBatch {
  ledgerTransaction: PostedLedgerTransaction;
  jobCosts: PostedJobCost[];
  equipmentCosts: PostedEquipmentCost[];
  grossTotal: Dec;
  deductionTotal: Dec;
  netTotal: Dec;
  burdenTotal: Dec;
}

/** Where and when the batch posts. */
export interface BatchTarget {
  checkDate: string;
  cashAccount: number;
  ledgerRecord: number;
  period: number;
  year: number;
}

/** The journal of the batch, then its job costs and equipment costs. */
export async function postBatch(ctx: PostingContext, batch: RecordRow[], ready: RecordPosting[], target: BatchTarget): Promise<PostedBatch> {
  const { trx } = ctx;
  const { checkDate, cashAccount, period, year } = target;
  // ---- the journal: one line per account (and job / equipment), debits first.
  const transactionNumber = fitText('ledger-transactions', 'transactionNumber', `PR${checkDate.replace(/-/g, '')}-${batch[0]!.recordNumber}`);
  const periodEnd = batch.map((r) => r.periodEnd).sort().at(-1)!;
  const debits = new Map<string, { account: number; job: number | null; equipment: number | null; description: string; amount: Dec }>();
  // Credits by account AND description: an employee's deduction and the employer's share of the same
  // plan can be owed on one liability account, and one line would carry only the first one's name.
  const credits = new Map<string, { account: number; description: string; amount: Dec }>();
  const addDebit = (account: number, job: number | null, equipment: number | null, description: string, amount: Dec) => {
    if (amount.isZero()) return;
    const key = `${account}|${job ?? ''}|${equipment ?? ''}|${job === null && equipment === null ? description : ''}`;
    const d = debits.get(key) ?? { account, job, equipment, description, amount: new Dec(0) };
    d.amount = d.amount.plus(amount);
    debits.set(key, d);
  };
  const addCredit = (account: number, description: string, amount: Dec) => {
    if (amount.isZero()) return;
    const key = `${account}|${description}`;
    const c = credits.get(key) ?? { account, description, amount: new Dec(0) };
    c.amount = c.amount.plus(amount);
    credits.set(key, c);
  };
  let grossTotal = new Dec(0);
  let deductionTotal = new Dec(0);
  let netTotal = new Dec(0);
  let burdenTotal = new Dec(0);
  for (const p of ready) {
    p.lines.forEach((l, i) => {
      const kind = l.jobNumber !== null ? 'Direct labor' : l.equipmentNumber !== null ? 'Shop labor' : 'Wages';
      addDebit(p.lineAccounts[i]!, l.jobNumber, l.jobNumber === null ? l.equipmentNumber : null, kind, l.amount);
    });
    let burden = new Dec(0);
    for (const b of p.burden) {
      addDebit(b.debitAccount!, null, null, b.description, b.amount);
      addCredit(b.creditAccount, lineText(`${b.description} payable`), b.amount);
      burden = burden.plus(b.amount);
    }
    for (const w of p.withheld) addCredit(w.creditAccount, w.description, w.amount);
    addCredit(cashAccount, 'Net pay', p.record.net);
    grossTotal = grossTotal.plus(p.record.gross);
    deductionTotal = deductionTotal.plus(p.record.deductions);
    netTotal = netTotal.plus(p.record.net);
    burdenTotal = burdenTotal.plus(burden);
  }
  const journalLines: JournalLine[] = [];
  // Descriptions by code unit, not localeCompare: the order only has to be stable, and the first
  // localeCompare of a process loads ICU's collation data (2.7 MB resident in every worker, which
  // rehearses this posting at start).
  const byCodeUnit = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  const sortedDebits = [...debits.values()].sort((a, b) => a.account - b.account || (a.job ?? 0) - (b.job ?? 0) || (a.equipment ?? 0) - (b.equipment ?? 0) || byCodeUnit(a.description, b.description));
  const sortedCredits = [...credits.values()].sort((a, b) => a.account - b.account || byCodeUnit(a.description, b.description)).map((c) => ({ account: c.account, job: null, equipment: null, description: c.description, amount: c.amount }));
  // Each key's net amount posts on its own side, or, when corrections made it negative (a negative
  // timecard line on a job: decision 0425), as its absolute value on the other side of the same
  // account, job and equipment; a key that nets to zero posts no line. The journal assertion
  // (journal.ts: no negative amount, a line is a debit or a credit) stays an invariant.
  const sided = [...sortedDebits.map((d) => ({ ...d, debitSide: true })), ...sortedCredits.map((c) => ({ ...c, debitSide: false }))]
    .filter((k) => !k.amount.isZero())
    .map((k) => ({ ...k, isDebit: k.debitSide !== k.amount.isNegative() }));
  // Debits first (stable: each side keeps the keys' order).
  for (const k of [...sided.filter((k) => k.isDebit), ...sided.filter((k) => !k.isDebit)]) {
    const amount = k.amount.abs();
    journalLines.push({
      lineNumber: journalLines.length + 1,
      ledgerAccount: k.account,
      description: k.description,
      debit: k.isDebit ? amount : new Dec(0),
      credit: k.isDebit ? new Dec(0) : amount,
      jobNumber: k.job,
      equipmentNumber: k.equipment,
    });
  }
  const enteredDate = ctx.today;
  const ledgerTransaction = await writeJournal(ctx, {
    recordNumber: target.ledgerRecord,
    transactionNumber,
    transactionDate: checkDate,
    enteredDate,
    description: `Payroll period ending ${periodEnd}`,
    sourceNumber: PAYROLL_SOURCE,
    period,
    year,
    lines: journalLines,
  });

  // ---- job costs and equipment costs: one per timecard line, the amount its ledger line carries.
  const jobLines = ready.flatMap((p) => p.lines.map((l, i) => ({ p, l, account: p.lineAccounts[i]! })).filter((x) => x.l.jobNumber !== null));
  const shopLines = ready.flatMap((p) => p.lines.map((l, i) => ({ p, l, account: p.lineAccounts[i]! })).filter((x) => x.l.jobNumber === null && x.l.equipmentNumber !== null));
  const jobRange = await allocateRecordNumbersIn(ctx.numbers, trx, 'job-costs', jobLines.length);
  const shopRange = await allocateRecordNumbersIn(ctx.numbers, trx, 'equipment-costs', shopLines.length);
  const documentNumber = (r: RecordRow) => r.checkNumber ?? transactionNumber;
  const jobCosts: JobCostToWrite[] = jobLines.map(({ p, l }, i) => ({
    recordNumber: jobRange.first + i,
    jobNumber: l.jobNumber!,
    phaseNumber: l.phaseNumber,
    costCode: l.costCode!,
    costType: COST_TYPE_LABOR,
    transactionDate: checkDate,
    description: fitText('job-costs', 'description', l.description || 'Labor'),
    sourceNumber: PAYROLL_SOURCE,
    documentNumber: documentNumber(p.record),
    sourceRecordNumber: p.record.recordNumber,
    sourceLineNumber: l.lineNumber,
    vendorNumber: null,
    employeeNumber: p.record.employeeNumber,
    equipmentNumber: null,
    costAmount: l.amount,
    costHours: l.hours,
    enteredDate,
    period,
    year,
  }));
  const equipmentCosts: EquipmentCostToWrite[] = shopLines.map(({ p, l, account }, i) => ({
    recordNumber: shopRange.first + i,
    equipmentNumber: l.equipmentNumber!,
    transactionDate: checkDate,
    costCategory: EQUIPMENT_COST_LABOR,
    description: fitText('equipment-costs', 'description', l.description || 'Shop labor'),
    sourceNumber: PAYROLL_SOURCE,
    documentNumber: documentNumber(p.record),
    sourceRecordNumber: p.record.recordNumber,
    sourceLineNumber: l.lineNumber,
    vendorNumber: null,
    ledgerAccount: account,
    costAmount: l.amount,
    costHours: l.hours,
    enteredDate,
    period,
    year,
  }));
  const postedJobCosts = await writeJobCosts(ctx, jobCosts);
  const postedEquipmentCosts = await writeEquipmentCosts(ctx, equipmentCosts);
  return { ledgerTransaction, jobCosts: postedJobCosts, equipmentCosts: postedEquipmentCosts, grossTotal, deductionTotal, netTotal, burdenTotal };
}

/** Computed -> Posted for exactly these records; returns how many records changed. */
export async function claim(ctx: PostingContext, batch: RecordRow[], ledgerRecord: number, period: number, year: number): Promise<number> {
  let changed = 0;
  const numbers = batch.map((r) => r.recordNumber).sort((a, b) => a - b);
  // Payroll batches post one at a time (a rare, heavy posting): two overlapping batches can then
  // neither deadlock on the records' rows nor both see them Computed.
  await ctx.lockName(recordLockName('payroll-records', ['post']));
  for (let i = 0; i < numbers.length; i += RECORDS_PER_CLAIM) {
    changed += await records(ctx, 'payroll-records')
      .whereIn('recordNumber', numbers.slice(i, i + RECORDS_PER_CLAIM))
      .where({ status: STATUS_COMPUTED })
      .update({ status: STATUS_POSTED, ledgerRecordNumber: ledgerRecord, period, year });
  }
  return changed;
}
