/**
 * The bookkeeping core of the seed. Every ledger effect goes through `journal()`, which refuses
 * an unbalanced entry and accumulates the period balances written at the end, and every job
 * cost through `jobCost()`. Documents call these with the same amounts they store on their own
 * lines, so the books agree by construction; test/db/seed-invariants.test.ts checks it from SQL.
 */
import { Dec } from '../../src/storage/decimal';
import type { Prng } from './prng';
import type { BatchWriter, Row } from './writer';
import { money, code, hours, stamp, ZERO } from './util';

export const FISCAL_YEAR = 2026;
/** The open period of the ledger setup: November 2026 (fiscal year ends in December). */
export const CURRENT_PERIOD = 11;
/** Documents are dated up to this day; "today" of the demo company is 2026-11-22. */
export const CUTOFF_DATE = '2026-11-20';
/** 2024-12-02T00:00:00Z: the version-7 ids' clock starts at the company's setup. */
const ID_CLOCK_START = Date.UTC(2024, 11, 2);
export const USERS = ['mkowalczyk', 'dfairbanks', 'tlindqvist', 'rsalcedo', 'api-import'];

export interface JournalLine {
  account: number;
  debit?: Dec;
  credit?: Dec;
  description?: string;
  job?: number | null;
  equipment?: number | null;
  department?: number | null;
}

export interface JournalInput {
  source: number;
  date: string;
  number: string;
  description: string;
  enteredDate?: string;
  user?: string;
  /** Defaults to the month of `date` (fiscal year = calendar year); period 0 for opening entries. */
  period?: number;
  year?: number;
  lines: JournalLine[];
}

export interface JobCostInput {
  job: number;
  phase?: number | null;
  costCode: string;
  costType: number;
  date: string;
  description: string;
  source: number;
  documentNumber?: string | null;
  sourceRecord?: number | null;
  sourceLine?: number | null;
  vendor?: number | null;
  employee?: number | null;
  equipment?: number | null;
  amount: Dec;
  hours?: Dec;
  enteredDate?: string;
  user?: string;
}

export function periodOf(date: string): number {
  return Number(date.slice(5, 7));
}

export class Books {
  private readonly next = new Map<string, number>();
  private readonly balances = new Map<string, { account: number; year: number; period: number; debit: Dec; credit: Dec }>();
  /** Job cost totals per job (for budgets, cost-to-complete and billing). */
  readonly jobCostByJob = new Map<number, Dec>();
  readonly stats = { journals: 0, journalLines: 0, jobCosts: 0 };

  constructor(
    readonly w: BatchWriter,
    private readonly ids: Prng,
  ) {}

  /** Ids are time-ordered (version 7) from a clock starting at the company's setup day. */
  uuid(): string {
    return this.ids.uuid7(ID_CLOCK_START);
  }

  /** Next record number of a table (1, 2, ...), or from `start` on first use. */
  recnum(table: string, start = 1): number {
    const n = this.next.get(table) ?? start;
    this.next.set(table, n + 1);
    return n;
  }

  /** Last record number handed out per table (for numseq). */
  counters(): Map<string, number> {
    return new Map(this.next);
  }

  /** Audit columns of a row entered on `date` by `user`. */
  audit(date: string, user: string, minute: number): Row {
    const ts = stamp(date, minute);
    return { insdte: ts, upddte: ts, insusr: user, updusr: user };
  }

  /** A journal whose record number was taken beforehand (documents that point to it are written first). */
  journalWithNumber(recnum: number, j: JournalInput): number {
    return this.journal(j, recnum);
  }

  /** Writes a balanced journal (lgrtrn + lgtnln) and returns its record number. */
  journal(j: JournalInput, preallocated?: number): number {
    const lines = j.lines.filter((l) => !(l.debit ?? ZERO).isZero() || !(l.credit ?? ZERO).isZero());
    let debit = ZERO;
    let credit = ZERO;
    for (const l of lines) {
      if ((l.debit ?? ZERO).isNegative() || (l.credit ?? ZERO).isNegative()) throw new Error(`journal ${j.number}: negative amount`);
      if (l.debit && l.credit && !l.debit.isZero() && !l.credit.isZero()) throw new Error(`journal ${j.number}: a line carries a debit or a credit`);
      debit = debit.plus(l.debit ?? ZERO);
      credit = credit.plus(l.credit ?? ZERO);
    }
    if (!debit.equals(credit)) throw new Error(`journal ${j.number} (${j.description}) does not balance: ${debit} / ${credit}`);
    if (lines.length === 0) throw new Error(`journal ${j.number}: no lines`);
    const period = j.period ?? periodOf(j.date);
    const year = j.year ?? FISCAL_YEAR;
    const recnum = preallocated ?? this.recnum('lgrtrn');
    const id = this.uuid();
    const entered = j.enteredDate ?? j.date;
    const user = j.user ?? USERS[0]!;
    const audit = this.audit(entered, user, 8 * 60 + (recnum % 600));
    this.w.add('lgrtrn', {
      _idnum: id,
      recnum,
      trnnum: j.number.slice(0, 20),
      trndte: j.date,
      dscrpt: j.description.slice(0, 50),
      srcnum: j.source,
      status: 1,
      dbttot: money(debit),
      crdtot: money(credit),
      revrec: null,
      entdte: entered,
      usrnme: user,
      actprd: period,
      postyr: year,
      ...audit,
    });
    lines.forEach((l, i) => {
      this.w.add('lgtnln', {
        _idnum: this.uuid(),
        _idref: id,
        linnum: i + 1,
        lgract: l.account,
        dscrpt: (l.description ?? j.description).slice(0, 50),
        dbtamt: money(l.debit ?? ZERO),
        crdamt: money(l.credit ?? ZERO),
        jobnum: l.job ?? null,
        eqpnum: l.equipment ?? null,
        dptmnt: l.department ?? null,
        ...audit,
      });
      const key = `${l.account}|${year}|${period}`;
      let b = this.balances.get(key);
      if (!b) {
        b = { account: l.account, year, period, debit: ZERO, credit: ZERO };
        this.balances.set(key, b);
      }
      b.debit = b.debit.plus(l.debit ?? ZERO);
      b.credit = b.credit.plus(l.credit ?? ZERO);
    });
    this.stats.journals++;
    this.stats.journalLines += lines.length;
    return recnum;
  }

  /** Net activity (debit - credit) per account, year and period, from every journal so far. */
  balanceRows(): Array<{ account: number; year: number; period: number; debit: Dec; credit: Dec }> {
    return [...this.balances.values()].sort((a, b) => a.account - b.account || a.year - b.year || a.period - b.period);
  }

  /** Net balance of an account over all periods (debit positive). */
  accountBalance(account: number): Dec {
    let s = ZERO;
    for (const b of this.balances.values()) if (b.account === account) s = s.plus(b.debit).minus(b.credit);
    return s;
  }

  jobCost(c: JobCostInput): number {
    const recnum = this.recnum('jobcst');
    const entered = c.enteredDate ?? c.date;
    const user = c.user ?? USERS[0]!;
    this.w.add('jobcst', {
      _idnum: this.uuid(),
      recnum,
      jobnum: c.job,
      phsnum: c.phase ?? null,
      cstcde: code(c.costCode),
      csttyp: c.costType,
      trndte: c.date,
      dscrpt: c.description.slice(0, 50),
      srcnum: c.source,
      docnum: c.documentNumber ? c.documentNumber.slice(0, 20) : null,
      srcrec: c.sourceRecord ?? null,
      srclin: c.sourceLine ?? null,
      vndnum: c.vendor ?? null,
      empnum: c.employee ?? null,
      eqpnum: c.equipment ?? null,
      cstamt: money(c.amount),
      csthrs: hours(c.hours ?? ZERO),
      status: 1,
      entdte: entered,
      usrnme: user,
      actprd: periodOf(c.date),
      postyr: FISCAL_YEAR,
      ...this.audit(entered, user, 9 * 60 + (recnum % 480)),
    });
    this.jobCostByJob.set(c.job, (this.jobCostByJob.get(c.job) ?? ZERO).plus(c.amount));
    this.stats.jobCosts++;
    return recnum;
  }
}

