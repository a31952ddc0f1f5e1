import { Dec } from '../../../../storage/decimal';
import { SCALE, type PostingContext } from '../../context';
import { records, type StoredRecord } from '../../records';

/**
 * POST /payroll-records/post, the payroll setup a batch posts by: the company's payroll
 * calculations, each employee's deductions and benefits active on the check date, workers' comp
 * rates, the departments' wage accounts and the ledger accounts. Only the fields the posting needs
 * are read: employee records are PII (names, rates, birth dates stay unread).
 */

/** Employee numbers per IN list. */
const EMPLOYEES_PER_READ = 500;

interface Calculation {
  number: number;
  name: string;
  type: number;
  rate: Dec;
  liabilityAccount: number | null;
  expenseAccount: number | null;
}

/** The payroll setup the batch posts by. */
export interface Setup {
  calculations: Map<number, Calculation>;
  deductions: Map<number, Array<{ calc: number; amount: Dec; rate: Dec }>>;
  benefits: Map<number, Array<{ calc: number; amount: Dec }>>;
  workersCompRates: Map<number, Dec>;
  employees: Map<number, { department: number | null }>;
  departmentAccounts: Map<number, number | null>;
  accounts: Map<number, { type: number; inactive: boolean; subsidiary: number }>;
}

const r2 = (v: Dec) => v.toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);

/** The setup for the batch's employees, as of its check date. */
export async function loadSetup(ctx: PostingContext, batch: ReadonlyArray<{ employeeNumber: number }>, checkDate: string): Promise<Setup> {
  const orZero = (v: Dec | null) => v ?? new Dec(0);
  const activeOn = (r: StoredRecord) => !r.inactive && (r.startDate ?? '0000') <= checkDate && (r.endDate ?? '9999') >= checkDate;
  const employeeNumbers = [...new Set(batch.map((r) => r.employeeNumber))];

  const calculations = new Map<number, Calculation>();
  for (const c of await records(ctx, 'payroll-calculations').all(['recordNumber', 'calculationName', 'calculationType', 'rate', 'liabilityAccount', 'expenseAccount', 'inactive'])) {
    if (c.inactive) continue;
    calculations.set(c.recordNumber, {
      number: c.recordNumber,
      name: String(c.calculationName ?? ''),
      type: Number(c.calculationType),
      rate: orZero(c.rate),
      liabilityAccount: c.liabilityAccount,
      expenseAccount: c.expenseAccount,
    });
  }
  const deductions = new Map<number, Array<{ calc: number; amount: Dec; rate: Dec }>>();
  const benefits = new Map<number, Array<{ calc: number; amount: Dec }>>();
  const employees = new Map<number, { department: number | null }>();
  for (let i = 0; i < employeeNumbers.length; i += EMPLOYEES_PER_READ) {
    const chunk = employeeNumbers.slice(i, i + EMPLOYEES_PER_READ);
    const deductionRows = records(ctx, 'payroll-deductions').whereIn('employeeNumber', chunk).orderBy('recordNumber');
    for (const d of await deductionRows.all(['employeeNumber', 'calculationNumber', 'amount', 'rate', 'startDate', 'endDate', 'inactive'])) {
      if (!activeOn(d)) continue;
      const list = deductions.get(d.employeeNumber) ?? [];
      list.push({ calc: Number(d.calculationNumber), amount: orZero(d.amount), rate: orZero(d.rate) });
      deductions.set(d.employeeNumber, list);
    }
    const benefitRows = records(ctx, 'benefits').whereIn('employeeNumber', chunk).whereNotNull('calculationNumber').orderBy('recordNumber');
    for (const b of await benefitRows.all(['employeeNumber', 'calculationNumber', 'rate', 'startDate', 'endDate', 'inactive'])) {
      if (!activeOn(b)) continue;
      const list = benefits.get(b.employeeNumber) ?? [];
      list.push({ calc: Number(b.calculationNumber), amount: r2(orZero(b.rate)) });
      benefits.set(b.employeeNumber, list);
    }
    for (const e of await records(ctx, 'employees').whereIn('recordNumber', chunk).all(['recordNumber', 'departmentNumber'])) {
      employees.set(e.recordNumber, { department: e.departmentNumber });
    }
  }
  const workersCompRates = new Map<number, Dec>();
  for (const w of await records(ctx, 'workers-comp-codes').all(['recordNumber', 'rate'])) workersCompRates.set(w.recordNumber, orZero(w.rate));
  const departmentAccounts = new Map<number, number | null>();
  for (const d of await records(ctx, 'departments').all(['recordNumber', 'overheadAccount'])) departmentAccounts.set(d.recordNumber, d.overheadAccount);
  const accounts = new Map<number, { type: number; inactive: boolean; subsidiary: number }>();
  for (const a of await records(ctx, 'ledger-accounts').all(['recordNumber', 'accountType', 'inactive', 'subsidiaryType'])) {
    accounts.set(a.recordNumber, { type: Number(a.accountType), inactive: a.inactive === true, subsidiary: Number(a.subsidiaryType ?? 0) });
  }
  return { calculations, deductions, benefits, workersCompRates, employees, departmentAccounts, accounts };
}
