/**
 * Inventory allocations (source 23), equipment revenue (source 33) and depreciation (source
 * 28), job cost entries (source 31), bank fees and interest, and the opening balances of the
 * year (source 101, dated 2025-12-31 in period 12 of 2025) with the opening stock count.
 */
import { Dec } from '../../src/storage/decimal';
import { CUTOFF_DATE, FISCAL_YEAR, USERS } from './books';
import { A, COST_TYPE_ACCOUNT, SRC } from './chart';
import type { Ctx, Job } from './context';
import { MOVE } from './inventory';
import { jobCode, serials } from './ap';
import { BANK, Sim } from './sim';
import { addDays, code, money, price, qty, r2, r4, sum, ZERO } from './util';

interface AllocLine {
  part: number;
  quantity: Dec;
  value: Dec;
  code: string | null;
  phase: number | null;
  costType: number | null;
}

/** The day's inventory allocations: job consumption, truck restocking, losses, revaluations. */
export function allocations(sim: Sim, date: string): void {
  const { ctx } = sim;
  const r = ctx.rnd('allocations');
  const count = ctx.daily(r, 0.33);
  const jobs = ctx.activeJobs(date);
  const trucks = ctx.locations.filter((l) => l.type === 2);
  for (let i = 0; i < count; i++) {
    const purpose = r.weighted([[2, 70], [1, 20], [3, 7], [4, 3]] as const);
    const recent = date > addDays(CUTOFF_DATE, -21);
    const status = purpose === 2 && recent && r.chance(0.35) ? r.pick([3, 3, 1]) : 4;
    if (purpose === 2) {
      if (jobs.length === 0) continue;
      const job = jobs[r.int(0, jobs.length - 1)]!;
      const from = job.siteLocation && sim.inv.partsAt(job.siteLocation).some((p) => sim.inv.available(p, job.siteLocation!).gt(0)) ? job.siteLocation : 1;
      const picked = pick(sim, from, r.int(1, 4), r);
      if (picked.length === 0) continue;
      const lines = picked.map(({ part, quantity }) => {
        const p = ctx.parts[part - 1]!;
        const c = jobCode(r, job, p.costCode);
        return { part, quantity, value: status === 4 ? sim.inv.issueValue(part, quantity) : r2(quantity.times(sim.inv.average(part))), code: c.code, phase: c.phase, costType: 1 };
      });
      allocation(sim, { date, purpose, from, to: null, job, status, lines, description: `Material to ${job.name}`.slice(0, 50) });
    } else if (purpose === 1) {
      if (trucks.length === 0) continue;
      const truck = trucks[r.int(0, trucks.length - 1)]!;
      const back = r.chance(0.15);
      const from = back ? truck.num : 1;
      const to = back ? 1 : truck.num;
      const picked = pick(sim, from, r.int(1, 5), r);
      if (picked.length === 0) continue;
      const lines = picked.map(({ part, quantity }) => ({ part, quantity, value: sim.inv.issueValue(part, quantity), code: null, phase: null, costType: null }));
      allocation(sim, { date, purpose, from, to, job: null, status: 4, lines, description: back ? `Return from ${truck.name}` : `Restock ${truck.name}` });
    } else if (purpose === 3) {
      const from = r.chance(0.6) ? 1 : trucks.length ? trucks[r.int(0, trucks.length - 1)]!.num : 1;
      const picked = pick(sim, from, 1, r).map((x) => ({ ...x, quantity: Dec.min(x.quantity, new Dec(r.int(1, 3))) }));
      if (picked.length === 0) continue;
      const lines = picked.map(({ part, quantity }) => ({ part, quantity, value: sim.inv.issueValue(part, quantity), code: null, phase: null, costType: null }));
      allocation(sim, { date, purpose, from, to: null, job: null, status: 4, lines, description: r.pick(['Damaged in storage', 'Cycle count shortage', 'Theft from yard']) });
    } else {
      const candidates = sim.inv.partsAt(1);
      let part = 0;
      for (let tries = 0; tries < 10 && candidates.length; tries++) {
        const p = candidates[r.int(0, candidates.length - 1)]!;
        if (sim.inv.available(p, 1).gt(0)) {
          part = p;
          break;
        }
      }
      if (!part) continue;
      const totals = sim.inv.partTotals(part);
      const pct = new Dec(r.int(2, 8)).div(100).times(r.chance(0.5) ? 1 : -1);
      const delta = r2(totals.value.times(pct));
      if (delta.isZero()) continue;
      allocation(sim, { date, purpose, from: 1, to: null, job: null, status: 4, lines: [{ part, quantity: ZERO, value: delta, code: null, phase: null, costType: null }], description: 'Revaluation to current replacement cost' });
    }
  }
}

function pick(sim: Sim, location: number, n: number, r: ReturnType<Ctx['rnd']>): Array<{ part: number; quantity: Dec }> {
  const candidates = sim.inv.partsAt(location);
  if (candidates.length === 0) return [];
  const out: Array<{ part: number; quantity: Dec }> = [];
  for (let tries = 0; tries < n * 3 && out.length < n; tries++) {
    const part = candidates[r.int(0, candidates.length - 1)]!;
    if (out.some((x) => x.part === part)) continue;
    const avail = sim.inv.available(part, location).toDecimalPlaces(0, Dec.ROUND_DOWN);
    if (avail.lte(0)) continue;
    const q = Dec.max(new Dec(1), avail.times(r.int(5, 25)).div(100).toDecimalPlaces(0, Dec.ROUND_DOWN));
    out.push({ part, quantity: Dec.min(q, avail) });
  }
  return out;
}

function allocation(
  sim: Sim,
  a: { date: string; purpose: number; from: number; to: number | null; job: Job | null; status: number; lines: AllocLine[]; description: string },
): void {
  const { ctx } = sim;
  const recnum = ctx.books.recnum('invalc');
  const id = ctx.uuid();
  const user = USERS[2]!;
  const total = sum(a.lines.map((l) => l.value));
  const fromAccount = ctx.locations[a.from - 1]!.account;
  let journal: number | null = null;
  if (a.status === 4) {
    const lines =
      a.purpose === 2
        ? [...a.lines.map((l) => ({ account: COST_TYPE_ACCOUNT[1]!, debit: l.value, job: a.job!.num, description: ctx.parts[l.part - 1]!.name })), { account: fromAccount, credit: total, description: 'Stock issued to job' }]
        : a.purpose === 1
          ? [
              { account: ctx.locations[a.to! - 1]!.account, debit: total, description: `Into ${ctx.locations[a.to! - 1]!.name}` },
              { account: fromAccount, credit: total, description: `Out of ${ctx.locations[a.from - 1]!.name}` },
            ]
          : a.purpose === 3
            ? [
                { account: A.inventoryShrinkage, debit: total, description: a.description },
                { account: fromAccount, credit: total, description: 'Stock written off' },
              ]
            : total.isNegative()
              ? [
                  { account: A.inventoryShrinkage, debit: total.negated(), description: a.description },
                  { account: fromAccount, credit: total.negated(), description: 'Revaluation down' },
                ]
              : [
                  { account: fromAccount, debit: total, description: 'Revaluation up' },
                  { account: A.inventoryShrinkage, credit: total, description: a.description },
                ];
    if (a.purpose !== 1 || !total.isZero()) {
      const sameAccount = a.purpose === 1 && ctx.locations[a.to! - 1]!.account === fromAccount;
      if (!sameAccount && !total.isZero()) journal = ctx.books.journal({ source: SRC.inventoryAllocation, date: a.date, number: `IA${recnum}`, description: a.description, user, lines });
    }
  }
  ctx.add('invalc', {
    _idnum: id,
    recnum,
    trndte: a.date,
    dscrpt: a.description,
    prpose: a.purpose,
    frmloc: a.from,
    tolocn: a.to,
    jobnum: a.job?.num ?? null,
    phsnum: null,
    ttlcst: money(total),
    status: a.status,
    lgrrec: journal,
    ...ctx.txn(a.date, a.date, user, 13 * 60 + (recnum % 200)),
  });
  a.lines.forEach((l, k) => {
    const unit = l.quantity.isZero() ? ZERO : r4(l.value.div(l.quantity));
    ctx.add('invaln', {
      _idnum: ctx.uuid(),
      _idref: id,
      linnum: k + 1,
      prtnum: l.part,
      dscrpt: ctx.parts[l.part - 1]!.name,
      alcqty: qty(l.quantity),
      untcst: price(unit),
      extcst: money(l.value),
      cstcde: l.code ? code(l.code) : null,
      csttyp: l.costType,
      ...ctx.audit(a.date, 13 * 60, user),
    });
    if (a.status === 3) sim.inv.cell(l.part, a.from).held = sim.inv.cell(l.part, a.from).held.plus(l.quantity);
    if (a.status !== 4) return;
    if (a.purpose === 2) {
      sim.inv.move({ part: l.part, location: a.from, quantity: l.quantity.negated(), value: l.value.negated(), type: MOVE.consumed, date: a.date, source: SRC.inventoryAllocation, sourceRecord: recnum, user });
      const jc = sim.jobCost({
        job: a.job!.num,
        phase: l.phase,
        costCode: l.code!,
        costType: 1,
        date: a.date,
        description: `Stock: ${ctx.parts[l.part - 1]!.name}`,
        source: SRC.inventoryAllocation,
        documentNumber: `IA${recnum}`,
        sourceRecord: recnum,
        sourceLine: k + 1,
        amount: l.value,
        hours: ZERO,
        user,
      });
      ctx.add('invcsm', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('invcsm'),
        prtnum: l.part,
        locnum: a.from,
        jobnum: a.job!.num,
        phsnum: l.phase,
        cstcde: l.code ? code(l.code) : null,
        csttyp: 1,
        trndte: a.date,
        csmqty: qty(l.quantity),
        untcst: price(unit),
        extcst: money(l.value),
        alcrec: recnum,
        jcsrec: jc,
        ...ctx.txn(a.date, a.date, user, 13 * 60 + (recnum % 200)),
      });
    } else if (a.purpose === 1) {
      sim.inv.move({ part: l.part, location: a.from, quantity: l.quantity.negated(), value: l.value.negated(), type: MOVE.transferOut, date: a.date, source: SRC.inventoryAllocation, sourceRecord: recnum, user });
      sim.inv.move({ part: l.part, location: a.to!, quantity: l.quantity, value: l.value, type: MOVE.transferIn, date: a.date, source: SRC.inventoryAllocation, sourceRecord: recnum, user });
    } else if (a.purpose === 3) {
      sim.inv.move({ part: l.part, location: a.from, quantity: l.quantity.negated(), value: l.value.negated(), type: MOVE.loss, date: a.date, source: SRC.inventoryAllocation, sourceRecord: recnum, user });
    } else {
      sim.inv.move({ part: l.part, location: a.from, quantity: ZERO, value: l.value, type: MOVE.revaluation, date: a.date, source: SRC.inventoryAllocation, sourceRecord: recnum, user });
    }
  });
}

/** Friday: equipment on jobs charged at its hourly rate, one journal for the week. */
export function equipmentRevenue(sim: Sim, weekStart: string): void {
  const { ctx } = sim;
  const r = ctx.rnd('equipment-revenue');
  const date = addDays(weekStart, 4);
  if (date > CUTOFF_DATE) return;
  const journalRecnum = ctx.books.recnum('lgrtrn');
  const byJob = new Map<number, Dec>();
  const byEquipment = new Map<number, Dec>();
  for (const q of ctx.equipment) {
    if (!q.job) continue;
    const job = ctx.job(q.job);
    const hrs = new Dec(r.int(6, 40));
    const amount = r2(hrs.times(q.rate));
    const recnum = ctx.books.recnum('eqprev');
    const c = jobCode(r, job, q.costCode);
    ctx.add('eqprev', {
      _idnum: ctx.uuid(),
      recnum,
      eqpnum: q.num,
      jobnum: job.num,
      phsnum: c.phase,
      cstcde: code(c.code),
      trndte: date,
      dscrpt: `${q.name} on ${job.name}`.slice(0, 50),
      rtetyp: 1,
      revunt: money(hrs),
      revrte: price(q.rate),
      revamt: money(amount),
      srcnum: SRC.equipmentRevenue,
      lgrrec: journalRecnum,
      ...ctx.txn(date, date, USERS[3]!, 14 * 60 + (recnum % 120)),
    });
    sim.jobCost({ job: job.num, phase: c.phase, costCode: c.code, costType: 3, date, description: `Equipment ${q.name}`.slice(0, 50), source: SRC.equipmentRevenue, documentNumber: `ER${recnum}`, sourceRecord: recnum, sourceLine: 1, equipment: q.num, amount, hours: hrs, user: USERS[3]! });
    byJob.set(job.num, (byJob.get(job.num) ?? ZERO).plus(amount));
    byEquipment.set(q.num, (byEquipment.get(q.num) ?? ZERO).plus(amount));
  }
  if (byJob.size === 0) return;
  ctx.books.journalWithNumber(journalRecnum, {
    source: SRC.equipmentRevenue,
    date,
    number: `ER${date.replace(/-/g, '')}`,
    description: `Equipment revenue week of ${weekStart}`,
    user: USERS[3]!,
    lines: [
      ...[...byJob.entries()].sort((a, b) => a[0] - b[0]).map(([job, amount]) => ({ account: A.equipmentJobExpense, debit: amount, job, description: 'Equipment charged to job' })),
      ...[...byEquipment.entries()].sort((a, b) => a[0] - b[0]).map(([equipment, amount]) => ({ account: A.equipmentRevenue, credit: amount, equipment, description: 'Equipment revenue' })),
    ],
  });
}

/** Month end: depreciation per unit (source 28), small-tools charge to jobs (source 31), bank fee and interest. */
export function monthEndOps(sim: Sim, date: string): void {
  const { ctx } = sim;
  const r = ctx.rnd('month-end');
  const journalRecnum = ctx.books.recnum('lgrtrn');
  const lines = ctx.equipment.map((q) => ({ q, amount: r2(q.cost.div(84)) }));
  for (const { q, amount } of lines) {
    sim.equipmentCost({ equipment: q.num, date, category: 3, description: 'Monthly depreciation', source: SRC.equipmentDepreciation, documentNumber: `DEPR${date.slice(0, 7)}`, sourceRecord: journalRecnum, account: A.depreciation, amount, user: USERS[0]! });
  }
  ctx.books.journalWithNumber(journalRecnum, {
    source: SRC.equipmentDepreciation,
    date,
    number: `DEPR${date.slice(0, 7).replace('-', '')}`,
    description: `Depreciation ${date.slice(0, 7)}`,
    user: USERS[0]!,
    lines: [...lines.map(({ q, amount }) => ({ account: A.depreciation, debit: amount, equipment: q.num, description: q.name })), { account: A.accumDepreciation, credit: sum(lines.map((l) => l.amount)), description: 'Accumulated depreciation' }],
  });

  // Small tools and consumables charged to running jobs (direct job cost entry).
  const jobs = ctx.activeJobs(date);
  if (jobs.length) {
    const jcRecnum = ctx.books.recnum('lgrtrn');
    const charges = jobs.map((job) => ({ job, amount: r.money(40, 260), c: jobCode(r, job, '1.000') }));
    charges.forEach(({ job, amount, c }, k) => {
      sim.jobCost({ job: job.num, phase: c.phase, costCode: c.code, costType: 5, date, description: 'Small tools and consumables', source: SRC.jobCosts, documentNumber: `JC${date.slice(0, 7)}`, sourceRecord: jcRecnum, sourceLine: k + 1, amount, hours: ZERO, user: USERS[0]! });
    });
    ctx.books.journalWithNumber(jcRecnum, {
      source: SRC.jobCosts,
      date,
      number: `JC${date.slice(0, 7).replace('-', '')}`,
      description: `Small tools charged to jobs ${date.slice(0, 7)}`,
      user: USERS[0]!,
      lines: [...charges.map(({ job, amount }) => ({ account: A.otherJobExpense, debit: amount, job: job.num, description: 'Small tools and consumables' })), { account: A.shopSupplies, credit: sum(charges.map((c) => c.amount)), description: 'Charged out to jobs' }],
    });
  }

  // Interest on the line of credit drawn in March.
  if (date >= LINE_OF_CREDIT_DATE) {
    const loc = new Dec(LINE_OF_CREDIT).times(Math.max(1, ctx.scale)).times('0.075').div(12).toDecimalPlaces(2);
    const j = ctx.books.journal({ source: SRC.cashDisbursements, date, number: `LOCINT${date.slice(0, 7).replace('-', '')}`, description: 'Line of credit interest', user: USERS[3]!, lines: [{ account: A.interestExpense, debit: loc }, { account: A.cashOperating, credit: loc }] });
    sim.bankTxn({ bank: BANK.operating, date, number: `LOC${date.slice(2, 7).replace('-', '')}`, type: 4, payee: 'First Cascade Bank', description: 'Line of credit interest', deposit: ZERO, withdrawal: loc, journal: j });
  }

  // Bank service charge and interest on the operating account.
  const fee = r.money(25, 60).times(Math.max(1, Math.round(Math.sqrt(ctx.scale)))).toDecimalPlaces(2);
  const feeJournal = ctx.books.journal({ source: SRC.cashDisbursements, date, number: `FEE${date.slice(0, 7).replace('-', '')}`, description: 'Bank service charge', user: USERS[3]!, lines: [{ account: A.officeSupplies, debit: fee }, { account: A.cashOperating, credit: fee }] });
  sim.bankTxn({ bank: BANK.operating, date, number: `FEE${date.slice(2, 7).replace('-', '')}`, type: 4, payee: 'First Cascade Bank', description: 'Service charge', deposit: ZERO, withdrawal: fee, journal: feeJournal });
  const interest = r.money(40, 180).times(Math.max(1, Math.round(ctx.scale))).toDecimalPlaces(2);
  const intJournal = ctx.books.journal({ source: SRC.cashReceipts, date, number: `INT${date.slice(0, 7).replace('-', '')}`, description: 'Interest earned', user: USERS[3]!, lines: [{ account: A.cashOperating, debit: interest }, { account: A.interestIncome, credit: interest }] });
  sim.bankTxn({ bank: BANK.operating, date, number: `INT${date.slice(2, 7).replace('-', '')}`, type: 5, payee: 'First Cascade Bank', description: 'Interest', deposit: interest, withdrawal: ZERO, journal: intJournal });
}

export const LINE_OF_CREDIT_DATE = '2026-03-16';
const LINE_OF_CREDIT = 150_000;

/** A draw on the line of credit in March (general journal), deposited in the operating account. */
export function lineOfCreditDraw(sim: Sim, date: string): void {
  const { ctx } = sim;
  const amount = new Dec(LINE_OF_CREDIT).times(Math.max(1, ctx.scale)).toDecimalPlaces(2);
  const journal = ctx.books.journal({
    source: SRC.generalJournal,
    date,
    number: 'LOC-DRAW-2026-1',
    description: 'Draw on the line of credit',
    user: USERS[0]!,
    lines: [
      { account: A.cashOperating, debit: amount, description: 'Line of credit draw' },
      { account: A.lineOfCredit, credit: amount, description: 'First Cascade Bank line of credit' },
    ],
  });
  sim.bankTxn({ bank: BANK.operating, date, number: 'LOCDRAW1', type: 3, payee: 'First Cascade Bank', description: 'Line of credit advance', deposit: amount, withdrawal: ZERO, journal });
}

/**
 * Opening stock (counted on 2025-12-31) and the opening balance entry of the year (source
 * 101, period 12 of 2025): cash, inventory, equipment, depreciation, notes, stock, retained
 * earnings as the balancing figure.
 */
export function openingBalances(sim: Sim): void {
  const { ctx } = sim;
  const r = ctx.rnd('opening');
  const date = '2025-12-31';
  const byAccount = new Map<number, Dec>();
  for (const p of ctx.parts) {
    const homes: number[] = [];
    if (r.chance(0.8)) homes.push(1);
    if (r.chance(0.5) && ctx.locations.length > 1) homes.push(ctx.locations[r.int(1, ctx.locations.length - 1)]!.num);
    for (const loc of homes) {
      const quantity = new Dec(p.cost.gt(200) ? r.int(1, 4) : r.int(3, 36));
      const value = r2(quantity.times(p.cost));
      const cell = sim.inv.cell(p.num, loc);
      cell.min = new Dec(Math.max(1, Math.round(quantity.toNumber() / 5)));
      cell.max = quantity.times(2);
      cell.bin = loc === 1 ? `${String.fromCharCode(65 + (p.num % 12))}-${String((p.num % 40) + 1).padStart(2, '0')}-${(p.num % 5) + 1}` : null;
      sim.inv.move({ part: p.num, location: loc, quantity, value, type: MOVE.count, date, source: SRC.openingBalances, sourceRecord: null, entered: date, user: USERS[2], year: FISCAL_YEAR - 1, period: 12 });
      const account = ctx.locations[loc - 1]!.account;
      byAccount.set(account, (byAccount.get(account) ?? ZERO).plus(value));
      if (p.serialized) serials(sim, p.num, loc, quantity, date, null, p.cost);
    }
  }
  const s = Math.max(1, ctx.scale);
  const cashOperating = new Dec(850_000).times(s).toDecimalPlaces(2);
  const cashPayroll = new Dec(35_000).times(s).toDecimalPlaces(2);
  const petty = new Dec(500);
  sim.openingCash.set(BANK.operating, cashOperating);
  sim.openingCash.set(BANK.payroll, cashPayroll);
  const equipment = sum(ctx.equipment.filter((q) => !q.vehicle).map((q) => q.cost));
  const vehicles = sum(ctx.equipment.filter((q) => q.vehicle).map((q) => q.cost));
  const accumulated = r2(equipment.plus(vehicles).times('0.38'));
  const notes = r2(equipment.plus(vehicles).times('0.22'));
  const stock = new Dec(150_000).times(s).toDecimalPlaces(2);
  const debits: Array<[number, Dec]> = [
    [A.cashOperating, cashOperating],
    [A.cashPayroll, cashPayroll],
    [A.pettyCash, petty],
    ...[...byAccount.entries()].sort((a, b) => a[0] - b[0]),
    [A.prepaid, new Dec(10_400).times(s).toDecimalPlaces(2)],
    [A.equipment, equipment],
    [A.vehicles, vehicles],
  ];
  const totalDebit = sum(debits.map(([, v]) => v));
  const retained = totalDebit.minus(accumulated).minus(notes).minus(stock);
  if (retained.lte(0)) throw new Error('opening balances: retained earnings would be negative');
  ctx.books.journal({
    source: SRC.openingBalances,
    date,
    number: 'OPEN-2026',
    description: 'Opening balances carried from the 2025 books',
    enteredDate: '2025-12-31',
    user: USERS[0]!,
    period: 12,
    year: FISCAL_YEAR - 1,
    lines: [
      ...debits.map(([account, amount]) => ({ account, debit: amount, description: 'Opening balance' })),
      { account: A.accumDepreciation, credit: accumulated, description: 'Opening balance' },
      { account: A.equipmentNotes, credit: notes, description: 'Opening balance' },
      { account: A.commonStock, credit: stock, description: 'Opening balance' },
      { account: A.retainedEarnings, credit: retained, description: 'Opening balance' },
    ],
  });
  // A prior-year adjustment booked in period 0 of 2026: the auditors' accrual of December rent.
  const rent = new Dec(4800).times(s).toDecimalPlaces(2);
  ctx.books.journal({
    source: SRC.generalJournal,
    date: '2025-12-31',
    number: 'ADJ-2025-01',
    description: 'Audit adjustment: December rent accrual',
    enteredDate: '2026-02-12',
    user: USERS[0]!,
    period: 0,
    year: FISCAL_YEAR,
    lines: [
      { account: A.retainedEarnings, debit: rent, description: 'Prior-year rent expense' },
      { account: A.prepaid, credit: rent, description: 'Prepaid rent applied' },
    ],
  });
  void money;
}
