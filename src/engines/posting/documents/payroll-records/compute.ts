import { Dec } from '../../../../storage/decimal';
import { SCALE } from '../../context';
import { fitText } from '../../records';
import type { LineRow, RecordRow, Refusals } from './references';
import type { Setup } from './setup';

/**
 * POST /payroll-records/post, what each record posts (the first step of the cascade, pure): its
 * withholdings and employer burden from the payroll setup, and the account each timecard line's
 * wages go to; or, with the reasons in `refusals`, nothing.
 */

/** Account types: 3 WIP asset, 9 direct expense, 10 equipment expense. */
const WIP_ASSET = 3;
const JOB_ACCOUNT_TYPES = new Set([WIP_ASSET, 9]);
const EQUIPMENT_EXPENSE = 10;
/** ledger-accounts subsidiaryType: the subsidiary ledger an account keeps (1 jobs, 2 equipment). */
const SUBSIDIARY_JOBS = 1;
const SUBSIDIARY_EQUIPMENT = 2;
/** payroll-calculations calculationType: 1-3 taxes withheld from everyone, 4 employee deductions (payroll-deductions), 6 employer burden. */
const WITHHELD_TAX_TYPES = new Set([1, 2, 3]);
const DEDUCTION_TYPE = 4;
const EMPLOYER_TYPE = 6;

const r2 = (v: Dec) => v.toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);
const percentOf = (base: Dec, rate: Dec) => r2(base.times(rate).div(100));
/** A description on a journal line (its column's width). */
export const lineText = (text: string) => fitText('ledger-transactions.lines', 'description', text);

/** One amount of a record: debited to `debit` (burden) and/or credited to `credit`. */
interface Posting {
  debitAccount: number | null;
  creditAccount: number;
  amount: Dec;
  description: string;
}

/** What one record posts. */
export interface RecordPosting {
  record: RecordRow;
  lines: LineRow[];
  /** Account each timecard line is debited to. */
  lineAccounts: number[];
  withheld: Posting[];
  burden: Posting[];
}

/** Every account a record posts to (for the existence and activity checks). */
export function accountsOf(p: RecordPosting): number[] {
  return [...p.lineAccounts, ...p.withheld.map((w) => w.creditAccount), ...p.burden.flatMap((b) => [b.creditAccount, b.debitAccount!])];
}

/**
 * What one record posts: its withholdings (taxes 1-3 as a percent of gross, its deductions) that
 * must add up to the deductions it was computed with, its employer burden (type 6 and its benefits),
 * and the account each line's wages go to. null (with the reasons in `refusals`) when it cannot post.
 */
export function computeRecord(record: RecordRow, lines: LineRow[], setup: Setup, ledger: { directExpense: number | null; equipmentExpense: number | null }, refusals: Refusals): RecordPosting | null {
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
    else withheld.push({ debitAccount: null, creditAccount: c.liabilityAccount, amount: percentOf(record.gross, c.rate), description: lineText(`${c.name} withheld`) });
  }
  for (const d of setup.deductions.get(record.employeeNumber) ?? []) {
    const c = calc(d.calc);
    if (!c || c.type !== DEDUCTION_TYPE || c.liabilityAccount === null) {
      refusals.add(record, 'setup_incomplete', `deduction calculation ${d.calc} is missing, inactive, not a deduction or has no liability account`);
      continue;
    }
    const amount = d.amount.isZero() ? percentOf(record.gross, d.rate) : d.amount;
    withheld.push({ debitAccount: null, creditAccount: c.liabilityAccount, amount, description: lineText(c.name) });
  }
  const withheldTotal = withheld.reduce((s, p) => s.plus(p.amount), new Dec(0));
  if (refusals.errors.length === before && !withheldTotal.equals(record.deductions)) {
    refusals.add(record, 'deductions_disagree', 'its deductions differ from what the payroll calculations give now; compute it again');
  }
  // A batch pays each record by a check: a negative amount is no check (decision 0425). A negative
  // timecard line is a correction and posts (cascade.ts); a negative record is not, and is never
  // netted into the other records' cash credit.
  if (record.gross.isNegative()) refusals.add(record, 'negative_gross_pay', 'its gross pay is negative; a payroll batch pays no negative check (correct its timecard lines, or reverse the check it corrects)');
  if (record.net.isNegative()) refusals.add(record, 'negative_net_pay', 'its net pay is negative (its deductions exceed its gross pay); a payroll batch pays no negative check (correct its deductions or timecard lines and compute it again)');

  const burden: Posting[] = [];
  for (const c of setup.calculations.values()) {
    if (c.type !== EMPLOYER_TYPE) continue;
    if (c.liabilityAccount === null || c.expenseAccount === null) {
      refusals.add(record, 'setup_incomplete', `employer calculation ${c.number} needs a liability and an expense account`);
      continue;
    }
    if (!c.rate.isZero()) {
      burden.push({ debitAccount: c.expenseAccount, creditAccount: c.liabilityAccount, amount: percentOf(record.gross, c.rate), description: lineText(c.name) });
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
      else burden.push({ debitAccount: c.expenseAccount, creditAccount: c.liabilityAccount, amount: percentOf(wages, rate), description: lineText(c.name) });
    }
  }
  for (const b of setup.benefits.get(record.employeeNumber) ?? []) {
    const c = calc(b.calc);
    if (!c || c.liabilityAccount === null || c.expenseAccount === null) {
      refusals.add(record, 'setup_incomplete', `benefit calculation ${b.calc} is missing or needs a liability and an expense account`);
      continue;
    }
    burden.push({ debitAccount: c.expenseAccount, creditAccount: c.liabilityAccount, amount: b.amount, description: lineText(`${c.name} (employer)`) });
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
    if (account && (account.type === WIP_ASSET || account.type === EQUIPMENT_EXPENSE || account.subsidiary === SUBSIDIARY_JOBS || account.subsidiary === SUBSIDIARY_EQUIPMENT)) {
      refusals.add(record, 'not_overhead_account', `timecard line ${l.lineNumber} has no job or equipment, and the department wage account ${departmentAccount} takes only job or equipment costs`);
    }
    return departmentAccount;
  });
  if (refusals.errors.length > before) return null;
  return { record, lines, lineAccounts, withheld, burden };
}
