/**
 * Receivables: monthly progress billings (source 20) and time-and-material invoices (source
 * 14) with their client payments (source 15); service work orders and invoices (source 22,
 * parts out of the technicians' trucks) with service payments; maintenance-contract billings.
 */
import { Dec } from '../../src/storage/decimal';
import { CUTOFF_DATE, USERS } from './books';
import { A, SRC } from './chart';
import type { Ctx, Job } from './context';
import { MOVE } from './inventory';
import type { Prng } from './prng';
import { progress } from './ap';
import { BANK, Sim } from './sim';
import { addDays, code, hours, money, price, qty, r2, r4, stamp, sum, ZERO } from './util';

export interface ChangeOrderEffect {
  job: number;
  date: string;
  amount: Dec;
}

interface BillingState {
  application: number;
  completed: Dec;
  retainage: Dec;
  phaseCompleted: Dec[];
  lastCost: Dec;
}

export class Receivables {
  private readonly billing = new Map<number, BillingState>();
  /** Progress billing totals per job (for the reports at the end). */
  readonly billedByJob = new Map<number, Dec>();

  constructor(
    private readonly sim: Sim,
    private readonly approvedChanges: readonly ChangeOrderEffect[],
  ) {}

  private get ctx(): Ctx {
    return this.sim.ctx;
  }

  private changesByJob: Map<number, ChangeOrderEffect[]> | null = null;

  private contractOn(job: Job, date: string): Dec {
    if (!this.changesByJob) {
      this.changesByJob = new Map();
      for (const ch of this.approvedChanges) {
        const list = this.changesByJob.get(ch.job) ?? [];
        list.push(ch);
        this.changesByJob.set(ch.job, list);
      }
    }
    let c = job.contract;
    for (const ch of this.changesByJob.get(job.num) ?? []) if (ch.date <= date) c = c.plus(ch.amount);
    return c;
  }

  private state(job: Job): BillingState {
    let s = this.billing.get(job.num);
    if (!s) {
      // Work billed before 2026 (in last year's books): the starting point of this year's applications.
      const prior = r2(job.contract.times(Math.round(progress(job, '2025-12-31') * 10000)).div(10000));
      const months = Math.max(0, (2025 - Number(job.start.slice(0, 4))) * 12 + 12 - Number(job.start.slice(5, 7)) + (job.start < '2026-01-01' ? 1 : 0));
      const phases = job.phases.length;
      const perPhase = prior.div(phases).toDecimalPlaces(2);
      s = {
        application: job.start < '2026-01-01' ? months : 0,
        completed: prior,
        retainage: r2(prior.times(job.retainagePct).div(100)),
        phaseCompleted: job.phases.map((_, k) => (k === phases - 1 ? prior.minus(perPhase.times(phases - 1)) : perPhase)),
        lastCost: ZERO,
      };
      this.billing.set(job.num, s);
    }
    return s;
  }

  /** Month end: progress billings and T&M invoices of the month. */
  monthEnd(date: string): void {
    const ctx = this.ctx;
    const first = `${date.slice(0, 8)}01`;
    for (const job of ctx.jobs) {
      if (job.status !== 4 && job.status !== 5) continue;
      if (job.start > date || addDays(job.end, 31) < first) continue;
      if (job.billing === 'tm') this.timeAndMaterial(job, date);
      else this.progressBilling(job, date);
    }
  }

  private progressBilling(job: Job, date: string): void {
    const ctx = this.ctx;
    const r = ctx.rnd('progress-billing');
    const s = this.state(job);
    const contract = this.contractOn(job, date);
    const finished = job.status === 5 && job.end <= date;
    const completed = finished ? contract : r2(contract.times(Math.round(progress(job, date) * 10000)).div(10000));
    const thisPeriod = completed.minus(s.completed);
    if (thisPeriod.lte(0)) return;
    const phases = job.phases.length;
    const schedule = job.phases.map((_, k) => (k === phases - 1 ? contract.minus(contract.div(phases).toDecimalPlaces(2).times(phases - 1)) : contract.div(phases).toDecimalPlaces(2)));
    const periodByPhase = splitBy(thisPeriod, schedule);
    const targetByPhase = periodByPhase.map((p, k) => s.phaseCompleted[k]!.plus(p));
    const retainageRate = job.retainagePct;
    const retThis = r2(thisPeriod.times(retainageRate).div(100));
    const retByPhase = splitBy(retThis, periodByPhase);
    s.application++;
    const previousNet = s.completed.minus(s.retainage);
    const invoice = this.arInvoice(r, {
      job,
      number: `${job.num}-${String(s.application).padStart(2, '0')}`,
      date,
      type: 1,
      description: `Application ${s.application} ${job.name}`.slice(0, 50),
      lines: periodByPhase.map((amount, k) => ({ description: `Phase ${job.phases[k]} work completed`, account: A.contractIncome, phase: job.phases[k]!, code: null, quantity: new Dec(1), unitPrice: amount, retainage: retByPhase[k]! })),
      retainage: retThis,
      source: SRC.progressBilling,
      finished,
    });
    const billId = ctx.uuid();
    ctx.add('prgbll', {
      _idnum: billId,
      recnum: ctx.books.recnum('prgbll'),
      jobnum: job.num,
      clnnum: job.client,
      aplnum: String(s.application),
      blgdte: date,
      prdend: date,
      dscrpt: `Application for payment ${s.application}`,
      cntrct: money(contract),
      ttlcmp: money(completed),
      retain: money(s.retainage.plus(retThis)),
      prvbll: money(previousNet),
      amtdue: money(thisPeriod.minus(retThis)),
      status: 3,
      invrec: invoice,
      ...ctx.audit(date, 16 * 60, USERS[2]!),
    });
    job.phases.forEach((phase, k) => {
      const done = targetByPhase[k]!;
      ctx.add('prgbln', {
        _idnum: ctx.uuid(),
        _idref: billId,
        linnum: k + 1,
        itmnum: String(k + 1).padStart(3, '0'),
        dscrpt: `Phase ${phase}`,
        phsnum: phase,
        cstcde: null,
        schval: money(schedule[k]!),
        prvcmp: money(s.phaseCompleted[k]!),
        cmpprd: money(periodByPhase[k]!),
        strmat: money(0),
        pctcmp: price(schedule[k]!.isZero() ? ZERO : r4(done.div(schedule[k]!).times(100))),
        retain: money(r2(done.times(retainageRate).div(100))),
        ...ctx.audit(date, 16 * 60, USERS[2]!),
      });
    });
    s.completed = completed;
    s.retainage = s.retainage.plus(retThis);
    s.phaseCompleted = targetByPhase;
    this.billedByJob.set(job.num, (this.billedByJob.get(job.num) ?? ZERO).plus(thisPeriod));
  }

  private timeAndMaterial(job: Job, date: string): void {
    const ctx = this.ctx;
    const r = ctx.rnd('tm-billing');
    const s = this.state(job);
    const byType = this.sim.costByType.get(job.num);
    if (!byType) return;
    const names: Record<number, string> = { 1: 'Materials', 2: 'Labor', 3: 'Equipment', 4: 'Subcontracts', 5: 'Other costs', 6: 'Permits and fees' };
    const lines: InvoiceLine[] = [];
    const billedTypes = this.tmBilled.get(job.num) ?? new Map<number, Dec>();
    for (const [type, total] of [...byType.entries()].sort((a, b) => a[0] - b[0])) {
      const unbilled = total.minus(billedTypes.get(type) ?? ZERO);
      if (unbilled.lte(0)) continue;
      billedTypes.set(type, total);
      lines.push({ description: `${names[type] ?? 'Costs'} at cost plus 15%`, account: A.contractIncome, phase: null, code: null, quantity: new Dec(1), unitPrice: r2(unbilled.times('1.15')), retainage: ZERO });
    }
    this.tmBilled.set(job.num, billedTypes);
    if (lines.length === 0) return;
    s.application++;
    const total = sum(lines.map((l) => l.unitPrice));
    this.arInvoice(r, { job, number: `TM${job.num}-${String(s.application).padStart(2, '0')}`, date, type: 2, description: `T&M billing ${date.slice(0, 7)} ${job.name}`.slice(0, 50), lines, retainage: ZERO, source: SRC.receivableInvoices, finished: false });
    this.billedByJob.set(job.num, (this.billedByJob.get(job.num) ?? ZERO).plus(total));
  }

  private readonly tmBilled = new Map<number, Map<number, Dec>>();

  /** Writes a receivable invoice with its journal and planned payments; returns its record number. */
  private arInvoice(
    r: Prng,
    a: { job: Job; number: string; date: string; type: number; description: string; lines: InvoiceLine[]; retainage: Dec; source: number; finished: boolean },
  ): number {
    const ctx = this.ctx;
    const sim = this.sim;
    const recnum = ctx.books.recnum('acrinv');
    const id = ctx.uuid();
    const client = ctx.clients[a.job.client - 1]!;
    const entered = addDays(a.date, r.int(0, 2)) > CUTOFF_DATE ? a.date : addDays(a.date, r.int(0, 2));
    const user = USERS[2]!;
    const lines = a.lines.filter((l) => !l.unitPrice.isZero());
    const total = sum(lines.map((l) => r2(l.quantity.times(l.unitPrice))));
    const journal = ctx.books.journal({
      source: a.source,
      date: a.date,
      number: `AR${a.number}`,
      description: a.description,
      enteredDate: entered,
      user,
      lines: [{ account: A.accountsReceivable, debit: total, job: a.job.num, description: client.name }, ...lines.map((l) => ({ account: l.account, credit: r2(l.quantity.times(l.unitPrice)), job: a.job.num, description: l.description }))],
    });
    // Payments: the net amount 30 to 55 days later, retainage when the job is finished.
    const disputed = r.chance(0.04);
    let paid = ZERO;
    let lastPaid: string | undefined;
    if (!disputed) {
      const payDate = addDays(a.date, r.int(28, 55));
      if (payDate <= CUTOFF_DATE) {
        const amount = total.minus(a.retainage);
        if (amount.gt(0)) {
          sim.schedule(payDate, () => this.clientPayment(a.job, recnum, a.number, payDate, amount, ZERO));
          paid = paid.plus(amount);
          lastPaid = payDate;
        }
        if (a.retainage.gt(0) && a.job.status === 5) {
          const release = addDays(a.job.end > a.date ? a.job.end : a.date, 45);
          if (release <= CUTOFF_DATE && release >= payDate) {
            sim.schedule(release, () => this.clientPayment(a.job, recnum, a.number, release, a.retainage, a.retainage));
            paid = paid.plus(a.retainage);
            lastPaid = release;
          }
        }
      }
    }
    const balance = total.minus(paid);
    ctx.add('acrinv', {
      _idnum: id,
      recnum,
      clnnum: a.job.client,
      jobnum: a.job.num,
      invnum: a.number,
      invdte: a.date,
      duedte: addDays(a.date, client.terms),
      dscrpt: a.description,
      invtyp: a.type,
      invttl: money(total),
      amtpad: money(paid),
      invbal: money(balance),
      retain: money(a.retainage),
      taxamt: money(0),
      status: balance.isZero() ? 4 : disputed ? 3 : 1,
      lgrrec: journal,
      ...ctx.txn(a.date, entered, user, 16 * 60 + (recnum % 60), lastPaid),
    });
    lines.forEach((l, k) => {
      ctx.add('arivln', {
        _idnum: ctx.uuid(),
        _idref: id,
        linnum: k + 1,
        dscrpt: l.description,
        lgract: l.account,
        phsnum: l.phase,
        cstcde: l.code ? code(l.code) : null,
        linqty: qty(l.quantity),
        linprc: price(l.unitPrice),
        extttl: money(r2(l.quantity.times(l.unitPrice))),
        retain: money(l.retainage),
        taxabl: false,
        ...ctx.audit(entered, 16 * 60, user),
      });
    });
    return recnum;
  }

  private clientPayment(job: Job, invoice: number, invoiceNumber: string, date: string, amount: Dec, retainage: Dec): void {
    const ctx = this.ctx;
    const sim = this.sim;
    const r = ctx.rnd('ar-payments');
    const recnum = ctx.books.recnum('acrpmt');
    const check = String(r.int(1000, 99999));
    const client = ctx.clients[job.client - 1]!;
    const journal = ctx.books.journal({
      source: SRC.receivablePayments,
      date,
      number: `CR${recnum}`,
      description: `Payment ${client.name}`.slice(0, 50),
      user: USERS[2]!,
      lines: [
        { account: A.cashOperating, debit: amount, description: `Check ${check}` },
        { account: A.accountsReceivable, credit: amount, job: job.num, description: `Invoice ${invoiceNumber}` },
      ],
    });
    sim.bankTxn({ bank: BANK.operating, date, number: `DEP${recnum}`, type: 2, payee: client.name, description: `Deposit invoice ${invoiceNumber}`, deposit: amount, withdrawal: ZERO, journal });
    ctx.add('acrpmt', {
      _idnum: ctx.uuid(),
      recnum,
      clnnum: job.client,
      invrec: invoice,
      invnum: invoiceNumber,
      jobnum: job.num,
      chknum: check,
      pmtdte: date,
      dscrpt: retainage.gt(0) ? 'Retainage release' : 'Progress payment',
      amount: money(amount),
      dsctkn: money(0),
      retrcv: money(retainage),
      lgract: A.cashOperating,
      status: 1,
      lgrrec: journal,
      ...ctx.txn(date, date, USERS[2]!, 11 * 60 + (recnum % 300)),
    });
  }

  // ---------------------------------------------------------------- service

  /** The day's service work orders: invoiced and posted when complete, open otherwise. */
  serviceCalls(date: string): void {
    const ctx = this.ctx;
    const r = ctx.rnd('service');
    if (ctx.serviceLocations.length === 0) return;
    const techs = ctx.employeesByRole('service').filter((e) => e.hire <= date && (!e.termination || e.termination >= date));
    if (techs.length === 0) return;
    const count = ctx.daily(r, 1.3);
    for (let i = 0; i < count; i++) {
      const site = ctx.serviceLocations[r.int(0, ctx.serviceLocations.length - 1)]!;
      const type = r.weighted([[1, 3], [2, 4], [3, 1], [4, 1], [5, 1]] as const);
      const tech = techs[r.int(0, techs.length - 1)]!;
      const taxRate = ctx.taxRates.get(site.taxDistrict) ?? ZERO;
      const lines: ServiceLine[] = [];
      const laborHours = new Dec(type === 3 ? r.int(4, 10) : r.int(1, 4));
      lines.push({ type: 1, part: null, description: type === 5 ? 'Emergency labor' : 'Technician labor', quantity: laborHours, unitPrice: new Dec(type === 5 ? 165 : 115), unitCost: ZERO, taxable: false });
      if (tech.truck && (type === 2 || type === 3 || type === 5 || r.chance(0.3))) {
        const onTruck = this.sim.inv.partsAt(tech.truck);
        const stocked: number[] = [];
        const wanted = r.int(1, 3);
        for (let tries = 0; tries < 12 && stocked.length < wanted && onTruck.length; tries++) {
          const p = onTruck[r.int(0, onTruck.length - 1)]!;
          if (!stocked.includes(p) && this.sim.inv.available(p, tech.truck).gte(1)) stocked.push(p);
        }
        for (const p of stocked) {
          const part = ctx.parts[p - 1]!;
          const q = Dec.min(this.sim.inv.available(p, tech.truck).toDecimalPlaces(0, Dec.ROUND_DOWN), new Dec(r.int(1, 3)));
          if (q.lte(0)) continue;
          lines.push({ type: 2, part: p, description: part.name, quantity: q, unitPrice: part.price, unitCost: this.sim.inv.average(p), taxable: !taxRate.isZero() });
        }
      }
      lines.push({ type: 4, part: null, description: 'Trip charge', quantity: new Dec(1), unitPrice: new Dec(85), unitCost: ZERO, taxable: false });
      const complete = addDays(date, 3) <= CUTOFF_DATE;
      const units = ctx.serviceInventory.get(site.num) ?? [];
      this.serviceInvoice(r, { date, client: site.client, location: site.num, type, contract: null, tech: tech.num, truck: tech.truck, lines, taxRate, complete, description: `${['', 'Maintenance', 'Repair', 'Installation', 'Inspection', 'Emergency'][type]} call${units.length ? ` unit ${units[0]}` : ''}` });
    }
  }

  /** Maintenance agreements billed on the first of their billing months. */
  contractBillings(date: string): void {
    const ctx = this.ctx;
    const r = ctx.rnd('contract-billing');
    for (const c of ctx.serviceContracts) {
      if (date < c.start || date > c.end) continue;
      const months = (Number(date.slice(0, 4)) - Number(c.start.slice(0, 4))) * 12 + Number(date.slice(5, 7)) - Number(c.start.slice(5, 7));
      const step = c.frequency === 1 ? 1 : c.frequency === 2 ? 3 : 12;
      if (months % step !== 0) continue;
      const site = ctx.serviceLocationsByNum.get(c.location)!;
      this.serviceInvoice(r, {
        date,
        client: c.client,
        location: c.location,
        type: 1,
        contract: c.num,
        tech: null,
        truck: null,
        lines: [{ type: 4, part: null, description: 'Maintenance agreement billing', quantity: new Dec(1), unitPrice: c.amount, unitCost: ZERO, taxable: false }],
        taxRate: ctx.taxRates.get(site.taxDistrict) ?? ZERO,
        complete: true,
        description: `Agreement ${c.num} ${date.slice(0, 7)}`,
      });
    }
  }

  private serviceInvoice(
    r: Prng,
    a: { date: string; client: number; location: number; type: number; contract: number | null; tech: number | null; truck: number | null; lines: ServiceLine[]; taxRate: Dec; complete: boolean; description: string },
  ): void {
    const ctx = this.ctx;
    const sim = this.sim;
    const recnum = ctx.books.recnum('srvinv');
    const id = ctx.uuid();
    const number = `S26-${String(recnum).padStart(6, '0')}`;
    const client = ctx.clients[a.client - 1]!;
    const user = USERS[4 - (recnum % 2)]!;
    const ext = a.lines.map((l) => r2(l.quantity.times(l.unitPrice)));
    const taxable = sum(a.lines.map((l, k) => (l.taxable ? ext[k]! : ZERO)));
    const nontaxable = sum(a.lines.map((l, k) => (l.taxable ? ZERO : ext[k]!)));
    const tax = r2(taxable.times(a.taxRate).div(100));
    const total = taxable.plus(nontaxable).plus(tax);
    let journal: number | null = null;
    let paid = ZERO;
    let lastPaid: string | undefined;
    const costs: Dec[] = a.lines.map(() => ZERO);
    // A work order not complete yet: technicians on site (work status 4) leave it Open, ready to
    // be invoiced by POST /service-invoices/post, its parts still on the truck (no hold); the
    // others wait in Review with their parts held.
    const workStatus = a.complete ? 5 : r.pick([2, 3, 4]);
    const openWorkOrder = !a.complete && workStatus === 4;
    if (a.complete) {
      // Parts leave the truck at average cost.
      a.lines.forEach((l, k) => {
        if (l.part && a.truck) costs[k] = sim.inv.issueValue(l.part, l.quantity);
      });
      const cogs = sum(costs);
      const truckAccount = a.truck ? ctx.locations[a.truck - 1]!.account : A.inventoryTrucks;
      journal = ctx.books.journal({
        source: SRC.serviceInvoices,
        date: a.date,
        number: number,
        description: `${client.name}`.slice(0, 35) + ` ${number}`,
        user,
        lines: [
          { account: A.serviceReceivable, debit: total, description: number },
          { account: A.serviceIncomeTaxable, credit: taxable, description: 'Taxable service income' },
          { account: A.serviceIncomeNonTaxable, credit: nontaxable, description: 'Non-taxable service income' },
          { account: A.salesTaxPayable, credit: tax, description: 'Sales tax' },
          { account: A.serviceCostOfGoods, debit: cogs, description: 'Parts used', department: 3 },
          { account: truckAccount, credit: cogs, description: 'Parts from truck stock' },
        ],
      });
      a.lines.forEach((l, k) => {
        if (l.part && a.truck) sim.inv.move({ part: l.part, location: a.truck, quantity: l.quantity.negated(), value: costs[k]!.negated(), type: MOVE.consumed, date: a.date, source: SRC.serviceInvoices, sourceRecord: recnum, user });
      });
      const payDate = addDays(a.date, r.int(8, 40));
      if (payDate <= CUTOFF_DATE && r.chance(0.93) && total.gt(0)) {
        sim.schedule(payDate, () => this.servicePayment(a.client, recnum, number, payDate, total));
        paid = total;
        lastPaid = payDate;
      }
    } else if (!openWorkOrder) {
      // In Review: a held allocation of the parts on the truck.
      a.lines.forEach((l) => {
        if (l.part && a.truck) sim.inv.cell(l.part, a.truck).held = sim.inv.cell(l.part, a.truck).held.plus(l.quantity);
      });
    }
    const balance = total.minus(paid);
    ctx.add('srvinv', {
      _idnum: id,
      recnum,
      invnum: number,
      invdte: a.date,
      duedte: addDays(a.date, client.terms),
      clnnum: a.client,
      srvloc: a.location,
      srvtyp: a.type,
      srvcon: a.contract,
      empnum: a.tech,
      dscrpt: a.description,
      wrksts: workStatus,
      invttl: money(total),
      taxamt: money(tax),
      amtpad: money(paid),
      invbal: money(balance),
      status: openWorkOrder ? 1 : !a.complete ? 2 : balance.isZero() ? 4 : 1,
      lgrrec: journal,
      ...ctx.txn(a.date, a.date, user, 7 * 60 + (recnum % 600), lastPaid),
    });
    a.lines.forEach((l, k) => {
      ctx.add('srvlin', {
        _idnum: ctx.uuid(),
        _idref: id,
        linnum: k + 1,
        lintyp: l.type,
        prtnum: l.part,
        dscrpt: l.description,
        linqty: qty(l.quantity),
        linprc: price(l.unitPrice),
        untcst: price(l.part ? (l.quantity.isZero() ? ZERO : r4(costs[k]!.div(l.quantity))) : ZERO),
        extttl: money(ext[k]!),
        taxabl: l.taxable,
        lgract: l.taxable ? A.serviceIncomeTaxable : A.serviceIncomeNonTaxable,
        ...ctx.audit(a.date, 7 * 60, user),
      });
    });
    if (a.tech) {
      const visits = a.type === 3 ? 2 : 1;
      for (let v = 0; v < visits; v++) {
        const day = addDays(a.date, v);
        const start = 7 * 60 + 30 + r.int(0, 16) * 30;
        const est = a.lines[0]!.quantity.div(visits).toDecimalPlaces(2);
        ctx.add('srvsch', {
          _idnum: ctx.uuid(),
          recnum: ctx.books.recnum('srvsch'),
          srvrec: recnum,
          empnum: a.tech,
          srvloc: a.location,
          schstt: stamp(day, start),
          schend: stamp(day, start + Math.max(60, Math.round(est.toNumber() * 60))),
          esthrs: hours(est),
          dscrpt: a.description,
          status: a.complete ? 3 : day <= CUTOFF_DATE ? 2 : 1,
          ...ctx.audit(addDays(a.date, -1 - r.int(0, 5)) < '2026-01-01' ? a.date : addDays(a.date, -1 - r.int(0, 5)), 15 * 60, 'dispatch'),
        });
      }
    }
  }

  private servicePayment(client: number, invoice: number, number: string, date: string, amount: Dec): void {
    const ctx = this.ctx;
    const sim = this.sim;
    const recnum = ctx.books.recnum('srvpmt');
    const method = [1, 1, 3, 4][recnum % 4]!;
    const journal = ctx.books.journal({
      source: SRC.cashReceipts,
      date,
      number: `SP${recnum}`,
      description: `Service payment ${number}`,
      user: USERS[4]!,
      lines: [
        { account: A.cashOperating, debit: amount, description: number },
        { account: A.serviceReceivable, credit: amount, description: number },
      ],
    });
    sim.bankTxn({ bank: BANK.operating, date, number: `SDEP${recnum}`, type: 2, payee: ctx.clients[client - 1]!.name, description: `Service invoice ${number}`, deposit: amount, withdrawal: ZERO, journal });
    ctx.add('srvpmt', {
      _idnum: ctx.uuid(),
      recnum,
      clnnum: client,
      invrec: invoice,
      invnum: number,
      pmtdte: date,
      chknum: method === 1 ? String(1000 + (recnum * 37) % 9000) : null,
      pmtmth: method,
      amount: money(amount),
      lgract: A.cashOperating,
      status: 1,
      lgrrec: journal,
      ...ctx.txn(date, date, USERS[4]!, 12 * 60 + (recnum % 200)),
    });
  }
}

/** Splits `total` in proportion to `weights` (cents; the remainder on the last share, never negative). */
function splitBy(total: Dec, weights: Dec[]): Dec[] {
  const all = sum(weights);
  if (all.isZero()) return weights.map((_, k) => (k === 0 ? total : ZERO));
  const shares = weights.map((w) => r2(total.times(w).div(all)));
  const rest = total.minus(sum(shares.slice(0, -1)));
  if (rest.isNegative()) return weights.map((_, k) => (k === 0 ? total : ZERO));
  shares[shares.length - 1] = rest;
  return shares;
}

interface InvoiceLine {
  description: string;
  account: number;
  phase: number | null;
  code: string | null;
  quantity: Dec;
  unitPrice: Dec;
  retainage: Dec;
}

interface ServiceLine {
  type: number;
  part: number | null;
  description: string;
  quantity: Dec;
  unitPrice: Dec;
  unitCost: Dec;
  taxable: boolean;
}
