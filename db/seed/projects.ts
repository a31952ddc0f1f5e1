/**
 * Project documents: budgets, job paygroups, proposals, subcontracts and change orders (planned
 * before the year runs), and at the end of the run the cost-, hours- and units-to-complete
 * reports from the job costs actually booked.
 */
import { Dec } from '../../src/storage/decimal';
import { CUTOFF_DATE, USERS } from './books';
import { COST_CODES, COST_TYPE_ACCOUNT } from './chart';
import type { Ctx, Job } from './context';
import type { ChangeOrderEffect } from './ar';
import type { SubcontractPlan } from './ap';
import type { Sim } from './sim';
import { addDays, code, daysBetween, hours, money, pct, price, qty, r2, r4, sum, ZERO } from './util';

interface BudgetLine {
  phase: number;
  code: string;
  unit: string;
  quantity: Dec;
  hours: Dec;
  byType: Dec[]; // material, labor, equipment, subcontract, other
}

const UNITS = new Map(COST_CODES.map(([c, , u]) => [c, u]));

export class Projects {
  readonly budgets = new Map<number, BudgetLine[]>();
  readonly subcontracts: SubcontractPlan[] = [];
  readonly changes: ChangeOrderEffect[] = [];
  /** Index of the first subcontract of the job being planned. */
  private firstSubOfJob = 0;

  constructor(private readonly ctx: Ctx) {}

  /** Budgets, job paygroups, proposals, subcontracts and change orders of every job. */
  plan(sim: Sim): void {
    const ctx = this.ctx;
    const r = ctx.rnd('projects');
    const subs = ctx.vendorsByKind.get(2) ?? [];
    let subIndex = 0;
    for (const job of ctx.jobs) {
      const planned = ctx.plannedCost.get(job.num)!;
      // Budget: the planned cost spread over the job's codes, split by cost type.
      const weights = job.codes.map(() => new Dec(r.int(5, 20)));
      const wsum = sum(weights);
      const lines: BudgetLine[] = job.codes.map((c, k) => {
        const amount = r2(planned.times(weights[k]!).div(wsum));
        const mix = [r.int(20, 45), r.int(30, 50), r.int(3, 12), r.int(0, 25), r.int(2, 6)].map((x) => new Dec(x));
        const msum = sum(mix);
        const byType = mix.map((m) => r2(amount.times(m).div(msum)));
        byType[1] = byType[1]!.plus(amount.minus(sum(byType)));
        return { phase: c.phase, code: c.code, unit: UNITS.get(c.code) ?? 'LS', quantity: new Dec(r.int(10, 4000)), hours: r2(byType[1]!.div(34)), byType };
      });
      this.budgets.set(job.num, lines);
      if (job.status >= 3) this.writeBudget(job, lines, 1, job.status === 4 && r.chance(0.3) ? 3 : 2, addDays(job.start, -14));
      if (job.status === 4 && r.chance(0.3)) {
        const revised = lines.map((l) => ({ ...l, byType: l.byType.map((v) => r2(v.times(r.int(98, 110)).div(100))) }));
        revised.forEach((l) => (l.hours = r2(l.byType[1]!.div(34))));
        this.budgets.set(job.num, revised);
        this.writeBudget(job, revised, 2, 2, minDate(addDays(job.start, 90), addDays(CUTOFF_DATE, -30)));
      }
      if (job.status === 4 && r.chance(0.2)) this.writeBudget(job, this.budgets.get(job.num)!, 3, 1, addDays(CUTOFF_DATE, -r.int(1, 20)));
      if (job.jobType === 2) {
        for (const [group, base] of ctx.paygroupRates) {
          if (group > 5) continue;
          ctx.add('jobpgp', {
            _idnum: ctx.uuid(),
            recnum: ctx.books.recnum('jobpgp'),
            jobnum: job.num,
            paygrp: group,
            payrt1: price(r2(base.times('1.2'))),
            payrt2: price(r2(base.times('1.8'))),
            payrt3: price(r2(base.times('2.4'))),
            frnrte: price(r.money(9, 16)),
            effdte: job.start,
            ...ctx.audit(minDate(job.start, CUTOFF_DATE)),
          });
        }
      }
      this.proposal(job, lines);
      if ((job.status === 4 || job.status === 5) && job.start <= CUTOFF_DATE) {
        const count = subs.length ? r.int(1, 3) : 0;
        for (let k = 0; k < count; k++) {
          const vendor = subs[subIndex++ % subs.length]!;
          const codes = r.sample(job.codes, r.int(1, 3));
          const original = planned.times(r.int(8, 20)).div(100).div(100).toDecimalPlaces(0).times(100);
          const values = codes.map((_, i) => (i === codes.length - 1 ? original.minus(original.div(codes.length).toDecimalPlaces(0).times(codes.length - 1)) : original.div(codes.length).toDecimalPlaces(0)));
          const plan: SubcontractPlan = {
            num: ctx.books.recnum('subcon'),
            vendor,
            job,
            number: `SC${job.num}-${k + 1}`,
            date: addDays(job.start, -10),
            original,
            changes: ZERO,
            retainagePct: new Dec(job.jobType === 2 ? 5 : 10),
            lines: codes.map((c, i) => ({ description: `${vendor.name.split(' ').slice(1).join(' ') || 'Work'} per scope ${c.code}`.slice(0, 50), phase: c.phase, code: c.code, value: values[i]!, billed: ZERO, retainage: ZERO })),
            billed: ZERO,
            retainageHeld: ZERO,
            insuranceExpires: addDays('2026-06-30', r.int(0, 365)),
          };
          this.subcontracts.push(plan);
        }
      }
      this.changeOrders(job, r);
      this.firstSubOfJob = this.subcontracts.length;
    }
    for (const s of this.subcontracts) sim.commit(s.job.num, s.original.plus(s.changes));
  }

  private writeBudget(job: Job, lines: BudgetLine[], type: number, status: number, date: string): void {
    const ctx = this.ctx;
    const id = ctx.uuid();
    const total = sum(lines.map((l) => sum(l.byType)));
    ctx.add('bdgmst', {
      _idnum: id,
      recnum: ctx.books.recnum('bdgmst'),
      jobnum: job.num,
      bdgnme: ['', 'Original budget', 'Revised budget', 'Forecast'][type],
      bdgtyp: type,
      dscrpt: `${['', 'Original', 'Revised', 'Forecast'][type]} budget ${job.name}`.slice(0, 50),
      ttlbdg: money(total),
      ttlhrs: hours(sum(lines.map((l) => l.hours))),
      aprdte: status === 1 ? null : date,
      status,
      ...ctx.audit(date < '2025-06-01' ? '2025-06-01' : date, 10 * 60, USERS[0]!),
    });
    lines.forEach((l, k) => {
      ctx.add('bdglin', {
        _idnum: ctx.uuid(),
        _idref: id,
        linnum: k + 1,
        phsnum: l.phase,
        cstcde: code(l.code),
        dscrpt: COST_CODES.find(([c]) => c === l.code)?.[1] ?? l.code,
        bdgqty: qty(l.quantity),
        untdsc: l.unit,
        hrsbdg: hours(l.hours),
        matbdg: money(l.byType[0]!),
        labbdg: money(l.byType[1]!),
        eqpbdg: money(l.byType[2]!),
        subbdg: money(l.byType[3]!),
        othbdg: money(l.byType[4]!),
        ttlbdg: money(sum(l.byType)),
        ...ctx.audit(date < '2025-06-01' ? '2025-06-01' : date, 10 * 60, USERS[0]!),
      });
    });
  }

  private proposal(job: Job, lines: BudgetLine[], date?: string): void {
    const ctx = this.ctx;
    const r = ctx.rnd('proposals');
    const status = job.status === 1 ? 2 : job.status === 2 ? 4 : 3;
    const when = date ?? minDate(addDays(job.start, -r.int(30, 75)), addDays(CUTOFF_DATE, -r.int(5, 60)));
    const id = ctx.uuid();
    const planned = ctx.plannedCost.get(job.num)!;
    const markup = new Dec(25);
    const priced = lines.map((l) => {
      const cost = sum(l.byType);
      const extended = r2(cost.times('1.25'));
      return { l, extended, unitPrice: l.quantity.isZero() ? extended : r4(extended.div(l.quantity)) };
    });
    ctx.add('propsl', {
      _idnum: id,
      recnum: ctx.books.recnum('propsl'),
      clnnum: job.client,
      jobnum: job.num,
      prpdte: when,
      dscrpt: `Proposal: ${job.name}`.slice(0, 50),
      prpamt: money(job.contract),
      estcst: money(planned),
      mrkpct: pct(markup),
      expdte: addDays(when, 60),
      slsnum: ctx.employeesByRole('office')[0]?.num ?? null,
      status,
      ...ctx.audit(when < '2025-01-02' ? '2025-01-02' : when, 15 * 60, USERS[0]!),
      upddte: `${status === 3 ? minDate(addDays(when, 20), CUTOFF_DATE) : when} 15:30:00`,
    });
    priced.forEach(({ l, extended }, k) => {
      ctx.add('prplin', {
        _idnum: ctx.uuid(),
        _idref: id,
        linnum: k + 1,
        dscrpt: COST_CODES.find(([c]) => c === l.code)?.[1] ?? l.code,
        cstcde: code(l.code),
        csttyp: null,
        linqty: qty(l.quantity),
        untdsc: l.unit,
        linprc: price(l.quantity.isZero() ? extended : r4(extended.div(l.quantity))),
        extttl: money(r2(l.quantity.times(l.quantity.isZero() ? extended : r4(extended.div(l.quantity))))),
        ...ctx.audit(when < '2025-01-02' ? '2025-01-02' : when, 15 * 60, USERS[0]!),
      });
    });
  }

  private changeOrders(job: Job, r: ReturnType<Ctx['rnd']>): void {
    const ctx = this.ctx;
    if (job.status !== 4 && job.status !== 5) return;
    const from = job.start > '2026-01-05' ? job.start : '2026-01-05';
    const to = minDate(job.end, addDays(CUTOFF_DATE, -2));
    if (from >= to) return;
    const span = daysBetween(from, to);
    const count = r.int(0, 3);
    const subs = this.subcontracts.slice(this.firstSubOfJob);
    for (let k = 0; k < count; k++) {
      const date = addDays(from, r.int(0, span));
      const sub = subs.length && r.chance(0.25) ? subs[r.int(0, subs.length - 1)]! : null;
      const status = r.weighted([[1, 55], [2, 15], [3, 12], [4, 5], [5, 3], [6, 10]] as const);
      const approvedOn = addDays(date, r.int(5, 25));
      const approved = status === 1 && approvedOn <= CUTOFF_DATE;
      const lines = r.sample(job.codes, r.int(1, 3)).map((c) => {
        const quantity = new Dec(r.int(1, 200));
        const unitPrice = r.money(15, 900);
        const amount = r2(quantity.times(unitPrice));
        return { c, quantity, unitPrice, amount, hours: r2(amount.div(90)), billing: r2(amount.times('1.15')), type: sub ? 4 : r.pick([1, 2, 4, 5]) };
      });
      const requested = sum(lines.map((l) => (sub ? l.amount : l.billing)));
      const id = ctx.uuid();
      const recnum = ctx.books.recnum('prmchg');
      ctx.add('prmchg', {
        _idnum: id,
        recnum,
        jobnum: job.num,
        chgnum: `${sub ? 'SCO' : 'PCO'}-${String(k + 1).padStart(3, '0')}`,
        chgdte: date,
        dscrpt: r.pick(['Owner-requested added scope', 'Unforeseen rock excavation', 'Revised electrical layout', 'Upgraded finishes', 'Additional fire blocking', 'Design clarification RFI 12']),
        chgtyp: sub ? 2 : 1,
        ctcrec: sub?.num ?? null,
        reason: r.pick(['Owner request', 'Design change', 'Field condition', 'Code requirement']),
        reqamt: money(requested),
        apramt: money(approved ? requested : ZERO),
        aprdte: approved ? approvedOn : null,
        schdys: r.int(0, 15),
        status: status === 1 && !approved ? 3 : status,
        ...ctx.audit(date, 11 * 60, USERS[0]!),
        ...(approved ? { upddte: `${approvedOn} 11:45:00` } : {}),
      });
      lines.forEach((l, i) => {
        ctx.add('sbcgln', {
          _idnum: ctx.uuid(),
          _idref: id,
          linnum: i + 1,
          dscrpt: COST_CODES.find(([c]) => c === l.c.code)?.[1] ?? 'Change',
          phsnum: l.c.phase,
          cstcde: code(l.c.code),
          csttyp: l.type,
          chgqty: qty(l.quantity),
          untdsc: UNITS.get(l.c.code) ?? 'EA',
          untprc: price(l.unitPrice),
          chgamt: money(l.amount),
          chghrs: hours(l.hours),
          blgamt: money(l.billing),
          ...ctx.audit(date, 11 * 60, USERS[0]!),
        });
      });
      if (approved && sub) sub.changes = sub.changes.plus(requested);
      else if (approved) this.changes.push({ job: job.num, date: approvedOn, amount: requested });
    }
  }

  /** Open proposals to clients for work not yet a job. */
  openProposals(): void {
    const ctx = this.ctx;
    const r = ctx.rnd('open-proposals');
    const n = ctx.n(3, 2);
    for (let k = 0; k < n; k++) {
      const client = ctx.clients[r.int(0, ctx.clients.length - 1)]!;
      const when = addDays(CUTOFF_DATE, -r.int(3, 120));
      const id = ctx.uuid();
      const amount = r.money(20000, 400000);
      ctx.add('propsl', {
        _idnum: id,
        recnum: ctx.books.recnum('propsl'),
        clnnum: client.num,
        jobnum: null,
        prpdte: when,
        dscrpt: `Proposal: ${client.name} ${r.pick(['roof replacement', 'parking lot repair', 'office refresh', 'HVAC upgrade'])}`.slice(0, 50),
        prpamt: money(amount),
        estcst: money(r2(amount.div('1.2'))),
        mrkpct: pct(20),
        expdte: addDays(when, 45),
        slsnum: ctx.employeesByRole('office')[0]?.num ?? null,
        status: r.chance(0.15) ? 5 : r.chance(0.5) ? 1 : 2,
        ...ctx.audit(when, 14 * 60, USERS[0]!),
      });
      const parts = r.int(1, 4);
      for (let i = 0; i < parts; i++) {
        const [c, name, unit] = COST_CODES[r.int(0, COST_CODES.length - 1)]!;
        const each = r2(amount.div(parts));
        ctx.add('prplin', { _idnum: ctx.uuid(), _idref: id, linnum: i + 1, dscrpt: name, cstcde: code(c), csttyp: null, linqty: qty(1), untdsc: unit, linprc: price(each), extttl: money(each), ...ctx.audit(when, 14 * 60, USERS[0]!) });
      }
    }
  }

  /** Subcontracts as they stand at the cutoff (billed to date, retainage held). */
  writeSubcontracts(): void {
    const ctx = this.ctx;
    for (const s of this.subcontracts) {
      const total = s.original.plus(s.changes);
      const id = ctx.uuid();
      const done = s.billed.gte(total);
      ctx.add('subcon', {
        _idnum: id,
        recnum: s.num,
        vndnum: s.vendor.num,
        jobnum: s.job.num,
        ctcnum: s.number,
        ctcdte: s.date,
        dscrpt: `${s.vendor.name} - ${s.job.name}`.slice(0, 50),
        orgamt: money(s.original),
        chgamt: money(s.changes),
        ctcttl: money(total),
        blddte: money(s.billed),
        retpct: pct(s.retainagePct),
        retain: money(s.retainageHeld),
        insexp: s.insuranceExpires,
        status: done ? (s.released ? 4 : 3) : 1,
        ...ctx.audit(s.date < '2025-01-02' ? '2025-01-02' : minDate(s.date, CUTOFF_DATE), 9 * 60, USERS[0]!),
      });
      s.lines.forEach((l, k) => {
        ctx.add('sbcnln', {
          _idnum: ctx.uuid(),
          _idref: id,
          linnum: k + 1,
          dscrpt: l.description,
          phsnum: l.phase,
          cstcde: code(l.code),
          csttyp: 4,
          schval: money(l.value),
          blddte: money(l.billed),
          retain: money(s.released ? ZERO : r2(l.billed.times(s.retainagePct).div(100))),
          ...ctx.audit(s.date < '2025-01-02' ? '2025-01-02' : minDate(s.date, CUTOFF_DATE), 9 * 60, USERS[0]!),
        });
      });
    }
  }

  /** Cost-, hours- and units-to-complete of every running or finished job, as of the cutoff. */
  writeCompletionReports(sim: Sim): void {
    const ctx = this.ctx;
    const byJob = new Map<number, Array<{ phase: number | null; code: string; type: number; amount: Dec; hours: Dec }>>();
    for (const d of sim.costDetail.values()) {
      const list = byJob.get(d.job) ?? [];
      list.push(d);
      byJob.set(d.job, list);
    }
    const date = CUTOFF_DATE;
    for (const job of ctx.jobs) {
      if (job.status !== 4 && job.status !== 5) continue;
      const costs = byJob.get(job.num) ?? [];
      const budget = this.budgets.get(job.num) ?? [];
      const keys = new Map<string, { phase: number | null; code: string; type: number; cost: Dec; hours: Dec; budget: Dec }>();
      for (const b of budget) {
        b.byType.forEach((amount, t) => {
          if (amount.isZero()) return;
          keys.set(`${b.phase}|${b.code}|${t + 1}`, { phase: b.phase, code: b.code, type: t + 1, cost: ZERO, hours: ZERO, budget: amount });
        });
      }
      for (const c of costs) {
        const key = `${c.phase}|${c.code}|${c.type}`;
        const k = keys.get(key) ?? { phase: c.phase, code: c.code, type: c.type, cost: ZERO, hours: ZERO, budget: ZERO };
        k.cost = k.cost.plus(c.amount);
        k.hours = k.hours.plus(c.hours);
        keys.set(key, k);
      }
      const rows = [...keys.values()].sort((a, b) => (a.phase ?? 0) - (b.phase ?? 0) || Number(a.code) - Number(b.code) || a.type - b.type);
      const final = job.status === 5;
      const lines = rows.map((x) => {
        const toComplete = final ? ZERO : Dec.max(ZERO, x.budget.minus(x.cost));
        const projected = x.cost.plus(toComplete);
        return { ...x, toComplete, projected, pctDone: projected.isZero() ? ZERO : r4(x.cost.div(projected).times(100)) };
      });
      const committed = Dec.max(ZERO, sim.committed.get(job.num) ?? ZERO);
      const ctcId = ctx.uuid();
      const preparer = USERS[0]!;
      ctx.add('cstcmp', {
        _idnum: ctcId,
        recnum: ctx.books.recnum('cstcmp'),
        jobnum: job.num,
        estdte: date,
        dscrpt: `Cost to complete ${job.name}`.slice(0, 50),
        prpusr: preparer,
        cstdte: money(sum(lines.map((l) => l.cost))),
        cmtamt: money(committed),
        estcmp: money(sum(lines.map((l) => l.toComplete))),
        prjcst: money(sum(lines.map((l) => l.projected))),
        bdgamt: money(sum(lines.map((l) => l.budget))),
        status: final ? 2 : 1,
        ...ctx.audit('2026-11-02', 9 * 60, preparer),
        upddte: `${date} 17:05:00`,
      });
      lines.forEach((l, k) => {
        ctx.add('cstcln', {
          _idnum: ctx.uuid(),
          _idref: ctcId,
          linnum: k + 1,
          phsnum: l.phase,
          cstcde: code(l.code),
          csttyp: l.type,
          cstdte: money(l.cost),
          cmtamt: money(0),
          estcmp: money(l.toComplete),
          prjcst: money(l.projected),
          bdgamt: money(l.budget),
          pctcmp: price(l.pctDone),
          ...ctx.audit('2026-11-02', 9 * 60, preparer),
        });
      });
      // Hours: labor lines by phase and code.
      const labor = new Map<string, { phase: number | null; code: string; hours: Dec; budget: Dec }>();
      for (const b of budget) labor.set(`${b.phase}|${b.code}`, { phase: b.phase, code: b.code, hours: ZERO, budget: b.hours });
      for (const c of costs) {
        if (c.type !== 2) continue;
        const key = `${c.phase}|${c.code}`;
        const x = labor.get(key) ?? { phase: c.phase, code: c.code, hours: ZERO, budget: ZERO };
        x.hours = x.hours.plus(c.hours);
        labor.set(key, x);
      }
      const hrows = [...labor.values()].map((x) => {
        const left = final ? ZERO : Dec.max(ZERO, x.budget.minus(x.hours));
        return { ...x, left, projected: x.hours.plus(left) };
      });
      const htcId = ctx.uuid();
      ctx.add('hrscmp', {
        _idnum: htcId,
        recnum: ctx.books.recnum('hrscmp'),
        jobnum: job.num,
        estdte: date,
        dscrpt: `Hours to complete ${job.name}`.slice(0, 50),
        prpusr: preparer,
        hrsdte: hours(sum(hrows.map((h) => h.hours))),
        hrsest: hours(sum(hrows.map((h) => h.left))),
        prjhrs: hours(sum(hrows.map((h) => h.projected))),
        bdghrs: hours(sum(hrows.map((h) => h.budget))),
        status: final ? 2 : 1,
        ...ctx.audit('2026-11-02', 9 * 60 + 10, preparer),
        upddte: `${date} 17:10:00`,
      });
      hrows.forEach((h, k) => {
        ctx.add('hrscln', {
          _idnum: ctx.uuid(),
          _idref: htcId,
          linnum: k + 1,
          phsnum: h.phase,
          cstcde: code(h.code),
          hrsdte: hours(h.hours),
          hrsest: hours(h.left),
          prjhrs: hours(h.projected),
          bdghrs: hours(h.budget),
          pctcmp: price(h.projected.isZero() ? ZERO : r4(h.hours.div(h.projected).times(100))),
          ...ctx.audit('2026-11-02', 9 * 60 + 10, preparer),
        });
      });
      // Units complete: installed quantity in proportion to cost against budget.
      const ucId = ctx.uuid();
      ctx.add('untcmp', {
        _idnum: ucId,
        recnum: ctx.books.recnum('untcmp'),
        jobnum: job.num,
        rptdte: date,
        dscrpt: `Units complete ${job.name}`.slice(0, 50),
        prpusr: preparer,
        status: final ? 2 : 1,
        ...ctx.audit('2026-11-02', 9 * 60 + 20, preparer),
        upddte: `${date} 17:15:00`,
      });
      budget.forEach((b, k) => {
        const budgetCost = sum(b.byType);
        const spent = sum(costs.filter((c) => c.code === b.code && c.phase === b.phase).map((c) => c.amount));
        const ratio = final ? new Dec(1) : budgetCost.isZero() ? ZERO : Dec.min(new Dec(1), spent.div(budgetCost));
        const toDate = b.quantity.times(ratio).toDecimalPlaces(4);
        ctx.add('untcln', {
          _idnum: ctx.uuid(),
          _idref: ucId,
          linnum: k + 1,
          phsnum: b.phase,
          cstcde: code(b.code),
          untdsc: b.unit,
          bdgunt: qty(b.quantity),
          untdte: qty(toDate),
          untprd: qty(toDate.times('0.1').toDecimalPlaces(4)),
          pctcmp: price(r4(ratio.times(100))),
          ...ctx.audit('2026-11-02', 9 * 60 + 20, preparer),
        });
      });
    }
    void COST_TYPE_ACCOUNT;
  }
}

function minDate(a: string, b: string): string {
  return a < b ? a : b;
}
