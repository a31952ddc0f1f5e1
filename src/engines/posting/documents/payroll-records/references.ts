import { ApiProblem, type FieldError } from '../../../../errors/problem';
import { Dec } from '../../../../storage/decimal';
import { REHEARSAL_BATCH_RECORDS, type PostingContext } from '../../context';
import type { LedgerSetup } from '../../ledger/period';
import { loadReferenceRows, loadReferenced } from '../../ledger/references';
import { records, type StoredRecord } from '../../records';
import type { PayrollPostInput } from './input';
import type { Setup } from './setup';

/**
 * POST /payroll-records/post, the references: the records of the batch (by record numbers or by
 * period end date) and their timecard lines, the statuses that let them post, the cash account,
 * and the jobs, equipment and accounts they post to (the payroll setup they post by: setup.ts). Every refusal names its record
 * (never an employee's name, pay rate or amount: problems reach the logs).
 */

export const STATUS_COMPUTED = 2;
export const STATUS_POSTED = 3;
const STATUS_VOID = 5;
const STATUS_NAMES: Record<number, string> = { 1: 'Open', 2: 'Computed', 3: 'Posted', 4: 'Reverse', 5: 'Void' };
/** Account type 1: cash. */
const CASH = 1;
/** Job status 6: closed. */
const JOB_CLOSED = 6;
/** Record numbers per IN list. */
const RECORDS_PER_READ = 500;
/** Refusals a problem's detail spells out (all of them are in its errors[]). */
const SHOWN_REFUSALS = 20;

/** A payroll record of the batch. */
export interface RecordRow {
  id: string;
  recordNumber: number;
  employeeNumber: number;
  checkNumber: string | null;
  checkDate: string;
  periodStart: string | null;
  periodEnd: string;
  gross: Dec;
  deductions: Dec;
  net: Dec;
  status: number;
  ledgerRecord: number | null;
  /** JSON path that named it: recordNumbers[i], or periodEndDate. */
  field: string;
}

/** A timecard line of a record. */
export interface LineRow {
  recordId: string;
  lineNumber: number;
  jobNumber: number | null;
  phaseNumber: number | null;
  costCode: Dec | null;
  equipmentNumber: number | null;
  payType: number;
  hours: Dec;
  amount: Dec;
  workersComp: number | null;
  description: string;
}

const RECORD_FIELDS = ['id', 'recordNumber', 'employeeNumber', 'checkNumber', 'checkDate', 'periodStart', 'periodEnd', 'grossPay', 'deductions', 'netPay', 'status', 'ledgerRecordNumber'];

function recordRowOf(r: StoredRecord, field: string): RecordRow {
  return {
    id: r.id,
    recordNumber: r.recordNumber,
    employeeNumber: Number(r.employeeNumber),
    checkNumber: r.checkNumber ?? null,
    checkDate: r.checkDate ?? '',
    periodStart: r.periodStart,
    periodEnd: r.periodEnd ?? '',
    gross: r.grossPay ?? new Dec(0),
    deductions: r.deductions ?? new Dec(0),
    net: r.netPay ?? new Dec(0),
    status: Number(r.status),
    ledgerRecord: r.ledgerRecordNumber,
    field,
  };
}

/** The records of the batch, in record number order; 404 naming each one that does not exist. */
export async function selectRecords(ctx: PostingContext, input: PayrollPostInput): Promise<RecordRow[]> {
  if (input.recordNumbers) {
    const found = new Map<number, StoredRecord>();
    for (let i = 0; i < input.recordNumbers.length; i += RECORDS_PER_READ) {
      const rows = await records(ctx, 'payroll-records').whereIn('recordNumber', input.recordNumbers.slice(i, i + RECORDS_PER_READ)).all(RECORD_FIELDS);
      for (const r of rows) found.set(r.recordNumber, r);
    }
    const missing: FieldError[] = [];
    input.recordNumbers.forEach((n, i) => {
      if (!found.has(n)) missing.push({ field: `recordNumbers[${i}]`, code: 'not_found', message: `payroll record ${n} does not exist` });
    });
    if (missing.length > 0) {
      throw new ApiProblem('REFERENCE_NOT_FOUND', `Payroll records do not exist: ${missing.map((m) => m.message).join('; ')}.`, { errors: missing });
    }
    return input.recordNumbers.map((n, i) => recordRowOf(found.get(n)!, `recordNumbers[${i}]`)).sort((a, b) => a.recordNumber - b.recordNumber);
  }
  const period = records(ctx, 'payroll-records').where({ periodEnd: input.periodEndDate! }).whereNot({ status: STATUS_VOID }).orderBy('recordNumber');
  // A rehearsal posts at most the period's first REHEARSAL_BATCH_RECORDS records (PostingContext.rehearsal).
  const rows = await (ctx.rehearsal ? period.limit(REHEARSAL_BATCH_RECORDS) : period).all(RECORD_FIELDS);
  if (rows.length === 0) {
    throw new ApiProblem('REFERENCE_NOT_FOUND', `No payroll records end their pay period on ${input.periodEndDate}.`, {
      errors: [{ field: 'periodEndDate', code: 'not_found', message: `no payroll record with periodEnd ${input.periodEndDate}` }],
    });
  }
  return rows.map((r) => recordRowOf(r, 'periodEndDate'));
}

/** 409 when the batch (or part of it) was posted already; 422 for records that are not Computed. */
export function checkStatuses(batch: RecordRow[]): void {
  const posted = batch.filter((r) => r.status === STATUS_POSTED);
  if (posted.length > 0) {
    const journals = [...new Set(posted.map((r) => r.ledgerRecord).filter((n): n is number => n !== null))];
    throw new ApiProblem(
      'DOCUMENT_ALREADY_POSTED',
      `Payroll records already posted: ${posted.map((r) => r.recordNumber).join(', ')}${journals.length ? ` (ledger transactions ${journals.join(', ')})` : ''}. Nothing was posted.`,
      {
        errors: posted.map((r) => ({ field: r.field, code: 'already_posted', message: `payroll record ${r.recordNumber} is Posted` })),
        extensions: { recordNumbers: posted.map((r) => r.recordNumber), ledgerRecordNumbers: journals },
      },
    );
  }
  const refused = batch.filter((r) => r.status !== STATUS_COMPUTED);
  if (refused.length > 0) {
    const what = (r: RecordRow) => `payroll record ${r.recordNumber} is ${STATUS_NAMES[r.status] ?? `status ${r.status}`} (status ${r.status}), not Computed`;
    throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `Only Computed payroll records post: ${refused.map(what).join('; ')}.`, {
      errors: refused.map((r) => ({ field: r.field, code: 'not_computed', message: what(r) })),
      extensions: { recordNumbers: refused.map((r) => r.recordNumber) },
    });
  }
  const dates = [...new Set(batch.map((r) => r.checkDate))].sort();
  if (dates.length > 1) {
    throw new ApiProblem('BUSINESS_RULE_VIOLATED', `A batch posts one check date; these records have ${dates.length}: ${dates.join(', ')}.`, {
      errors: [{ field: batch[0]!.field.startsWith('recordNumbers') ? 'recordNumbers' : 'periodEndDate', code: 'check_dates_differ' }],
    });
  }
}

/** The timecard lines of each record, by record id, in line order. */
export async function readLines(ctx: PostingContext, batch: RecordRow[]): Promise<Map<string, LineRow[]>> {
  const out = new Map<string, LineRow[]>(batch.map((r) => [r.id, []]));
  const ids = batch.map((r) => r.id);
  for (let i = 0; i < ids.length; i += RECORDS_PER_READ) {
    const rows = await records(ctx, 'payroll-records.lines')
      .ofParents(ids.slice(i, i + RECORDS_PER_READ))
      .orderBy('parentId')
      .orderBy('lineNumber')
      .all(['parentId', 'lineNumber', 'jobNumber', 'phaseNumber', 'costCode', 'equipmentNumber', 'payType', 'hours', 'amount', 'workersCompCode', 'description']);
    for (const l of rows) {
      out.get(l.parentId)!.push({
        recordId: l.parentId,
        lineNumber: Number(l.lineNumber),
        jobNumber: l.jobNumber,
        phaseNumber: l.phaseNumber,
        costCode: l.costCode,
        equipmentNumber: l.equipmentNumber,
        payType: Number(l.payType),
        hours: l.hours ?? new Dec(0),
        amount: l.amount ?? new Dec(0),
        workersComp: l.workersCompCode,
        description: String(l.description ?? ''),
      });
    }
  }
  return out;
}

/** Net pay's account: the bank account's ledger account, else the ledger setup's cash account; it must be a cash account. */
export async function cashAccountOf(ctx: PostingContext, input: PayrollPostInput, setup: Setup): Promise<number> {
  let cashAccount: number | null = null;
  if (input.bankAccountNumber !== undefined) {
    const banks = await loadReferenced(ctx, 'bank-accounts', 'recordNumber', [{ field: 'bankAccountNumber', value: input.bankAccountNumber }], ['ledgerAccount', 'inactive']);
    const bank = banks.get(String(input.bankAccountNumber));
    if (!bank) throw new ApiProblem('REFERENCE_NOT_FOUND', `Bank account ${input.bankAccountNumber} does not exist.`, { errors: [{ field: 'bankAccountNumber', code: 'not_found' }] });
    if (bank.inactive || bank.ledgerAccount === null) {
      throw new ApiProblem('BUSINESS_RULE_VIOLATED', `Bank account ${input.bankAccountNumber} is inactive or has no ledger account.`, { errors: [{ field: 'bankAccountNumber', code: 'not_postable' }] });
    }
    cashAccount = bank.ledgerAccount;
  } else {
    const row = await records(ctx, 'ledger-setups').orderBy('recordNumber').first(['cashAccount']);
    cashAccount = row?.cashAccount ?? null;
    if (cashAccount === null) throw new ApiProblem('BUSINESS_RULE_VIOLATED', 'The ledger setup has no cash account; name bankAccountNumber.', { errors: [{ field: 'bankAccountNumber', code: 'required' }] });
  }
  if (setup.accounts.get(cashAccount!)?.type !== CASH) {
    throw new ApiProblem('BUSINESS_RULE_VIOLATED', `Ledger account ${cashAccount} of the net pay is not a cash account.`, { errors: [{ field: 'bankAccountNumber', code: 'not_cash' }] });
  }
  return cashAccount!;
}

/** Collects every reason the batch cannot post, each naming its record (never a name or an amount). */
export class Refusals {
  readonly errors: FieldError[] = [];
  private readonly records = new Set<number>();
  add(record: RecordRow, code: string, message: string): void {
    this.errors.push({ field: record.field, code, message: `payroll record ${record.recordNumber}: ${message}` });
    this.records.add(record.recordNumber);
  }
  throwIfAny(): void {
    if (this.errors.length === 0) return;
    const shown = this.errors.slice(0, SHOWN_REFUSALS).map((e) => e.message);
    const more = this.errors.length > shown.length ? ` (and ${this.errors.length - shown.length} more)` : '';
    throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `The payroll batch cannot be posted: ${shown.join('; ')}${more}.`, {
      errors: this.errors,
      extensions: { recordNumbers: [...this.records] },
    });
  }
}

/** What the records' lines (`lines`: every line of the batch) and setup name: the jobs (exist, not closed), the equipment (exists), the accounts (exist, active). */
export async function checkPostingReferences(
  ctx: PostingContext,
  lines: readonly LineRow[],
  postings: ReadonlyArray<{ record: RecordRow; lines: LineRow[]; accounts: number[] } | null>,
  setup: Setup,
  refusals: Refusals,
): Promise<void> {
  const jobNumbers = [...new Set(lines.map((l) => l.jobNumber).filter((n): n is number => n !== null))];
  const equipmentNumbers = [...new Set(lines.map((l) => l.equipmentNumber).filter((n): n is number => n !== null))];
  const jobs = await loadReferenceRows(ctx, 'jobs', jobNumbers.map((value) => ({ field: 'lines', value })), ['status']);
  const equipment = await loadReferenceRows(ctx, 'equipment', equipmentNumbers.map((value) => ({ field: 'lines', value })), []);
  for (const p of postings) {
    if (!p) continue;
    for (const l of p.lines) {
      if (l.jobNumber !== null) {
        const job = jobs.get(String(l.jobNumber));
        if (!job) refusals.add(p.record, 'not_found', `timecard line ${l.lineNumber}: job ${l.jobNumber} does not exist`);
        else if (job.status === JOB_CLOSED) refusals.add(p.record, 'closed', `timecard line ${l.lineNumber}: job ${l.jobNumber} is closed`);
      }
      if (l.equipmentNumber !== null && !equipment.has(String(l.equipmentNumber))) refusals.add(p.record, 'not_found', `timecard line ${l.lineNumber}: equipment ${l.equipmentNumber} does not exist`);
    }
    for (const account of p.accounts) {
      const a = setup.accounts.get(account);
      if (!a) refusals.add(p.record, 'not_found', `ledger account ${account} does not exist`);
      else if (a.inactive) refusals.add(p.record, 'inactive', `ledger account ${account} is inactive`);
    }
  }
}

/** The ledger setup's accounts payroll posts to when the department names none. */
export function ledgerAccountsOf(setup: LedgerSetup): { directExpense: number | null; equipmentExpense: number | null } {
  return { directExpense: setup.directExpenseAccount ?? setup.wipAccount, equipmentExpense: setup.equipmentExpenseAccount };
}
