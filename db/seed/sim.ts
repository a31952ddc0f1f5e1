/**
 * The simulation clock and the state shared by the document generators: a queue of events per
 * day (receipts, payments, invoices decided when their document was created), the bank book
 * (every cash movement with the statement that clears it), payroll liabilities to remit, and
 * per-job aggregates for billing and cost-to-complete.
 */
import { Dec } from '../../src/storage/decimal';
import { CUTOFF_DATE, FISCAL_YEAR, periodOf, USERS, type JobCostInput } from './books';
import { A } from './chart';
import type { Ctx } from './context';
import { Inventory } from './inventory';
import { addDays, hours as hoursOf, money, stamp, weekday, ZERO } from './util';

/** Bank accounts (bnkact recnum) and their ledger accounts. */
export const BANK = { operating: 1, payroll: 2 } as const;
export const BANK_ACCOUNT: Record<number, number> = { 1: A.cashOperating, 2: A.cashPayroll };
/** Statements are reconciled through October; November is still open at the cutoff. */
export const LAST_RECONCILED_MONTH = 10;

export interface BankTxn {
  recnum: number;
  bank: number;
  date: string;
  number: string;
  type: number;
  payee: string | null;
  description: string;
  deposit: Dec;
  withdrawal: Dec;
  journal: number | null;
  statementMonth: number | null;
}

export interface ApPayable {
  invoice: number;
  invoiceNumber: string;
  amount: Dec;
  retainage: Dec;
}

export class Sim {
  readonly inv: Inventory;
  private readonly queue = new Map<string, Array<() => void>>();
  /** Check runs: date -> vendor -> invoices to pay. */
  readonly checkRuns = new Map<string, Map<number, ApPayable[]>>();
  /** Bank transactions per statement (`bank|month`) for the reconciliations. */
  readonly statements = new Map<string, BankTxn[]>();
  readonly bankTotals = new Map<number, { deposits: Dec; withdrawals: Dec }>();
  /** Payroll liabilities accrued per month: `month|account` -> amount. */
  readonly liabilities = new Map<string, Dec>();
  /** Job cost per `job|phase|code|type`: amount and hours. */
  readonly costDetail = new Map<string, { job: number; phase: number | null; code: string; type: number; amount: Dec; hours: Dec }>();
  /** Job cost per job and cost type (time-and-material billing). */
  readonly costByType = new Map<number, Map<number, Dec>>();
  /** Open commitments per job (purchase orders and subcontracts not yet received or billed). */
  readonly committed = new Map<number, Dec>();
  /** Check numbers per bank account. */
  private readonly checkNumbers = new Map<number, number>([
    [1, 20418],
    [2, 700001],
  ]);
  /** Opening balances of the bank accounts (set by the opening entry). */
  readonly openingCash = new Map<number, Dec>();

  constructor(readonly ctx: Ctx) {
    this.inv = new Inventory(ctx);
  }

  /** The simulated day being run. */
  today = '2025-12-31';

  schedule(date: string, fn: () => void): void {
    if (date > CUTOFF_DATE) return;
    if (date <= this.today) throw new Error(`seed: event for ${date} scheduled on ${this.today} would never run`);
    const list = this.queue.get(date) ?? [];
    list.push(fn);
    this.queue.set(date, list);
  }

  /** Runs the events of a day (events may schedule more for the same day; they run too). */
  runDay(date: string): void {
    for (let guard = 0; guard < 100; guard++) {
      const list = this.queue.get(date);
      if (!list || list.length === 0) return;
      this.queue.delete(date);
      for (const fn of list) fn();
    }
  }

  nextCheck(bank: number): string {
    const n = this.checkNumbers.get(bank) ?? 1;
    this.checkNumbers.set(bank, n + 1);
    return String(n);
  }

  /** The Thursday check run on or after `date`. */
  static checkRunOn(date: string): string {
    const wd = weekday(date);
    return addDays(date, (4 - wd + 7) % 7);
  }

  queuePayable(date: string, vendor: number, p: ApPayable): void {
    const run = Sim.checkRunOn(date);
    if (run > CUTOFF_DATE) return;
    if (run <= this.today) throw new Error(`seed: check run ${run} queued on ${this.today} would never run`);
    let byVendor = this.checkRuns.get(run);
    if (!byVendor) {
      byVendor = new Map();
      this.checkRuns.set(run, byVendor);
    }
    const list = byVendor.get(vendor) ?? [];
    list.push(p);
    byVendor.set(vendor, list);
  }

  /** Whether a payment planned on `date` happens before the cutoff (check runs are on Thursdays). */
  static paidBy(date: string): boolean {
    return Sim.checkRunOn(date) <= CUTOFF_DATE;
  }

  /**
   * Records a bank transaction. It clears three days after its date, in the statement of that
   * month, when that statement is reconciled (January to October).
   */
  bankTxn(t: Omit<BankTxn, 'recnum' | 'statementMonth'>, entered?: string, user?: string): BankTxn {
    const ctx = this.ctx;
    const recnum = ctx.books.recnum('bnktrn');
    const clears = addDays(t.date, 3);
    const clearsMonth = clears.slice(0, 4) === String(FISCAL_YEAR) ? periodOf(clears) : 13;
    const reconciled = clearsMonth <= LAST_RECONCILED_MONTH;
    const txn: BankTxn = { ...t, recnum, statementMonth: reconciled ? clearsMonth : null };
    const ent = entered ?? t.date;
    const u = user ?? USERS[3]!;
    ctx.add('bnktrn', {
      _idnum: ctx.uuid(),
      recnum,
      bnkact: t.bank,
      trnnum: t.number,
      trndte: t.date,
      trntyp: t.type,
      payee_: t.payee,
      dscrpt: t.description,
      depamt: money(t.deposit),
      wdramt: money(t.withdrawal),
      clrflg: reconciled,
      clrdte: reconciled ? clears : null,
      recrec: reconciled ? Sim.reconciliationNumber(t.bank, clearsMonth) : null,
      status: reconciled ? 2 : 1,
      entdte: ent,
      usrnme: u,
      actprd: periodOf(t.date),
      postyr: FISCAL_YEAR,
      lgrrec: t.journal,
      insdte: stamp(ent, 10 * 60 + (recnum % 400)),
      upddte: stamp(reconciled ? addDays(`${FISCAL_YEAR}-${String(clearsMonth).padStart(2, '0')}-28`, 10) : ent, 10 * 60 + (recnum % 400)),
      insusr: u,
      updusr: u,
    });
    if (reconciled) {
      const key = `${t.bank}|${clearsMonth}`;
      const list = this.statements.get(key) ?? [];
      list.push(txn);
      this.statements.set(key, list);
    }
    const tot = this.bankTotals.get(t.bank) ?? { deposits: ZERO, withdrawals: ZERO };
    tot.deposits = tot.deposits.plus(t.deposit);
    tot.withdrawals = tot.withdrawals.plus(t.withdrawal);
    this.bankTotals.set(t.bank, tot);
    return txn;
  }

  /** Record number of a bank reconciliation (fixed per account and month, so transactions can point to it before it is written). */
  static reconciliationNumber(bank: number, month: number): number {
    return (bank - 1) * 12 + month;
  }

  accrue(month: number, account: number, amount: Dec): void {
    const key = `${month}|${account}`;
    this.liabilities.set(key, (this.liabilities.get(key) ?? ZERO).plus(amount));
  }

  addCost(job: number, phase: number | null, code: string, type: number, amount: Dec, hours: Dec = ZERO): void {
    const key = `${job}|${phase ?? ''}|${code}|${type}`;
    const d = this.costDetail.get(key);
    if (d) {
      d.amount = d.amount.plus(amount);
      d.hours = d.hours.plus(hours);
    } else this.costDetail.set(key, { job, phase, code, type, amount, hours });
    let byType = this.costByType.get(job);
    if (!byType) {
      byType = new Map();
      this.costByType.set(job, byType);
    }
    byType.set(type, (byType.get(type) ?? ZERO).plus(amount));
  }

  /** A job cost, also counted in the per-job detail (cost-to-complete, billing). */
  jobCost(c: JobCostInput): number {
    const n = this.ctx.books.jobCost(c);
    this.addCost(c.job, c.phase ?? null, c.costCode, c.costType, c.amount, c.hours ?? ZERO);
    return n;
  }

  /** An equipment cost record (eqpcst). */
  equipmentCost(c: {
    equipment: number;
    date: string;
    category: number;
    description: string;
    source: number;
    documentNumber?: string | null;
    sourceRecord?: number | null;
    sourceLine?: number | null;
    vendor?: number | null;
    account: number;
    amount: Dec;
    hours?: Dec;
    entered?: string;
    user?: string;
  }): void {
    const ctx = this.ctx;
    const recnum = ctx.books.recnum('eqpcst');
    ctx.add('eqpcst', {
      _idnum: ctx.uuid(),
      recnum,
      eqpnum: c.equipment,
      trndte: c.date,
      cstcat: c.category,
      dscrpt: c.description,
      srcnum: c.source,
      docnum: c.documentNumber ?? null,
      srcrec: c.sourceRecord ?? null,
      srclin: c.sourceLine ?? null,
      vndnum: c.vendor ?? null,
      lgract: c.account,
      cstamt: money(c.amount),
      csthrs: hoursOf(c.hours ?? ZERO),
      status: 1,
      ...ctx.txn(c.date, c.entered, c.user, 9 * 60 + (recnum % 300)),
    });
  }

  commit(job: number, amount: Dec): void {
    this.committed.set(job, (this.committed.get(job) ?? ZERO).plus(amount));
  }
}

export { Dec };
