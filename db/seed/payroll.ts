/**
 * Payroll every other Friday for two weeks' work: crews are assigned to jobs, payroll records get timecard lines (job labor,
 * shop labor on equipment, service calls, salaries, holidays), withholdings and deductions are
 * computed, paychecks written, and one journal per pay date posts it (source 16): gross wages to
 * direct expense by job, shop labor by equipment, overhead; employer burden; liabilities and net
 * pay. Job costs and equipment costs come from the same lines. Timecards (service and shop
 * staff) and daily payrolls (crew reports) are the documents the lines came from.
 */
import { Dec } from '../../src/storage/decimal';
import { CUTOFF_DATE, USERS } from './books';
import { A, SRC } from './chart';
import type { Ctx, Employee, Job } from './context';
import type { Prng } from './prng';
import { CALC, WORKERS_COMP } from './setup';
import { BANK, Sim } from './sim';
import { addDays, code, daysBetween, hours, money, price, r2, r4, sum, ZERO } from './util';
import { jobCode } from './ap';

const HOLIDAYS = new Set(['2026-01-01', '2026-05-25', '2026-07-03', '2026-09-07']);
const WC_RATE = new Map(WORKERS_COMP.map(([n, , , rate]) => [n, new Dec(rate)]));

interface TimeLine {
  workDate: string;
  job: Job | null;
  phase: number | null;
  code: string | null;
  equipment: number | null;
  payType: number;
  hours: Dec;
  rate: Dec;
  amount: Dec;
  account: number;
  description: string;
}

export interface EarningsTotals {
  regularHours: Dec;
  overtimeHours: Dec;
  gross: Dec;
  federal: Dec;
  state: Dec;
  socialSecurity: Dec;
  medicare: Dec;
  net: Dec;
}

/** A timecard line row of payroll record `id` (posted and Computed records alike). */
function timecardRow(ctx: Ctx, id: string, k: number, l: TimeLine, e: Employee, audit: Record<string, unknown>): Record<string, unknown> {
  return {
    _idnum: ctx.uuid(),
    _idref: id,
    linnum: k + 1,
    wrkdte: l.workDate,
    jobnum: l.job?.num ?? null,
    phsnum: l.phase,
    cstcde: l.code ? code(l.code) : null,
    eqpnum: l.equipment,
    paytyp: l.payType,
    hrswrk: hours(l.hours),
    payrte: price(l.rate),
    amount: money(l.amount),
    wkrcmp: e.workersComp,
    dscrpt: l.description,
    ...audit,
  };
}

export class Payroll {
  /** Year-to-date per employee and paycheck line description. */
  private readonly ytd = new Map<number, Map<string, Dec>>();
  /** Quarter earnings per `employee|quarter`. */
  readonly earnings = new Map<string, EarningsTotals>();
  /** Employer health contributions per employee (benefits). */
  readonly employerHealth = new Map<number, Dec>();
  readonly vacationHours = new Map<number, Dec>();
  /** Deduction totals per `employee|calc`. */
  readonly deductionTotals = new Map<string, Dec>();

  /** Monday of the second week of the pay period being run. */
  private periodSecondWeek: string | null = null;

  constructor(private readonly sim: Sim) {}

  private get ctx(): Ctx {
    return this.sim.ctx;
  }

  /** Monday: keep crews and equipment on running jobs. */
  assign(weekStart: string): void {
    const ctx = this.ctx;
    const r = ctx.rnd('assignments');
    const jobs = ctx.activeJobs(weekStart);
    if (jobs.length === 0) return;
    for (const e of ctx.employees) {
      if (e.role !== 'field' && e.role !== 'foreman') continue;
      const current = e.job ? ctx.job(e.job) : null;
      if (!current || current.end < weekStart || current.start > weekStart || r.chance(0.08)) e.job = jobs[r.int(0, jobs.length - 1)]!.num;
    }
    for (const q of ctx.equipment) {
      const current = q.job ? ctx.job(q.job) : null;
      if (!current || current.end < weekStart || r.chance(0.1)) q.job = r.chance(0.65) ? jobs[r.int(0, jobs.length - 1)]!.num : null;
    }
  }

  private employed(e: Employee, weekStart: string, weekEnd: string): boolean {
    return e.hire <= weekEnd && (!e.termination || e.termination >= weekStart);
  }

  /**
   * Pays the two weeks from `weekStart` (Monday) to the second Sunday on the following Friday.
   * `compute` (the batch after the cutoff): the payroll records are computed in advance on the
   * cutoff day (status 2 Computed: timecard lines, gross, deductions and net pay) and left for
   * POST /payroll-records/post: no paycheck, no journal, no job or equipment costs yet.
   */
  run(weekStart: string, mode: 'post' | 'compute' = 'post'): void {
    const ctx = this.ctx;
    const sim = this.sim;
    const r = ctx.rnd('payroll');
    const weekEnd = addDays(weekStart, 13);
    const checkDate = addDays(weekEnd, 5);
    if (mode === 'post' && checkDate > CUTOFF_DATE) return;
    if (mode === 'compute') {
      this.compute(r, weekStart, weekEnd, checkDate);
      return;
    }
    const secondWeek = addDays(weekStart, 7);
    this.periodSecondWeek = secondWeek;
    const holidaysOf = (monday: string) => [0, 1, 2, 3, 4].map((d) => addDays(monday, d)).filter((d) => HOLIDAYS.has(d));
    const journalRecnum = ctx.books.recnum('lgrtrn');
    // Totals of the week's journal.
    const byJob = new Map<number, Dec>();
    const byEquipment = new Map<number, Dec>();
    let service = ZERO;
    let office = ZERO;
    let pto = ZERO;
    let employerTaxes = ZERO;
    let workersComp = ZERO;
    let benefits = ZERO;
    const credit = { federal: ZERO, fica: ZERO, state: ZERO, deductions: ZERO, workersComp: ZERO, unemployment: ZERO, net: ZERO };
    let directDeposit = ZERO;
    const checks: Array<{ number: string; payee: string; amount: Dec }> = [];
    const crews = new Map<number, Array<{ e: Employee; line: TimeLine }>>();
    const user = USERS[3]!;

    for (const e of ctx.employees) {
      if (!this.employed(e, weekStart, weekEnd)) continue;
      const lines = [
        ...(this.employed(e, weekStart, addDays(weekStart, 6)) ? this.timeLines(r, e, weekStart, holidaysOf(weekStart)) : []),
        ...(this.employed(e, secondWeek, weekEnd) ? this.timeLines(r, e, secondWeek, holidaysOf(secondWeek)) : []),
      ];
      if (lines.length === 0) continue;
      const gross = sum(lines.map((l) => l.amount));
      const regular = sum(lines.filter((l) => l.payType === 1).map((l) => l.hours));
      const overtime = sum(lines.filter((l) => l.payType === 2).map((l) => l.hours));
      const federal = r2(gross.times('0.10'));
      const socialSecurity = r2(gross.times('0.062'));
      const medicare = r2(gross.times('0.0145'));
      const state = r2(gross.times('0.04'));
      const transit = r2(gross.times('0.001'));
      const union = e.union ? r2(gross.times('0.015')) : ZERO;
      const retirement = e.retirementPct.isZero() ? ZERO : r2(gross.times(e.retirementPct).div(100));
      const health = e.health;
      const deductions = federal.plus(socialSecurity).plus(medicare).plus(state).plus(transit).plus(union).plus(retirement).plus(health);
      const net = gross.minus(deductions);
      const erFica = r2(gross.times('0.0765'));
      const unemployment = r2(gross.times('0.03'));
      const wc = r2(gross.times(WC_RATE.get(e.workersComp) ?? ZERO).div(100));
      const erHealth = health.isZero() ? ZERO : new Dec(220);

      const recnum = ctx.books.recnum('payrec');
      const dd = (e.num * 7) % 10 < 7;
      const checkNumber = dd ? `DD${String(recnum).padStart(7, '0')}` : sim.nextCheck(BANK.payroll);
      const id = ctx.uuid();
      ctx.add('payrec', {
        _idnum: id,
        recnum,
        empnum: e.num,
        chknum: checkNumber,
        chkdte: checkDate,
        prdbeg: weekStart,
        prdend: weekEnd,
        reghrs: hours(regular),
        ovthrs: hours(overtime),
        prmhrs: hours(0),
        grspay: money(gross),
        dedttl: money(deductions),
        netpay: money(net),
        status: 3,
        lgrrec: journalRecnum,
        ...ctx.txn(checkDate, addDays(weekEnd, 2), user, 9 * 60 + (recnum % 400), checkDate),
      });
      lines.forEach((l, k) => {
        ctx.add('tmcdln', timecardRow(ctx, id, k, l, e, ctx.audit(addDays(weekEnd, 2), 9 * 60, user)));
        if (l.job) {
          sim.jobCost({
            job: l.job.num,
            phase: l.phase,
            costCode: l.code!,
            costType: 2,
            date: checkDate,
            description: `${e.first} ${e.last} ${l.payType === 2 ? 'overtime' : 'labor'}`,
            source: SRC.postPayroll,
            documentNumber: checkNumber,
            sourceRecord: recnum,
            sourceLine: k + 1,
            employee: e.num,
            amount: l.amount,
            hours: l.hours,
            enteredDate: checkDate,
            user,
          });
          byJob.set(l.job.num, (byJob.get(l.job.num) ?? ZERO).plus(l.amount));
          const crew = crews.get(l.job.num) ?? [];
          crew.push({ e, line: l });
          crews.set(l.job.num, crew);
        } else if (l.equipment) {
          sim.equipmentCost({
            equipment: l.equipment,
            date: checkDate,
            category: 5,
            description: `Shop labor ${e.first} ${e.last}`,
            source: SRC.postPayroll,
            documentNumber: checkNumber,
            sourceRecord: recnum,
            sourceLine: k + 1,
            account: A.shopLabor,
            amount: l.amount,
            hours: l.hours,
            entered: checkDate,
            user,
          });
          byEquipment.set(l.equipment, (byEquipment.get(l.equipment) ?? ZERO).plus(l.amount));
        } else if (l.account === A.serviceCostOfGoods) service = service.plus(l.amount);
        else if (l.account === A.paidTimeOff) pto = pto.plus(l.amount);
        else office = office.plus(l.amount);
      });

      // Paycheck with earnings, taxes and deductions (year-to-date per employee).
      const checkId = ctx.uuid();
      const checkRec = ctx.books.recnum('paychk');
      ctx.add('paychk', {
        _idnum: checkId,
        recnum: checkRec,
        empnum: e.num,
        payrec: recnum,
        chknum: checkNumber,
        chkdte: checkDate,
        prdbeg: weekStart,
        prdend: weekEnd,
        grspay: money(gross),
        dedttl: money(deductions),
        netpay: money(net),
        bnkact: BANK.payroll,
        drcdep: dd,
        status: dd || checkDate <= '2026-10-25' ? 2 : 1,
        lgrrec: journalRecnum,
        ...ctx.txn(checkDate, checkDate, user, 10 * 60 + (checkRec % 300)),
      });
      const checkLines: Array<[number, number | null, string, Dec, Dec, Dec]> = [];
      const byType = new Map<number, { hours: Dec; amount: Dec; rate: Dec }>();
      for (const l of lines) {
        const t = byType.get(l.payType) ?? { hours: ZERO, amount: ZERO, rate: l.rate };
        t.hours = t.hours.plus(l.hours);
        t.amount = t.amount.plus(l.amount);
        byType.set(l.payType, t);
      }
      const payNames: Record<number, string> = { 1: 'Regular', 2: 'Overtime', 5: 'Vacation', 6: 'Holiday' };
      for (const [t, v] of byType) checkLines.push([1, null, payNames[t] ?? 'Other pay', v.hours, v.rate, v.amount]);
      checkLines.push([2, CALC.federal, 'Federal income tax', ZERO, ZERO, federal]);
      checkLines.push([2, CALC.socialSecurity, 'Social security and Medicare', ZERO, ZERO, socialSecurity.plus(medicare)]);
      checkLines.push([2, CALC.state, 'Oregon income and transit tax', ZERO, ZERO, state.plus(transit)]);
      if (!union.isZero()) checkLines.push([3, CALC.union, 'Union dues', ZERO, ZERO, union]);
      if (!retirement.isZero()) checkLines.push([3, CALC.retirement, '401(k) deferral', ZERO, ZERO, retirement]);
      if (!health.isZero()) checkLines.push([3, CALC.health, 'Health plan', ZERO, ZERO, health]);
      if (!erHealth.isZero()) checkLines.push([4, null, 'Health plan (employer)', ZERO, ZERO, erHealth]);
      const ytd = this.ytd.get(e.num) ?? new Map<string, Dec>();
      this.ytd.set(e.num, ytd);
      checkLines.forEach(([type, calc, desc, hrs, rate, amount], k) => {
        const y = (ytd.get(desc) ?? ZERO).plus(amount);
        ytd.set(desc, y);
        ctx.add('pyckln', {
          _idnum: ctx.uuid(),
          _idref: checkId,
          linnum: k + 1,
          lintyp: type,
          calnum: calc,
          dscrpt: desc,
          hrswrk: hours(hrs),
          payrte: price(rate),
          amount: money(amount),
          ytdamt: money(y),
          ...ctx.audit(checkDate, 10 * 60, user),
        });
        if (type === 3 && calc) this.deductionTotals.set(`${e.num}|${calc}`, (this.deductionTotals.get(`${e.num}|${calc}`) ?? ZERO).plus(amount));
      });

      employerTaxes = employerTaxes.plus(erFica).plus(unemployment);
      workersComp = workersComp.plus(wc);
      benefits = benefits.plus(erHealth);
      credit.federal = credit.federal.plus(federal);
      credit.fica = credit.fica.plus(socialSecurity).plus(medicare).plus(erFica);
      credit.state = credit.state.plus(state).plus(transit);
      credit.deductions = credit.deductions.plus(union).plus(retirement).plus(health).plus(erHealth);
      credit.workersComp = credit.workersComp.plus(wc);
      credit.unemployment = credit.unemployment.plus(unemployment);
      credit.net = credit.net.plus(net);
      if (dd) directDeposit = directDeposit.plus(net);
      else checks.push({ number: checkNumber, payee: `${e.first} ${e.last}`, amount: net });
      if (!erHealth.isZero()) this.employerHealth.set(e.num, (this.employerHealth.get(e.num) ?? ZERO).plus(erHealth));
      if (e.hourly) this.vacationHours.set(e.num, (this.vacationHours.get(e.num) ?? ZERO).plus(r4(regular.times('0.0385'))));
      const quarter = Math.floor((Number(checkDate.slice(5, 7)) - 1) / 3) + 1;
      const key = `${e.num}|${quarter}`;
      const q = this.earnings.get(key) ?? { regularHours: ZERO, overtimeHours: ZERO, gross: ZERO, federal: ZERO, state: ZERO, socialSecurity: ZERO, medicare: ZERO, net: ZERO };
      q.regularHours = q.regularHours.plus(regular);
      q.overtimeHours = q.overtimeHours.plus(overtime);
      q.gross = q.gross.plus(gross);
      q.federal = q.federal.plus(federal);
      q.state = q.state.plus(state).plus(transit);
      q.socialSecurity = q.socialSecurity.plus(socialSecurity);
      q.medicare = q.medicare.plus(medicare);
      q.net = q.net.plus(net);
      this.earnings.set(key, q);

      if (e.role === 'service' || e.role === 'mechanic') this.timecard(e, weekStart, weekEnd, recnum, lines);
    }
    if (credit.net.isZero()) return;

    // Fund the payroll account the day before, then post the payroll.
    const transfer = ctx.books.journal({
      source: SRC.bankTransfer,
      date: addDays(checkDate, -1),
      number: `TRF-PR${checkDate.replace(/-/g, '')}`,
      description: `Fund payroll ${checkDate}`,
      user,
      lines: [
        { account: A.cashPayroll, debit: credit.net, description: 'Transfer in' },
        { account: A.cashOperating, credit: credit.net, description: 'Transfer to payroll' },
      ],
    });
    sim.bankTxn({ bank: BANK.operating, date: addDays(checkDate, -1), number: `TRF${checkDate.replace(/-/g, '').slice(2)}`, type: 3, payee: null, description: 'Transfer to payroll account', deposit: ZERO, withdrawal: credit.net, journal: transfer }, undefined, user);
    sim.bankTxn({ bank: BANK.payroll, date: addDays(checkDate, -1), number: `TRF${checkDate.replace(/-/g, '').slice(2)}`, type: 3, payee: null, description: 'Transfer from operating account', deposit: credit.net, withdrawal: ZERO, journal: transfer }, undefined, user);

    const lines = [
      ...[...byJob.entries()].sort((a, b) => a[0] - b[0]).map(([job, amount]) => ({ account: A.laborExpense, debit: amount, job, description: 'Direct labor' })),
      ...[...byEquipment.entries()].sort((a, b) => a[0] - b[0]).map(([equipment, amount]) => ({ account: A.shopLabor, debit: amount, equipment, description: 'Shop labor' })),
      { account: A.serviceCostOfGoods, debit: service, description: 'Service technician labor', department: 3 },
      { account: A.officeSalaries, debit: office, description: 'Office salaries', department: 1 },
      { account: A.paidTimeOff, debit: pto, description: 'Holiday pay' },
      { account: A.payrollTaxes, debit: employerTaxes, description: 'Employer FICA, FUTA and SUTA' },
      { account: A.workersComp, debit: workersComp, description: 'Workers compensation' },
      { account: A.employeeBenefits, debit: benefits, description: 'Employer health contributions' },
      { account: A.fedWithholding, credit: credit.federal, description: 'Federal income tax withheld' },
      { account: A.ficaPayable, credit: credit.fica, description: 'Social security and Medicare' },
      { account: A.stateWithholding, credit: credit.state, description: 'State and transit tax withheld' },
      { account: A.benefitsPayable, credit: credit.deductions, description: 'Union dues, 401(k), health' },
      { account: A.workersCompPayable, credit: credit.workersComp, description: 'Workers compensation payable' },
      { account: A.unemploymentPayable, credit: credit.unemployment, description: 'FUTA and SUTA payable' },
      { account: A.cashPayroll, credit: credit.net, description: 'Net pay' },
    ];
    const posted = ctx.books.journalWithNumber(journalRecnum, {
      source: SRC.postPayroll,
      date: checkDate,
      number: `PR${checkDate.replace(/-/g, '')}`,
      description: `Payroll period ending ${weekEnd}`,
      enteredDate: checkDate,
      user,
      lines,
    });
    if (!directDeposit.isZero()) sim.bankTxn({ bank: BANK.payroll, date: checkDate, number: `DD${checkDate.replace(/-/g, '').slice(2)}`, type: 6, payee: 'Direct deposit batch', description: `Direct deposits ${checkDate}`, deposit: ZERO, withdrawal: directDeposit, journal: posted }, checkDate, user);
    for (const c of checks) sim.bankTxn({ bank: BANK.payroll, date: checkDate, number: c.number, type: 1, payee: c.payee, description: 'Payroll check', deposit: ZERO, withdrawal: c.amount, journal: posted }, checkDate, user);
    const month = Number(checkDate.slice(5, 7));
    sim.accrue(month, A.fedWithholding, credit.federal);
    sim.accrue(month, A.ficaPayable, credit.fica);
    sim.accrue(month, A.stateWithholding, credit.state);
    sim.accrue(month, A.benefitsPayable, credit.deductions);
    sim.accrue(month, A.workersCompPayable, credit.workersComp);
    sim.accrue(month, A.unemploymentPayable, credit.unemployment);
    this.dailyPayrolls(weekStart, crews);
  }

  /** The Computed batch (see run): records and timecard lines only, entered on the cutoff day. */
  private compute(r: Prng, weekStart: string, weekEnd: string, checkDate: string): void {
    const ctx = this.ctx;
    const user = USERS[3]!;
    const secondWeek = addDays(weekStart, 7);
    this.periodSecondWeek = secondWeek;
    const holidaysOf = (monday: string) => [0, 1, 2, 3, 4].map((d) => addDays(monday, d)).filter((d) => HOLIDAYS.has(d));
    for (const e of ctx.employees) {
      if (!this.employed(e, weekStart, weekEnd)) continue;
      const lines = [
        ...(this.employed(e, weekStart, addDays(weekStart, 6)) ? this.timeLines(r, e, weekStart, holidaysOf(weekStart)) : []),
        ...(this.employed(e, secondWeek, weekEnd) ? this.timeLines(r, e, secondWeek, holidaysOf(secondWeek)) : []),
      ];
      if (lines.length === 0) continue;
      const gross = sum(lines.map((l) => l.amount));
      // The same calculations as a posted payroll (and as the posting engine's check of them).
      const withheld = [gross.times('0.10'), gross.times('0.062'), gross.times('0.0145'), gross.times('0.04'), gross.times('0.001')].map(r2);
      const union = e.union ? r2(gross.times('0.015')) : ZERO;
      const retirement = e.retirementPct.isZero() ? ZERO : r2(gross.times(e.retirementPct).div(100));
      const deductions = sum(withheld).plus(union).plus(retirement).plus(e.health);
      const recnum = ctx.books.recnum('payrec');
      const id = ctx.uuid();
      ctx.add('payrec', {
        _idnum: id,
        recnum,
        empnum: e.num,
        chknum: null,
        chkdte: checkDate,
        prdbeg: weekStart,
        prdend: weekEnd,
        reghrs: hours(sum(lines.filter((l) => l.payType === 1).map((l) => l.hours))),
        ovthrs: hours(sum(lines.filter((l) => l.payType === 2).map((l) => l.hours))),
        prmhrs: hours(0),
        grspay: money(gross),
        dedttl: money(deductions),
        netpay: money(gross.minus(deductions)),
        status: 2,
        lgrrec: null,
        ...ctx.txn(checkDate, CUTOFF_DATE, user, 15 * 60 + (recnum % 120)),
      });
      lines.forEach((l, k) => {
        ctx.add('tmcdln', timecardRow(ctx, id, k, l, e, ctx.audit(CUTOFF_DATE, 15 * 60, user)));
      });
    }
  }

  private timeLines(r: Prng, e: Employee, weekStart: string, holidays: string[]): TimeLine[] {
    const ctx = this.ctx;
    const lines: TimeLine[] = [];
    const holidayHours = new Dec(8 * holidays.length);
    if (!e.hourly) {
      // Salary is per (two-week) pay period: half of it each week.
      const half = r2(e.salary.div(2));
      const amount = weekStart.localeCompare(this.periodSecondWeek ?? '') === 0 ? e.salary.minus(half) : half;
      return [{ workDate: weekStart, job: null, phase: null, code: null, equipment: null, payType: 1, hours: new Dec(40), rate: r4(e.salary.div(80)), amount, account: A.officeSalaries, description: 'Salary' }];
    }
    const absent = r.chance(0.03);
    if (absent) {
      return [{ workDate: weekStart, job: null, phase: null, code: null, equipment: null, payType: 5, hours: new Dec(40), rate: e.rate, amount: r2(e.rate.times(40)), account: A.paidTimeOff, description: 'Vacation' }];
    }
    let regular = new Dec(40).minus(holidayHours);
    if (r.chance(0.1)) regular = Dec.max(new Dec(8), regular.minus(8 * r.int(1, 2)));
    const overtime = r.chance(0.25) ? new Dec(r.int(2, 10)) : ZERO;
    if (e.role === 'field' || e.role === 'foreman') {
      const job = e.job ? ctx.job(e.job) : null;
      if (!job) {
        lines.push({ workDate: weekStart, job: null, phase: null, code: null, equipment: null, payType: 1, hours: regular, rate: e.rate, amount: r2(regular.times(e.rate)), account: A.paidTimeOff, description: 'Shop and yard time' });
      } else {
        // Daily time by cost code, as crews report it: each working day on one code, or split
        // between two; now and then a day on another job; overtime on a busy day.
        const rate = this.jobRate(e, job);
        const days = [0, 1, 2, 3, 4].map((d) => addDays(weekStart, d)).filter((d) => !holidays.includes(d));
        const dayCount = Math.max(1, Math.min(days.length, regular.div(8).toDecimalPlaces(0, Dec.ROUND_DOWN).toNumber()));
        const main = jobCode(r, job, e.role === 'foreman' ? '1.100' : undefined);
        const otherJobs = ctx.activeJobs(weekStart);
        let left = regular;
        for (let k = 0; k < dayCount; k++) {
          const day = days[k]!;
          const dayHours = k === dayCount - 1 ? left : Dec.min(left, new Dec(8));
          left = left.minus(dayHours);
          const dayJob = otherJobs.length > 1 && r.chance(0.05) ? otherJobs[r.int(0, otherJobs.length - 1)]! : job;
          const dayRate = dayJob === job ? rate : this.jobRate(e, dayJob);
          const c1 = dayJob === job && r.chance(0.6) ? main : jobCode(r, dayJob);
          if (dayHours.gte(6) && r.chance(0.35)) {
            const h1 = new Dec(r.int(2, 5));
            const c2 = jobCode(r, dayJob);
            lines.push({ workDate: day, job: dayJob, phase: c1.phase, code: c1.code, equipment: null, payType: 1, hours: h1, rate: dayRate, amount: r2(h1.times(dayRate)), account: A.laborExpense, description: 'Labor' });
            const h2 = dayHours.minus(h1);
            lines.push({ workDate: day, job: dayJob, phase: c2.phase, code: c2.code, equipment: null, payType: 1, hours: h2, rate: dayRate, amount: r2(h2.times(dayRate)), account: A.laborExpense, description: 'Labor' });
          } else if (dayHours.gt(0)) {
            lines.push({ workDate: day, job: dayJob, phase: c1.phase, code: c1.code, equipment: null, payType: 1, hours: dayHours, rate: dayRate, amount: r2(dayHours.times(dayRate)), account: A.laborExpense, description: 'Labor' });
          }
        }
        if (overtime.gt(0)) {
          const otRate = r4(rate.times('1.5'));
          lines.push({ workDate: days[days.length - 1] ?? weekStart, job, phase: main.phase, code: main.code, equipment: null, payType: 2, hours: overtime, rate: otRate, amount: r2(overtime.times(otRate)), account: A.laborExpense, description: 'Overtime' });
        }
      }
    } else if (e.role === 'mechanic') {
      const units = r.sample(ctx.equipment, r.int(1, 3));
      let left = regular;
      units.forEach((q, k) => {
        const h = k === units.length - 1 ? left : Dec.min(left, new Dec(r.int(4, 16)));
        left = left.minus(h);
        if (h.gt(0)) lines.push({ workDate: addDays(weekStart, k), job: null, phase: null, code: null, equipment: q.num, payType: 1, hours: h, rate: e.rate, amount: r2(h.times(e.rate)), account: A.shopLabor, description: `Repair ${q.name}`.slice(0, 50) });
      });
    } else {
      lines.push({ workDate: weekStart, job: null, phase: null, code: null, equipment: null, payType: 1, hours: regular, rate: e.rate, amount: r2(regular.times(e.rate)), account: A.serviceCostOfGoods, description: 'Service calls' });
      if (overtime.gt(0)) {
        const otRate = r4(e.rate.times('1.5'));
        lines.push({ workDate: addDays(weekStart, 5), job: null, phase: null, code: null, equipment: null, payType: 2, hours: overtime, rate: otRate, amount: r2(overtime.times(otRate)), account: A.serviceCostOfGoods, description: 'After-hours calls' });
      }
    }
    for (const h of holidays) lines.push({ workDate: h, job: null, phase: null, code: null, equipment: null, payType: 6, hours: new Dec(8), rate: e.rate, amount: r2(e.rate.times(8)), account: A.paidTimeOff, description: 'Holiday' });
    return lines;
  }

  /** Prevailing-wage jobs pay at least the job paygroup rate (20% over the paygroup's). */
  private jobRate(e: Employee, job: Job): Dec {
    if (job.jobType !== 2) return e.rate;
    const prevailing = this.ctx.paygroupRates.get(e.paygroup);
    if (!prevailing) return e.rate;
    const pw = r2(prevailing.times('1.2'));
    return pw.gt(e.rate) ? pw : e.rate;
  }

  private timecard(e: Employee, weekStart: string, weekEnd: string, payrec: number, lines: TimeLine[]): void {
    const ctx = this.ctx;
    const id = ctx.uuid();
    ctx.add('tmcard', {
      _idnum: id,
      recnum: ctx.books.recnum('tmcard'),
      empnum: e.num,
      wekend: weekEnd,
      ttlhrs: hours(sum(lines.map((l) => l.hours))),
      aprusr: USERS[0]!,
      payrec,
      status: 3,
      ...ctx.audit(addDays(weekEnd, 1), 7 * 60 + 30, e.role === 'service' ? 'field-app' : 'shop-app'),
    });
    lines.forEach((l, k) => {
      ctx.add('tmcrln', {
        _idnum: ctx.uuid(),
        _idref: id,
        linnum: k + 1,
        wrkdte: l.workDate,
        jobnum: l.job?.num ?? null,
        phsnum: l.phase,
        cstcde: l.code ? code(l.code) : null,
        eqpnum: l.equipment,
        paytyp: l.payType,
        hrswrk: hours(l.hours),
        dscrpt: l.description,
        ...ctx.audit(addDays(weekEnd, 1), 7 * 60 + 30),
      });
    });
    void weekStart;
  }

  /** Crew reports: every other pay period per job, the second Wednesday's hours of the crew and equipment. */
  private dailyPayrolls(weekStart: string, crews: Map<number, Array<{ e: Employee; line: TimeLine }>>): void {
    const ctx = this.ctx;
    const day = addDays(weekStart, 9);
    const onJob = new Map<number, Array<(typeof ctx.equipment)[number]>>();
    for (const q of ctx.equipment) {
      if (!q.job) continue;
      const list = onJob.get(q.job) ?? [];
      list.push(q);
      onJob.set(q.job, list);
    }
    const period = Math.round(daysBetween('2025-12-22', weekStart) / 14);
    for (const [jobNum, crew] of [...crews.entries()].sort((a, b) => a[0] - b[0])) {
      // Foremen send a crew report every other pay period.
      if ((jobNum + period) % 2 !== 0) continue;
      const job = ctx.job(jobNum);
      // The crew of the report day: each employee once, with that day's lines on this job.
      const members: Array<{ e: Employee; line: TimeLine; hours: Dec }> = [];
      for (const c of crew) {
        if (c.line.payType !== 1 || c.line.workDate !== day) continue;
        const m = members.find((x) => x.e === c.e);
        if (m) m.hours = m.hours.plus(c.line.hours);
        else members.push({ e: c.e, line: c.line, hours: c.line.hours });
      }
      if (members.length === 0) continue;
      const equipment = onJob.get(jobNum) ?? [];
      const id = ctx.uuid();
      const total = sum(members.map((m) => m.hours));
      ctx.add('dlypyr', {
        _idnum: id,
        recnum: ctx.books.recnum('dlypyr'),
        jobnum: jobNum,
        wrkdte: day,
        frmnum: job.supervisor,
        dscrpt: `Crew report ${job.name}`.slice(0, 50),
        ttlhrs: hours(total),
        status: addDays(weekStart, 18) <= CUTOFF_DATE ? 2 : 1,
        ...ctx.txn(day, day, 'field-app', 17 * 60),
      });
      members.forEach((m, k) => {
        const eq = equipment[k];
        ctx.add('dlypln', {
          _idnum: ctx.uuid(),
          _idref: id,
          linnum: k + 1,
          empnum: m.e.num,
          phsnum: m.line.phase,
          cstcde: m.line.code ? code(m.line.code) : null,
          paytyp: 1,
          hrswrk: hours(m.hours),
          payrte: price(m.line.rate),
          eqpnum: eq?.num ?? null,
          eqphrs: hours(eq ? Dec.min(m.hours, new Dec(6)) : 0),
          ...ctx.audit(day, 17 * 60, 'field-app'),
        });
      });
    }
  }
}

/** Remits last month's payroll liabilities on the 15th (source 5, cash disbursements). */
export function taxDeposits(sim: Sim, date: string): void {
  const ctx = sim.ctx;
  const month = Number(date.slice(5, 7)) - 1;
  if (month < 1) return;
  const groups: ReadonlyArray<readonly [string, number, number[]]> = [
    ['Federal tax deposit', ctx.special.taxAgency, [A.fedWithholding, A.ficaPayable]],
    ['State withholding and unemployment', ctx.special.stateAgency, [A.stateWithholding, A.unemploymentPayable]],
    ['Union dues, 401(k) and health', ctx.special.benefits, [A.benefitsPayable]],
    ['Workers compensation premium', ctx.special.stateAgency, [A.workersCompPayable]],
  ];
  for (const [what, vendor, accounts] of groups) {
    const amounts = accounts.map((a) => sim.liabilities.get(`${month}|${a}`) ?? ZERO);
    const total = sum(amounts);
    if (total.isZero()) continue;
    const payee = ctx.vendors[vendor - 1]?.name ?? what;
    const journal = ctx.books.journal({
      source: SRC.cashDisbursements,
      date,
      number: `DEP${date.slice(0, 7).replace('-', '')}-${accounts[0]}`,
      description: `${what} ${date.slice(0, 7)}`,
      user: USERS[3]!,
      lines: [...accounts.map((a, k) => ({ account: a, debit: amounts[k]!, description: what })), { account: A.cashOperating, credit: total, description: payee }],
    });
    sim.bankTxn({ bank: BANK.operating, date, number: `EFT${date.replace(/-/g, '').slice(2)}${accounts[0]}`, type: 6, payee, description: what, deposit: ZERO, withdrawal: total, journal });
  }
}
