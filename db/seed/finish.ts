/**
 * End of the run: period balances of the ledger, stock quantities and period-end balances,
 * quarterly employee earnings, deductions and benefits with their year-to-date amounts, bank
 * reconciliations, the parts' average costs, and the number sequences for the posting code.
 */
import { Dec } from '../../src/storage/decimal';
import { CUTOFF_DATE, FISCAL_YEAR, USERS } from './books';
import type { Ctx } from './context';
import type { Payroll } from './payroll';
import { BANK, BANK_ACCOUNT, LAST_RECONCILED_MONTH, Sim } from './sim';
import { addDays, hours, lastDayOfMonth, money, price, qty, r2, stamp, sum, ZERO } from './util';
import { batchUpdate } from './writer';

export function writeLedgerBalances(ctx: Ctx): void {
  for (const b of ctx.books.balanceRows()) {
    ctx.w.add('lgrbal', {
      _idnum: ctx.uuid(),
      recnum: ctx.books.recnum('lgrbal'),
      lgract: b.account,
      postyr: b.year,
      actprd: b.period,
      dbttot: money(b.debit),
      crdtot: money(b.credit),
      ...ctx.audit(b.year < FISCAL_YEAR ? '2025-12-31' : CUTOFF_DATE, 18 * 60, 'posting'),
    });
  }
}

export function writeInventory(sim: Sim): void {
  const { ctx, inv } = sim;
  const cells = [...inv.allCells()].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (const [part, location, c] of cells) {
    const p = ctx.parts[part - 1]!;
    ctx.add('invqty', {
      _idnum: ctx.uuid(),
      recnum: ctx.books.recnum('invqty'),
      prtnum: part,
      locnum: location,
      qtyohn: qty(c.qty),
      qtyavl: qty(c.qty.minus(c.held)),
      qtyord: qty(c.onOrder),
      minqty: qty(c.min),
      maxqty: qty(c.max),
      binloc: c.bin,
      avgcst: price(inv.average(part)),
      ...ctx.audit(CUTOFF_DATE, 18 * 60, 'posting'),
    });
    void p;
  }
  for (const [period, rows] of [...inv.snapshots.entries()].sort((a, b) => a[0] - b[0])) {
    for (const s of rows.sort((a, b) => a.part - b.part || a.location - b.location)) {
      ctx.add('invbal', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('invbal'),
        prtnum: s.part,
        locnum: s.location,
        postyr: FISCAL_YEAR,
        actprd: period,
        balqty: qty(s.qty),
        balval: money(s.value),
        avgcst: price(s.avg),
        ...ctx.audit(addDays(lastDayOfMonth(FISCAL_YEAR, period), 1), 6 * 60, 'period-close'),
      });
    }
  }
}

export function writePayrollTotals(ctx: Ctx, payroll: Payroll): void {
  const keys = [...payroll.earnings.keys()].sort((a, b) => {
    const [ea, qa] = a.split('|').map(Number);
    const [eb, qb] = b.split('|').map(Number);
    return ea! - eb! || qa! - qb!;
  });
  for (const key of keys) {
    const [emp, quarter] = key.split('|').map(Number);
    const q = payroll.earnings.get(key)!;
    ctx.add('empern', {
      _idnum: ctx.uuid(),
      recnum: ctx.books.recnum('empern'),
      empnum: emp,
      postyr: FISCAL_YEAR,
      qtrnum: quarter,
      reghrs: hours(q.regularHours),
      ovthrs: hours(q.overtimeHours),
      grspay: money(q.gross),
      fedwth: money(q.federal),
      stawth: money(q.state),
      socsec: money(q.socialSecurity),
      medcre: money(q.medicare),
      netpay: money(q.net),
      ...ctx.audit(quarter! < 4 ? addDays(lastDayOfMonth(FISCAL_YEAR, quarter! * 3), 1) : CUTOFF_DATE, 7 * 60, USERS[3]!),
    });
  }
  for (const d of ctx.payrollDeductions) {
    ctx.add('payded', {
      _idnum: ctx.uuid(),
      recnum: ctx.books.recnum('payded'),
      empnum: d.emp,
      calnum: d.calc,
      dscrpt: d.description,
      dedamt: money(d.amount),
      dedrte: price(d.rate),
      maxamt: money(d.calc === 7 ? 23500 : 0),
      ytdamt: money(payroll.deductionTotals.get(`${d.emp}|${d.calc}`) ?? ZERO),
      sttdte: '2026-01-01',
      enddte: null,
      inactv: false,
      ...ctx.audit('2025-12-20', 9 * 60, USERS[3]!),
      upddte: stamp(CUTOFF_DATE, 17 * 60),
    });
  }
  for (const e of ctx.employees) {
    const health = payroll.employerHealth.get(e.num);
    if (health) {
      ctx.add('benfit', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('benfit'),
        empnum: e.num,
        calnum: 8,
        bnfnme: 'Health plan (employer share)',
        bnfrte: price(220),
        maxamt: money(0),
        ytdamt: money(health),
        sttdte: e.hire > '2026-01-01' ? e.hire : '2026-01-01',
        enddte: e.termination,
        inactv: !!e.termination,
        ...ctx.audit('2025-12-20', 9 * 60, USERS[3]!),
      });
    }
    const vacation = payroll.vacationHours.get(e.num);
    if (vacation) {
      ctx.add('benfit', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('benfit'),
        empnum: e.num,
        calnum: null,
        bnfnme: 'Vacation accrual (hours)',
        bnfrte: price('0.0385'),
        maxamt: money(120),
        ytdamt: money(vacation),
        sttdte: e.hire > '2026-01-01' ? e.hire : '2026-01-01',
        enddte: e.termination,
        inactv: !!e.termination,
        ...ctx.audit('2025-12-20', 9 * 60, USERS[3]!),
      });
    }
  }
}

/** Monthly statements of the operating and payroll accounts, January to October, reconciled. */
export function writeBankReconciliations(sim: Sim): Map<number, { date: string; balance: Dec }> {
  const { ctx } = sim;
  const last = new Map<number, { date: string; balance: Dec }>();
  for (const bank of [BANK.operating, BANK.payroll]) {
    let balance = sim.openingCash.get(bank) ?? ZERO;
    for (let month = 1; month <= LAST_RECONCILED_MONTH; month++) {
      const txns = (sim.statements.get(`${bank}|${month}`) ?? []).slice().sort((a, b) => a.recnum - b.recnum);
      const deposits = sum(txns.map((t) => t.deposit));
      const payments = sum(txns.map((t) => t.withdrawal));
      const end = balance.plus(deposits).minus(payments);
      const date = lastDayOfMonth(FISCAL_YEAR, month);
      const id = ctx.uuid();
      ctx.add('bnkrec', {
        _idnum: id,
        recnum: Sim.reconciliationNumber(bank, month),
        bnkact: bank,
        stmdte: date,
        begbal: money(balance),
        stmbal: money(end),
        clrdep: money(deposits),
        clrpmt: money(payments),
        dffrnc: money(0),
        rcnusr: USERS[3]!,
        rcndte: addDays(date, 8),
        status: 2,
        ...ctx.audit(addDays(date, 6), 10 * 60, USERS[3]!),
        upddte: stamp(addDays(date, 8), 16 * 60),
      });
      txns.forEach((t, k) => {
        ctx.add('bkrcln', {
          _idnum: ctx.uuid(),
          _idref: id,
          linnum: k + 1,
          trnrec: t.recnum,
          trndte: t.date,
          trnnum: t.number,
          dscrpt: t.description,
          amount: money(t.deposit.minus(t.withdrawal)),
          clrflg: true,
          ...ctx.audit(addDays(date, 8), 16 * 60, USERS[3]!),
        });
      });
      balance = end;
      last.set(bank, { date, balance });
    }
  }
  void BANK_ACCOUNT;
  return last;
}

/** Completes rows written before their final figures were known (parts' costs, banks' last reconciliation). */
export async function patchMasters(sim: Sim, reconciled: Map<number, { date: string; balance: Dec }>): Promise<void> {
  const { ctx } = sim;
  const w = ctx.w;
  await batchUpdate(w, w.executor, 'tkfprt', {
    key: 'recnum',
    columns: ['avgcst', 'lstcst', 'upddte'],
    rows: ctx.parts.map((p) => [p.num, price(sim.inv.average(p.num)), price(sim.inv.lastCost.get(p.num) ?? p.cost), p.edited]),
  });
  if (w.hasTable('bnkact')) {
    await batchUpdate(w, w.executor, 'bnkact', {
      key: 'recnum',
      // upddte set explicitly (and different from the insert's), so the update trigger keeps it.
      columns: ['lstrec', 'lstbal', 'upddte'],
      rows: [...reconciled.entries()].map(([bank, r]) => [bank, r.date, money(r.balance), stamp(addDays(r.date, 8), 16 * 60)]),
    });
  }
}

/** numseq: the next record number of every table the seed numbered. */
export function writeSequences(ctx: Ctx): void {
  if (!ctx.w.hasTable('numseq')) return;
  const ts = stamp(CUTOFF_DATE, 18 * 60 + 30);
  for (const [table, max] of [...ctx.w.maxRecnum.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    ctx.w.add('numseq', { name: table, next_value: max + 1, upddte: ts });
  }
  void r2;
}
