import type { components } from '../../../../../generated/api-types';
import { ApiProblem, type FieldError } from '../../../../errors/problem';
import { Dec, decToJson } from '../../../../storage/decimal';
import { toIsoDate } from '../../../../storage/db-time';
import { SCALE, type PostingContext } from '../../context';
import { InputErrors } from '../../input';
import { allocateLedgerRecord, writeJournal, type JournalLine, type PostedLedgerTransaction, type LedgerRecordNumbers } from '../../ledger/journal';
import { writeJobCosts, type JobCostToWrite, type PostedJobCost } from '../../ledger/job-costs';
import { writeEquipmentCosts, type EquipmentCostToWrite, type PostedEquipmentCost } from '../../ledger/equipment-costs';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { isTrue, loadReferenceRows, loadReferenced } from '../../ledger/references';
import { readRecordsById, type FullRecord } from '../../records';
import type { PostOutcome, WriteDefinition } from '../../runner';

/**
 * POST /payroll-records/post: posts a batch of Computed payroll records (domain notes, "How it
 * posts", sources 16/17), chosen by their period end date or by their record numbers, in ONE
 * transaction:
 *
 *   journal (source 16)  debits: gross wages of job lines to direct expense/WIP (with the job),
 *                        of equipment lines to the shop (equipment-expense, with the equipment),
 *                        of the rest to the employee's department wage account (overhead; a
 *                        department account that keeps job or equipment costs refuses such lines);
 *                        employer burden (employer taxes, workers' comp, benefits) to its expense
 *                        accounts. credits: withholdings and burden to their liability accounts,
 *                        net pay to cash (the bank account's ledger account, default the ledger
 *                        setup's cash account).
 *   job costs            one per job line: labor cost type (2), hours and amount (= its ledger debit)
 *   equipment costs      one per equipment line: category 5 Labor (= its ledger debit)
 *   records              status 2 Computed -> 3 Posted, with the journal's record number and period
 *
 * Where the amounts come from: gross is the record's timecard lines; withholdings are the
 * company's payroll calculations (paycal: types 1-3 taxes as a percent of gross; type 4
 * deductions through the employee's payded rows) and must add up to the deductions the record
 * was computed with (else 422: compute it again); employer burden is paycal type 6 (percent of
 * gross; a rate of 0 means workers' comp at the rate of each timecard line's wkrcmp code) and the
 * employee's benfit rows (a fixed amount per pay period).
 *
 * PII: payroll is a PII surface. Nothing here logs; problem details name records by number and
 * status only (never employee names, pay rates or amounts), because problems reach the logs.
 */

export const PAYROLL_SOURCE = 16;
const STATUS_COMPUTED = 2;
const STATUS_POSTED = 3;
const STATUS_VOID = 5;
const STATUS_NAMES: Record<number, string> = { 1: 'Open', 2: 'Computed', 3: 'Posted', 4: 'Reverse', 5: 'Void' };
const COST_TYPE_LABOR = 2;
const EQUIPMENT_COST_LABOR = 5;
/** Account types: 1 cash, 3 WIP asset, 9 direct expense, 10 equipment expense. */
const CASH = 1;
const JOB_ACCOUNT_TYPES = new Set([3, 9]);
const EQUIPMENT_EXPENSE = 10;
/** lgract.subtyp: the subsidiary ledger an account keeps (1 jobs, 2 equipment). */
const SUBSIDIARY_JOBS = 1;
const SUBSIDIARY_EQUIPMENT = 2;
/** paycal.caltyp: 1-3 taxes withheld from everyone, 4 employee deductions (payded), 6 employer burden. */
const WITHHELD_TAX_TYPES = new Set([1, 2, 3]);
const DEDUCTION_TYPE = 4;
const EMPLOYER_TYPE = 6;
const MAX_RECORDS = 1000;

export interface PayrollPostInput {
  periodEndDate?: string;
  recordNumbers?: number[];
  bankAccountNumber?: number;
  period?: number;
  year?: number;
}

type Numbers = LedgerRecordNumbers;

/** A posted payroll record as POST /payroll-records/query returns it (the contract's PayrollRecord, without lines). */
export type PostedPayrollRecord = FullRecord<Omit<components['schemas']['PayrollRecord'], 'lines'>>;

export interface PostedPayrollBatch {
  periodEndDate: string | null;
  checkDate: string;
  recordCount: number;
  grossPay: number;
  deductions: number;
  netPay: number;
  employerBurden: number;
  records: PostedPayrollRecord[];
  equipmentCosts: PostedEquipmentCost[];
}

export interface PayrollPostResult {
  document: PostedPayrollBatch;
  ledgerTransaction: PostedLedgerTransaction;
  jobCosts: PostedJobCost[];
  inventory: never[];
  period: number;
  year: number;
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

// ------------------------------------------------------------------ reading the batch

interface RecordRow {
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

interface LineRow {
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

async function selectRecords(ctx: PostingContext, input: PayrollPostInput): Promise<RecordRow[]> {
  const { trx, dialect } = ctx;
  const money = (raw: unknown) => dialect.decodeDecimal(raw, SCALE.money) ?? new Dec(0);
  const columns = ['_idnum', 'recnum', 'empnum', 'chknum', 'chkdte', 'prdbeg', 'prdend', 'grspay', 'dedttl', 'netpay', 'status', 'lgrrec'];
  const toRow = (r: any, field: string): RecordRow => ({
    id: String(r._idnum),
    recordNumber: Number(r.recnum),
    employeeNumber: Number(r.empnum),
    checkNumber: r.chknum ?? null,
    checkDate: toIsoDate(r.chkdte) ?? '',
    periodStart: toIsoDate(r.prdbeg),
    periodEnd: toIsoDate(r.prdend) ?? '',
    gross: money(r.grspay),
    deductions: money(r.dedttl),
    net: money(r.netpay),
    status: Number(r.status),
    ledgerRecord: r.lgrrec === null || r.lgrrec === undefined ? null : Number(r.lgrrec),
    field,
  });
  if (input.recordNumbers) {
    const found = new Map<number, any>();
    for (let i = 0; i < input.recordNumbers.length; i += 500) {
      const rows = await trx('payrec').whereIn('recnum', input.recordNumbers.slice(i, i + 500)).select(columns);
      for (const r of rows) found.set(Number(r.recnum), r);
    }
    const missing: FieldError[] = [];
    input.recordNumbers.forEach((n, i) => {
      if (!found.has(n)) missing.push({ field: `recordNumbers[${i}]`, code: 'not_found', message: `payroll record ${n} does not exist` });
    });
    if (missing.length > 0) {
      throw new ApiProblem('REFERENCE_NOT_FOUND', `Payroll records do not exist: ${missing.map((m) => m.message).join('; ')}.`, { errors: missing });
    }
    return input.recordNumbers.map((n, i) => toRow(found.get(n), `recordNumbers[${i}]`)).sort((a, b) => a.recordNumber - b.recordNumber);
  }
  const period = trx('payrec').where({ prdend: input.periodEndDate! }).whereNot({ status: STATUS_VOID }).orderBy('recnum');
  // A rehearsal compiles the path with the period's first record only (PostingContext.rehearsal).
  const rows = await (ctx.rehearsal ? period.limit(1) : period).select(columns);
  if (rows.length === 0) {
    throw new ApiProblem('REFERENCE_NOT_FOUND', `No payroll records end their pay period on ${input.periodEndDate}.`, {
      errors: [{ field: 'periodEndDate', code: 'not_found', message: `no payroll record with periodEnd ${input.periodEndDate}` }],
    });
  }
  return rows.map((r: any) => toRow(r, 'periodEndDate'));
}

/** 409 when the batch (or part of it) was posted already; 422 for records that are not Computed. */
function checkStatuses(records: RecordRow[]): void {
  const posted = records.filter((r) => r.status === STATUS_POSTED);
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
  const refused = records.filter((r) => r.status !== STATUS_COMPUTED);
  if (refused.length > 0) {
    const what = (r: RecordRow) => `payroll record ${r.recordNumber} is ${STATUS_NAMES[r.status] ?? `status ${r.status}`} (status ${r.status}), not Computed`;
    throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `Only Computed payroll records post: ${refused.map(what).join('; ')}.`, {
      errors: refused.map((r) => ({ field: r.field, code: 'not_computed', message: what(r) })),
      extensions: { recordNumbers: refused.map((r) => r.recordNumber) },
    });
  }
  const dates = [...new Set(records.map((r) => r.checkDate))].sort();
  if (dates.length > 1) {
    throw new ApiProblem('BUSINESS_RULE_VIOLATED', `A batch posts one check date; these records have ${dates.length}: ${dates.join(', ')}.`, {
      errors: [{ field: records[0]!.field.startsWith('recordNumbers') ? 'recordNumbers' : 'periodEndDate', code: 'check_dates_differ' }],
    });
  }
}

async function readLines(ctx: PostingContext, records: RecordRow[]): Promise<Map<string, LineRow[]>> {
  const { trx, dialect } = ctx;
  const out = new Map<string, LineRow[]>(records.map((r) => [r.id, []]));
  const ids = records.map((r) => r.id);
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await trx('tmcdln')
      .whereIn('_idref', ids.slice(i, i + 500))
      .orderBy('_idref')
      .orderBy('linnum')
      .select('_idref', 'linnum', 'jobnum', 'phsnum', 'cstcde', 'eqpnum', 'paytyp', 'hrswrk', 'amount', 'wkrcmp', 'dscrpt');
    for (const l of rows) {
      out.get(String(l._idref))!.push({
        recordId: String(l._idref),
        lineNumber: Number(l.linnum),
        jobNumber: l.jobnum === null || l.jobnum === undefined ? null : Number(l.jobnum),
        phaseNumber: l.phsnum === null || l.phsnum === undefined ? null : Number(l.phsnum),
        costCode: dialect.decodeDecimal(l.cstcde, SCALE.costCode),
        equipmentNumber: l.eqpnum === null || l.eqpnum === undefined ? null : Number(l.eqpnum),
        payType: Number(l.paytyp),
        hours: dialect.decodeDecimal(l.hrswrk, SCALE.hours) ?? new Dec(0),
        amount: dialect.decodeDecimal(l.amount, SCALE.money) ?? new Dec(0),
        workersComp: l.wkrcmp === null || l.wkrcmp === undefined ? null : Number(l.wkrcmp),
        description: String(l.dscrpt ?? ''),
      });
    }
  }
  return out;
}

// ------------------------------------------------------------------ calculations

const r2 = (v: Dec) => v.toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);
const percentOf = (base: Dec, rate: Dec) => r2(base.times(rate).div(100));

interface Calculation {
  number: number;
  name: string;
  type: number;
  rate: Dec;
  liabilityAccount: number | null;
  expenseAccount: number | null;
}

/** One amount of a record: debited to `debit` (burden) and/or credited to `credit`. */
interface Posting {
  debitAccount: number | null;
  creditAccount: number;
  amount: Dec;
  description: string;
}

interface Setup {
  calculations: Map<number, Calculation>;
  deductions: Map<number, Array<{ calc: number; amount: Dec; rate: Dec }>>;
  benefits: Map<number, Array<{ calc: number; amount: Dec }>>;
  workersCompRates: Map<number, Dec>;
  employees: Map<number, { department: number | null }>;
  departmentAccounts: Map<number, number | null>;
  accounts: Map<number, { type: number; inactive: boolean; subsidiary: number }>;
}

async function loadSetup(ctx: PostingContext, records: RecordRow[], checkDate: string): Promise<Setup> {
  const { trx, dialect } = ctx;
  const dec = (raw: unknown, scale: number) => dialect.decodeDecimal(raw, scale) ?? new Dec(0);
  const activeOn = (r: any) => !isTrue(r.inactv) && (toIsoDate(r.sttdte) ?? '0000') <= checkDate && (toIsoDate(r.enddte) ?? '9999') >= checkDate;
  const employeeNumbers = [...new Set(records.map((r) => r.employeeNumber))];

  const calculations = new Map<number, Calculation>();
  for (const c of await trx('paycal').select('recnum', 'calnme', 'caltyp', 'calrte', 'lblact', 'expact', 'inactv')) {
    if (isTrue(c.inactv)) continue;
    calculations.set(Number(c.recnum), {
      number: Number(c.recnum),
      name: String(c.calnme ?? ''),
      type: Number(c.caltyp),
      rate: dec(c.calrte, SCALE.price),
      liabilityAccount: c.lblact === null ? null : Number(c.lblact),
      expenseAccount: c.expact === null ? null : Number(c.expact),
    });
  }
  const deductions = new Map<number, Array<{ calc: number; amount: Dec; rate: Dec }>>();
  const benefits = new Map<number, Array<{ calc: number; amount: Dec }>>();
  // Only the columns the posting needs: employee rows are PII (names, rates, birth dates stay unread).
  const employees = new Map<number, { department: number | null }>();
  for (let i = 0; i < employeeNumbers.length; i += 500) {
    const chunk = employeeNumbers.slice(i, i + 500);
    for (const d of await trx('payded').whereIn('empnum', chunk).orderBy('recnum').select('empnum', 'calnum', 'dedamt', 'dedrte', 'sttdte', 'enddte', 'inactv')) {
      if (!activeOn(d)) continue;
      const list = deductions.get(Number(d.empnum)) ?? [];
      list.push({ calc: Number(d.calnum), amount: dec(d.dedamt, SCALE.money), rate: dec(d.dedrte, SCALE.price) });
      deductions.set(Number(d.empnum), list);
    }
    for (const b of await trx('benfit').whereIn('empnum', chunk).whereNotNull('calnum').orderBy('recnum').select('empnum', 'calnum', 'bnfrte', 'sttdte', 'enddte', 'inactv')) {
      if (!activeOn(b)) continue;
      const list = benefits.get(Number(b.empnum)) ?? [];
      list.push({ calc: Number(b.calnum), amount: r2(dec(b.bnfrte, SCALE.price)) });
      benefits.set(Number(b.empnum), list);
    }
    for (const e of await trx('employ').whereIn('recnum', chunk).select('recnum', 'dptmnt')) {
      employees.set(Number(e.recnum), { department: e.dptmnt === null || e.dptmnt === undefined ? null : Number(e.dptmnt) });
    }
  }
  const workersCompRates = new Map<number, Dec>();
  for (const w of await trx('wkrcmp').select('recnum', 'cmprte')) workersCompRates.set(Number(w.recnum), dec(w.cmprte, SCALE.price));
  const departmentAccounts = new Map<number, number | null>();
  for (const d of await trx('dptmnt').select('recnum', 'lgract')) departmentAccounts.set(Number(d.recnum), d.lgract === null ? null : Number(d.lgract));
  const accounts = new Map<number, { type: number; inactive: boolean; subsidiary: number }>();
  for (const a of await trx('lgract').select('recnum', 'acttyp', 'inactv', 'subtyp')) accounts.set(Number(a.recnum), { type: Number(a.acttyp), inactive: isTrue(a.inactv), subsidiary: Number(a.subtyp ?? 0) });
  return { calculations, deductions, benefits, workersCompRates, employees, departmentAccounts, accounts };
}

/** Collects every reason the batch cannot post, each naming its record (never a name or an amount). */
class Refusals {
  readonly errors: FieldError[] = [];
  private readonly records = new Set<number>();
  add(record: RecordRow, code: string, message: string): void {
    this.errors.push({ field: record.field, code, message: `payroll record ${record.recordNumber}: ${message}` });
    this.records.add(record.recordNumber);
  }
  throwIfAny(): void {
    if (this.errors.length === 0) return;
    const shown = this.errors.slice(0, 20).map((e) => e.message);
    const more = this.errors.length > shown.length ? ` (and ${this.errors.length - shown.length} more)` : '';
    throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `The payroll batch cannot be posted: ${shown.join('; ')}${more}.`, {
      errors: this.errors,
      extensions: { recordNumbers: [...this.records] },
    });
  }
}

interface RecordPosting {
  record: RecordRow;
  lines: LineRow[];
  /** Account each timecard line is debited to. */
  lineAccounts: number[];
  withheld: Posting[];
  burden: Posting[];
}

function computeRecord(record: RecordRow, lines: LineRow[], setup: Setup, ledger: { directExpense: number | null; equipmentExpense: number | null }, refusals: Refusals): RecordPosting | null {
  const before = refusals.errors.length;
  const gross = lines.reduce((s, l) => s.plus(l.amount), new Dec(0));
  if (lines.length === 0) refusals.add(record, 'no_lines', 'has no timecard lines');
  else if (!gross.equals(record.gross)) refusals.add(record, 'lines_disagree', 'its timecard lines do not add up to its gross pay; compute it again');
  if (!record.gross.minus(record.deductions).equals(record.net)) refusals.add(record, 'totals_disagree', 'gross pay minus deductions is not its net pay; compute it again');

  const calc = (n: number) => setup.calculations.get(n);
  const withheld: Posting[] = [];
  for (const c of setup.calculations.values()) {
    if (!WITHHELD_TAX_TYPES.has(c.type)) continue;
    if (c.liabilityAccount === null) refusals.add(record, 'setup_incomplete', `payroll calculation ${c.number} has no liability account`);
    else withheld.push({ debitAccount: null, creditAccount: c.liabilityAccount, amount: percentOf(record.gross, c.rate), description: `${c.name} withheld`.slice(0, 50) });
  }
  for (const d of setup.deductions.get(record.employeeNumber) ?? []) {
    const c = calc(d.calc);
    if (!c || c.type !== DEDUCTION_TYPE || c.liabilityAccount === null) {
      refusals.add(record, 'setup_incomplete', `deduction calculation ${d.calc} is missing, inactive, not a deduction or has no liability account`);
      continue;
    }
    const amount = d.amount.isZero() ? percentOf(record.gross, d.rate) : d.amount;
    withheld.push({ debitAccount: null, creditAccount: c.liabilityAccount, amount, description: c.name.slice(0, 50) });
  }
  const withheldTotal = withheld.reduce((s, p) => s.plus(p.amount), new Dec(0));
  if (refusals.errors.length === before && !withheldTotal.equals(record.deductions)) {
    refusals.add(record, 'deductions_disagree', 'its deductions differ from what the payroll calculations give now; compute it again');
  }

  const burden: Posting[] = [];
  for (const c of setup.calculations.values()) {
    if (c.type !== EMPLOYER_TYPE) continue;
    if (c.liabilityAccount === null || c.expenseAccount === null) {
      refusals.add(record, 'setup_incomplete', `employer calculation ${c.number} needs a liability and an expense account`);
      continue;
    }
    if (!c.rate.isZero()) {
      burden.push({ debitAccount: c.expenseAccount, creditAccount: c.liabilityAccount, amount: percentOf(record.gross, c.rate), description: c.name.slice(0, 50) });
      continue;
    }
    // Rate 0: workers' compensation, at the rate of each line's workers' comp code.
    const byCode = new Map<number, Dec>();
    for (const l of lines) {
      if (l.workersComp === null) continue;
      byCode.set(l.workersComp, (byCode.get(l.workersComp) ?? new Dec(0)).plus(l.amount));
    }
    for (const [code, wages] of [...byCode.entries()].sort((a, b) => a[0] - b[0])) {
      const rate = setup.workersCompRates.get(code);
      if (rate === undefined) refusals.add(record, 'not_found', `workers' comp code ${code} does not exist`);
      else burden.push({ debitAccount: c.expenseAccount, creditAccount: c.liabilityAccount, amount: percentOf(wages, rate), description: c.name.slice(0, 50) });
    }
  }
  for (const b of setup.benefits.get(record.employeeNumber) ?? []) {
    const c = calc(b.calc);
    if (!c || c.liabilityAccount === null || c.expenseAccount === null) {
      refusals.add(record, 'setup_incomplete', `benefit calculation ${b.calc} is missing or needs a liability and an expense account`);
      continue;
    }
    burden.push({ debitAccount: c.expenseAccount, creditAccount: c.liabilityAccount, amount: b.amount, description: `${c.name} (employer)`.slice(0, 50) });
  }

  // Where each line's wages go.
  const employee = setup.employees.get(record.employeeNumber);
  const department = employee?.department ?? null;
  const departmentAccount = department === null ? null : (setup.departmentAccounts.get(department) ?? null);
  const typeOf = (a: number | null) => (a === null ? undefined : setup.accounts.get(a)?.type);
  const lineAccounts = lines.map((l) => {
    if (l.jobNumber !== null) {
      if (l.costCode === null) refusals.add(record, 'required', `timecard line ${l.lineNumber} has a job but no cost code`);
      const account = JOB_ACCOUNT_TYPES.has(typeOf(departmentAccount) ?? 0) ? departmentAccount : ledger.directExpense;
      if (account === null) refusals.add(record, 'setup_incomplete', 'no direct expense account for job labor (department or ledger setup)');
      return account ?? 0;
    }
    if (l.equipmentNumber !== null) {
      const account = typeOf(departmentAccount) === EQUIPMENT_EXPENSE ? departmentAccount : ledger.equipmentExpense;
      if (account === null) refusals.add(record, 'setup_incomplete', 'no equipment expense account for shop labor (department or ledger setup)');
      return account ?? 0;
    }
    if (departmentAccount === null) {
      refusals.add(record, 'setup_incomplete', `the employee's department has no wage account`);
      return 0;
    }
    // Overhead: never wages without a job on a job account, nor without equipment on an equipment one.
    const account = setup.accounts.get(departmentAccount);
    if (account && (account.type === 3 || account.type === EQUIPMENT_EXPENSE || account.subsidiary === SUBSIDIARY_JOBS || account.subsidiary === SUBSIDIARY_EQUIPMENT)) {
      refusals.add(record, 'not_overhead_account', `timecard line ${l.lineNumber} has no job or equipment, and the department wage account ${departmentAccount} takes only job or equipment costs`);
    }
    return departmentAccount;
  });
  if (refusals.errors.length > before) return null;
  return { record, lines, lineAccounts, withheld, burden };
}

// ------------------------------------------------------------------ the write

export const payrollPostWrite: WriteDefinition<PayrollPostInput, Numbers, PayrollPostResult> = {
  route: '/payroll-records/post',
  what: 'posting a payroll batch',
  prepare: preparePayrollPost,

  allocate: allocateLedgerRecord,

  async post(ctx, input, numbers): Promise<PostOutcome<PayrollPostResult>> {
    const { trx } = ctx;
    const records = await selectRecords(ctx, input);
    checkStatuses(records);
    const checkDate = records[0]!.checkDate;

    const periodRequest = { date: checkDate, dateField: 'checkDate', period: input.period ?? null, year: input.year ?? null };
    const { setup: ledgerSetup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const { period, year } = await resolvePostingPeriod(trx, ledgerSetup, periodRequest, fiscal);

    // Claim the batch first: a concurrent posting of the same records waits on these rows and
    // then finds them Posted (409), so a batch never posts twice.
    const claimed = await claim(ctx, records, numbers.ledgerRecord, period, year);
    if (claimed !== records.length) {
      const again = await selectRecords(ctx, input);
      checkStatuses(again);
      throw new ApiProblem('DOCUMENT_ALREADY_POSTED', 'The payroll batch was posted by a concurrent request. Nothing was posted.');
    }

    const setup = await loadSetup(ctx, records, checkDate);
    const lines = await readLines(ctx, records);
    const refusals = new Refusals();
    const ledger = { directExpense: ledgerSetup.directExpenseAccount ?? ledgerSetup.wipAccount, equipmentExpense: ledgerSetup.equipmentExpenseAccount };
    const postings = records.map((r) => computeRecord(r, lines.get(r.id) ?? [], setup, ledger, refusals));

    // Cash: the bank account's ledger account, else the ledger setup's cash account.
    let cashAccount: number | null = null;
    if (input.bankAccountNumber !== undefined) {
      const banks = await loadReferenced(ctx, 'bank-accounts', 'recordNumber', [{ field: 'bankAccountNumber', value: input.bankAccountNumber }], ['ledgerAccount', 'inactive']);
      const bank = banks.get(String(input.bankAccountNumber));
      if (!bank) throw new ApiProblem('REFERENCE_NOT_FOUND', `Bank account ${input.bankAccountNumber} does not exist.`, { errors: [{ field: 'bankAccountNumber', code: 'not_found' }] });
      if (bank.inactive || bank.ledgerAccount === null) {
        throw new ApiProblem('BUSINESS_RULE_VIOLATED', `Bank account ${input.bankAccountNumber} is inactive or has no ledger account.`, { errors: [{ field: 'bankAccountNumber', code: 'not_postable' }] });
      }
      cashAccount = Number(bank.ledgerAccount);
    } else {
      const row = await trx('lgrstp').orderBy('recnum').first('cshact');
      cashAccount = row?.cshact === null || row?.cshact === undefined ? null : Number(row.cshact);
      if (cashAccount === null) throw new ApiProblem('BUSINESS_RULE_VIOLATED', 'The ledger setup has no cash account; name bankAccountNumber.', { errors: [{ field: 'bankAccountNumber', code: 'required' }] });
    }
    if (setup.accounts.get(cashAccount)?.type !== CASH) {
      throw new ApiProblem('BUSINESS_RULE_VIOLATED', `Ledger account ${cashAccount} of the net pay is not a cash account.`, { errors: [{ field: 'bankAccountNumber', code: 'not_cash' }] });
    }

    // Jobs (exist, not closed) and equipment (exists) of the lines.
    const jobNumbers = [...new Set([...lines.values()].flat().map((l) => l.jobNumber).filter((n): n is number => n !== null))];
    const equipmentNumbers = [...new Set([...lines.values()].flat().map((l) => l.equipmentNumber).filter((n): n is number => n !== null))];
    const jobs = await loadReferenceRows(ctx, 'jobs', jobNumbers.map((value) => ({ field: 'lines', value })), ['status']);
    const equipment = await loadReferenceRows(ctx, 'equipment', equipmentNumbers.map((value) => ({ field: 'lines', value })), []);
    for (const p of postings) {
      if (!p) continue;
      for (const l of p.lines) {
        if (l.jobNumber !== null) {
          const job = jobs.get(String(l.jobNumber));
          if (!job) refusals.add(p.record, 'not_found', `timecard line ${l.lineNumber}: job ${l.jobNumber} does not exist`);
          else if (Number(job.status) === 6) refusals.add(p.record, 'closed', `timecard line ${l.lineNumber}: job ${l.jobNumber} is closed`);
        }
        if (l.equipmentNumber !== null && !equipment.has(String(l.equipmentNumber))) refusals.add(p.record, 'not_found', `timecard line ${l.lineNumber}: equipment ${l.equipmentNumber} does not exist`);
      }
      for (const account of [...p.lineAccounts, ...p.withheld.map((w) => w.creditAccount), ...p.burden.flatMap((b) => [b.creditAccount, b.debitAccount!])]) {
        const a = setup.accounts.get(account);
        if (!a) refusals.add(p.record, 'not_found', `ledger account ${account} does not exist`);
        else if (a.inactive) refusals.add(p.record, 'inactive', `ledger account ${account} is inactive`);
      }
    }
    refusals.throwIfAny();
    const ready = postings as RecordPosting[];

    // ---- the journal: one line per account (and job / equipment), debits first.
    const transactionNumber = `PR${checkDate.replace(/-/g, '')}-${records[0]!.recordNumber}`.slice(0, 20);
    const periodEnd = records.map((r) => r.periodEnd).sort().at(-1)!;
    const debits = new Map<string, { account: number; job: number | null; equipment: number | null; description: string; amount: Dec }>();
    const credits = new Map<number, { description: string; amount: Dec }>();
    const addDebit = (account: number, job: number | null, equipment: number | null, description: string, amount: Dec) => {
      if (amount.isZero()) return;
      const key = `${account}|${job ?? ''}|${equipment ?? ''}|${job === null && equipment === null ? description : ''}`;
      const d = debits.get(key) ?? { account, job, equipment, description, amount: new Dec(0) };
      d.amount = d.amount.plus(amount);
      debits.set(key, d);
    };
    const addCredit = (account: number, description: string, amount: Dec) => {
      if (amount.isZero()) return;
      const c = credits.get(account) ?? { description, amount: new Dec(0) };
      c.amount = c.amount.plus(amount);
      credits.set(account, c);
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
        addCredit(b.creditAccount, `${b.description} payable`.slice(0, 50), b.amount);
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
    for (const d of sortedDebits) {
      journalLines.push({ lineNumber: journalLines.length + 1, ledgerAccount: d.account, description: d.description, debit: d.amount, credit: new Dec(0), jobNumber: d.job, equipmentNumber: d.equipment });
    }
    for (const [account, c] of [...credits.entries()].sort((a, b) => a[0] - b[0])) {
      journalLines.push({ lineNumber: journalLines.length + 1, ledgerAccount: account, description: c.description, debit: new Dec(0), credit: c.amount });
    }
    const enteredDate = ctx.today;
    const ledgerTransaction = await writeJournal(ctx, {
      recordNumber: numbers.ledgerRecord,
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
    const jobRange = await ctx.numbers.allocateIn(trx, 'jobcst', jobLines.length);
    const shopRange = await ctx.numbers.allocateIn(trx, 'eqpcst', shopLines.length);
    const documentNumber = (r: RecordRow) => r.checkNumber ?? transactionNumber;
    const jobCosts: JobCostToWrite[] = jobLines.map(({ p, l }, i) => ({
      recordNumber: jobRange.first + i,
      jobNumber: l.jobNumber!,
      phaseNumber: l.phaseNumber,
      costCode: l.costCode!,
      costType: COST_TYPE_LABOR,
      transactionDate: checkDate,
      description: (l.description || 'Labor').slice(0, 50),
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
      description: (l.description || 'Shop labor').slice(0, 50),
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

    const document: PostedPayrollBatch = {
      periodEndDate: input.periodEndDate ?? null,
      checkDate,
      recordCount: records.length,
      grossPay: decToJson(grossTotal),
      deductions: decToJson(deductionTotal),
      netPay: decToJson(netTotal),
      employerBurden: decToJson(burdenTotal),
      // The records as the payroll-records query returns them (read-back.ts), in batch order.
      records: (await readRecordsById(trx, 'payroll-records', records.map((r) => r.id))) as unknown as PostedPayrollRecord[],
      equipmentCosts: postedEquipmentCosts,
    };
    return { result: { document, ledgerTransaction, jobCosts: postedJobCosts, inventory: [], period, year } };
  },
};

/** Computed -> Posted for exactly these records; returns how many rows changed. */
async function claim(ctx: PostingContext, records: RecordRow[], ledgerRecord: number, period: number, year: number): Promise<number> {
  let changed = 0;
  const numbers = records.map((r) => r.recordNumber).sort((a, b) => a - b);
  // Payroll batches post one at a time (a rare, heavy posting): two overlapping batches can then
  // neither deadlock on the records' rows nor both see them Computed.
  await ctx.lockName('payrec:post');
  for (let i = 0; i < numbers.length; i += 500) {
    const n = await ctx
      .trx('payrec')
      .whereIn('recnum', numbers.slice(i, i + 500))
      .where({ status: STATUS_COMPUTED })
      .update({ status: STATUS_POSTED, lgrrec: ledgerRecord, actprd: period, postyr: year, upddte: ctx.now, updusr: ctx.user });
    changed += Number(n);
  }
  return changed;
}

