/**
 * Accounts payable and purchasing: payable invoices (source 11) with their journal, job costs
 * and equipment costs; the Thursday check runs (source 12); purchase orders and their receipts
 * (source 13, a payable invoice in Review plus stock into the order's location); subcontract
 * billings with retainage and lien waivers; credit card statements.
 */
import { Dec } from '../../src/storage/decimal';
import { CUTOFF_DATE, USERS } from './books';
import { A, ACT, CHART, COST_TYPE_ACCOUNT, SRC } from './chart';
import type { Ctx, Job, Vendor } from './context';
import { MOVE } from './inventory';
import type { Prng } from './prng';
import { BANK, Sim } from './sim';
import { addDays, code, daysBetween, money, price, qty, r2, stamp, sum, ZERO } from './util';

const ACCOUNT_TYPE = new Map(CHART.map((a) => [a.number, a.type]));

export interface ApLine {
  lineNumber?: number;
  account: number;
  description: string;
  job?: number | null;
  phase?: number | null;
  costCode?: string | null;
  costType?: number | null;
  equipment?: number | null;
  /** Equipment cost category (1 Fuel, 2 Repairs, ...) for lines on equipment-expense accounts. */
  equipmentCategory?: number;
  quantity: Dec;
  unitPrice: Dec;
  tax?: Dec;
}

export interface ApInvoiceInput {
  vendor: Vendor;
  invoiceNumber: string;
  date: string;
  description: string;
  job?: Job | null;
  phase?: number | null;
  orderNumber?: string | null;
  lines: ApLine[];
  source?: number;
  retainagePct?: Dec;
  /** When retainage is released (paid), if before the cutoff. */
  retainageRelease?: string | null;
  /** Receipts from purchase orders stay in Review while recent. */
  review?: boolean;
  entered?: string;
  user?: string;
}

export interface PostedInvoice {
  recnum: number;
  journal: number;
  total: Dec;
  retainage: Dec;
  paid: Dec;
  lines: Array<{ lineNumber: number; extended: Dec; tax: Dec }>;
}

/** Posts a payable invoice: journal, job and equipment costs, payment plan, header and lines. */
export function postApInvoice(sim: Sim, r: Prng, a: ApInvoiceInput): PostedInvoice {
  const { ctx } = sim;
  const recnum = ctx.books.recnum('acpinv');
  const id = ctx.uuid();
  const source = a.source ?? SRC.payableInvoices;
  const entered = a.entered ?? minDate(addDays(a.date, r.int(0, 3)), CUTOFF_DATE);
  const user = a.user ?? USERS[r.int(0, 2)]!;
  const lines = a.lines.map((l, k) => {
    const extended = r2(l.quantity.times(l.unitPrice));
    const tax = l.tax ?? ZERO;
    return { ...l, lineNumber: l.lineNumber ?? k + 1, extended, tax, total: extended.plus(tax) };
  });
  const total = sum(lines.map((l) => l.total));
  const taxTotal = sum(lines.map((l) => l.tax));
  const retainage = a.retainagePct ? r2(total.times(a.retainagePct).div(100)) : ZERO;
  const docNumber = a.invoiceNumber;

  const journal = ctx.books.journal({
    source,
    date: a.date,
    number: `AP${recnum}`,
    description: `${a.vendor.name}`.slice(0, 40) + ` ${docNumber}`,
    enteredDate: entered,
    user,
    lines: [
      ...lines.map((l) => ({ account: l.account, debit: l.total, description: l.description, job: l.job ?? null, equipment: l.equipment ?? null })),
      { account: A.accountsPayable, credit: total, description: `AP ${a.vendor.name}` },
    ],
  });
  for (const l of lines) {
    const type = ACCOUNT_TYPE.get(l.account);
    if (l.job && type === ACT.directExpense) {
      if (!l.costType || !l.costCode) throw new Error(`AP line on ${l.account} with a job needs a cost code and type`);
      sim.jobCost({
        job: l.job,
        phase: l.phase ?? null,
        costCode: l.costCode,
        costType: l.costType,
        date: a.date,
        description: l.description,
        source,
        documentNumber: docNumber,
        sourceRecord: recnum,
        sourceLine: l.lineNumber,
        vendor: a.vendor.num,
        equipment: null,
        amount: l.total,
        hours: ZERO,
        enteredDate: entered,
        user,
      });
    }
    if (l.equipment && type === ACT.equipmentExpense) {
      sim.equipmentCost({
        equipment: l.equipment,
        date: a.date,
        category: l.equipmentCategory ?? 6,
        description: l.description,
        source,
        documentNumber: docNumber,
        sourceRecord: recnum,
        sourceLine: l.lineNumber,
        vendor: a.vendor.num,
        account: l.account,
        amount: l.total,
        entered,
        user,
      });
    }
  }

  // Payment plan: paid a few days before due at the Thursday check run, retainage on release.
  const due = addDays(a.date, a.vendor.terms);
  const disputed = r.chance(0.015);
  let paid = ZERO;
  let lastPaid: string | null = null;
  if (!disputed) {
    const payDate = maxDate(addDays(due, -r.int(0, 6)), addDays(entered, 1));
    if (Sim.paidBy(payDate) && !(a.review && daysBetween(a.date, CUTOFF_DATE) < 14)) {
      const amount = total.minus(retainage);
      sim.queuePayable(payDate, a.vendor.num, { invoice: recnum, invoiceNumber: docNumber, amount, retainage: ZERO });
      paid = paid.plus(amount);
      lastPaid = Sim.checkRunOn(payDate);
      if (retainage.gt(0) && a.retainageRelease && Sim.paidBy(a.retainageRelease)) {
        sim.queuePayable(a.retainageRelease, a.vendor.num, { invoice: recnum, invoiceNumber: docNumber, amount: retainage, retainage });
        paid = paid.plus(retainage);
        lastPaid = Sim.checkRunOn(a.retainageRelease);
      }
    }
  }
  const balance = total.minus(paid);
  const status = balance.isZero() ? 4 : disputed ? 3 : a.review && daysBetween(a.date, CUTOFF_DATE) < 14 ? 2 : 1;
  ctx.w.add('acpinv', {
    _idnum: id,
    recnum,
    vndnum: a.vendor.num,
    invnum: docNumber,
    invdte: a.date,
    duedte: due,
    dscrpt: a.description,
    jobnum: a.job?.num ?? null,
    phsnum: a.phase ?? null,
    ordnum: a.orderNumber ?? null,
    invttl: money(total),
    amtpad: money(paid),
    invbal: money(balance),
    retain: money(retainage),
    taxamt: money(taxTotal),
    status,
    lgrrec: journal,
    ...ctx.txn(a.date, entered, user, 8 * 60 + (recnum % 500), lastPaid ?? undefined),
  });
  for (const l of lines) {
    ctx.w.add('apivln', {
      _idnum: ctx.uuid(),
      _idref: id,
      linnum: l.lineNumber,
      lgract: l.account,
      dscrpt: l.description,
      jobnum: l.job ?? null,
      phsnum: l.phase ?? null,
      cstcde: l.costCode ? code(l.costCode) : null,
      csttyp: l.costType ?? null,
      eqpnum: l.equipment ?? null,
      linqty: qty(l.quantity),
      linprc: price(l.unitPrice),
      extttl: money(l.extended),
      taxamt: money(l.tax),
      ...ctx.audit(entered, 8 * 60 + (recnum % 500), user),
    });
  }
  return { recnum, journal, total, retainage, paid, lines: lines.map((l) => ({ lineNumber: l.lineNumber, extended: l.extended, tax: l.tax })) };
}

/** Thursday check run: one payment per vendor (check or electronic) with a line per invoice. */
export function runChecks(sim: Sim, date: string): void {
  const byVendor = sim.checkRuns.get(date);
  if (!byVendor) return;
  sim.checkRuns.delete(date);
  const { ctx } = sim;
  const r = ctx.rnd('check-runs');
  for (const [vendorNum, payables] of [...byVendor.entries()].sort((a, b) => a[0] - b[0])) {
    const vendor = ctx.vendors[vendorNum - 1]!;
    const amount = sum(payables.map((p) => p.amount));
    if (amount.isZero()) continue;
    const electronic = r.chance(0.35);
    const recnum = ctx.books.recnum('acppmt');
    const number = electronic ? `EFT${String(recnum).padStart(6, '0')}` : sim.nextCheck(BANK.operating);
    const user = USERS[1]!;
    const journal = ctx.books.journal({
      source: SRC.payablePayments,
      date,
      number: `CHK${number}`,
      description: `Payment ${vendor.name}`,
      user,
      lines: [
        { account: A.accountsPayable, debit: amount, description: `Paid ${payables.length} invoice(s)` },
        { account: A.cashOperating, credit: amount, description: `${electronic ? 'EFT' : 'Check'} ${number}` },
      ],
    });
    const txn = sim.bankTxn({ bank: BANK.operating, date, number, type: electronic ? 6 : 1, payee: vendor.name, description: `Vendor payment ${vendor.name}`, deposit: ZERO, withdrawal: amount, journal }, date, user);
    const id = ctx.uuid();
    ctx.add('acppmt', {
      _idnum: id,
      recnum,
      vndnum: vendorNum,
      chknum: number,
      chkdte: date,
      bnkact: BANK.operating,
      dscrpt: `Check run ${date}`,
      amount: money(amount),
      dsctkn: money(0),
      pmtmth: electronic ? 2 : 1,
      status: txn.statementMonth ? 2 : 1,
      lgrrec: journal,
      ...ctx.txn(date, date, user, 15 * 60 + (recnum % 60)),
    });
    payables.forEach((p, k) => {
      ctx.add('apmtln', {
        _idnum: ctx.uuid(),
        _idref: id,
        linnum: k + 1,
        invrec: p.invoice,
        invnum: p.invoiceNumber,
        amtpad: money(p.amount),
        dsctkn: money(0),
        retpad: money(p.retainage),
        ...ctx.audit(date, 15 * 60, user),
      });
    });
  }
}

function minDate(a: string, b: string): string {
  return a < b ? a : b;
}
function maxDate(a: string, b: string): string {
  return a > b ? a : b;
}

const vendorInvoiceCounters = new WeakMap<Ctx, Map<number, number>>();
export function vendorInvoiceNumber(ctx: Ctx, vendor: Vendor): string {
  let m = vendorInvoiceCounters.get(ctx);
  if (!m) {
    m = new Map();
    vendorInvoiceCounters.set(ctx, m);
  }
  const n = (m.get(vendor.num) ?? 1000 + ((vendor.num * 7919) % 9000)) + 1;
  m.set(vendor.num, n);
  const prefix = vendor.name.replace(/[^A-Z]/g, '').slice(0, 2) || 'IN';
  return `${prefix}${n}`;
}

/** A phase and cost code of the job (from its list), preferring `prefer`. */
export function jobCode(r: Prng, job: Job, prefer?: string): { phase: number; code: string } {
  if (prefer) {
    const hit = job.codes.find((c) => c.code === prefer);
    if (hit) return hit;
  }
  return r.pick(job.codes);
}

function taxFor(ctx: Ctx, job: Job | null | undefined, amount: Dec): Dec {
  if (!job) return ZERO;
  const rate = ctx.taxRates.get(job.taxDistrict) ?? ZERO;
  return rate.isZero() ? ZERO : r2(amount.times(rate).div(100));
}

const MATERIAL_WORDS = ['Lumber package', 'Rebar and accessories', 'Concrete delivery', 'Fasteners', 'Drywall board', 'Electrical wire and boxes', 'Plumbing fittings', 'Roofing materials', 'Doors and frames', 'Paint and sundries'];
const OVERHEAD: ReadonlyArray<readonly [number, string, number, number]> = [
  [A.officeSupplies, 'Office supplies', 40, 900],
  [A.utilities, 'Utilities', 180, 1400],
  [A.professionalFees, 'Professional services', 300, 4500],
  [A.shopSupplies, 'Shop supplies and small tools', 60, 1600],
];

/** The day's ordinary payable invoices (not from orders or subcontracts). */
export function dailyPayables(sim: Sim, date: string): void {
  const { ctx } = sim;
  const r = ctx.rnd('ap');
  const jobs = ctx.activeJobs(date);
  const count = ctx.daily(r, 0.9);
  for (let i = 0; i < count; i++) {
    const kind = r.weighted([[1, 8], [3, 3], [4, 2], [5, 2], [6, 1]] as const);
    const vendors = ctx.vendorsByKind.get(kind);
    if (!vendors || vendors.length === 0) continue;
    const vendor = vendors[r.int(0, vendors.length - 1)]!;
    const job = jobs.length ? jobs[r.int(0, jobs.length - 1)]! : null;
    const lines: ApLine[] = [];
    let invoiceJob: Job | null = null;
    if (kind === 1 && job && r.chance(0.88)) {
      invoiceJob = job;
      for (let k = r.int(1, 3); k > 0; k--) {
        const c = jobCode(r, job, vendor.costCode);
        const quantity = new Dec(r.int(1, 60));
        const unitPrice = r.money(8, 420);
        lines.push({ account: COST_TYPE_ACCOUNT[1]!, description: r.pick(MATERIAL_WORDS), job: job.num, phase: c.phase, costCode: c.code, costType: 1, quantity, unitPrice, tax: taxFor(ctx, job, r2(quantity.times(unitPrice))) });
      }
    } else if (kind === 1) {
      lines.push({ account: A.shopSupplies, description: 'Shop stock and consumables', quantity: new Dec(1), unitPrice: r.money(50, 900) });
    } else if (kind === 3) {
      if (job && r.chance(0.5)) {
        invoiceJob = job;
        const c = jobCode(r, job, '2.200');
        lines.push({ account: COST_TYPE_ACCOUNT[3]!, description: r.pick(['Excavator rental', 'Lift rental', 'Compactor rental', 'Crane service']), job: job.num, phase: c.phase, costCode: c.code, costType: 3, quantity: new Dec(r.int(1, 10)), unitPrice: r.money(85, 650) });
      } else {
        const eq = r.pick(ctx.equipment);
        lines.push({ account: A.equipmentRepairs, description: r.pick(['Hydraulic hose repair', 'Service and filters', 'Tire replacement', 'Track adjustment', 'Brake repair']), equipment: eq.num, equipmentCategory: 2, quantity: new Dec(1), unitPrice: r.money(120, 4200) });
      }
    } else if (kind === 4) {
      for (const eq of r.sample(ctx.equipment, r.int(1, 4))) {
        lines.push({ account: A.fuel, description: `Fuel ${eq.name}`, equipment: eq.num, equipmentCategory: 1, quantity: r.decimal(20, 180, 1), unitPrice: r.decimal(3.6, 4.9, 3) });
      }
    } else if (kind === 5) {
      const [account, what, lo, hi] = r.pick(OVERHEAD);
      lines.push({ account, description: what, quantity: new Dec(1), unitPrice: r.money(lo, hi) });
    } else if (kind === 6 && job) {
      invoiceJob = job;
      const c = jobCode(r, job, '1.300');
      lines.push({ account: COST_TYPE_ACCOUNT[6]!, description: r.pick(['Building permit', 'Plan review fee', 'Inspection fee', 'Utility connection fee']), job: job.num, phase: c.phase, costCode: c.code, costType: 6, quantity: new Dec(1), unitPrice: r.money(150, 6500) });
    }
    if (lines.length === 0) continue;
    postApInvoice(sim, r, {
      vendor,
      invoiceNumber: vendorInvoiceNumber(ctx, vendor),
      date,
      description: invoiceJob ? `${invoiceJob.name}`.slice(0, 50) : lines[0]!.description,
      job: invoiceJob,
      phase: null,
      lines,
    });
  }
}

/** Rent and insurance on the first business day of the month. */
export function monthlyOverhead(sim: Sim, date: string): void {
  const { ctx } = sim;
  const r = ctx.rnd('ap-monthly');
  const services = ctx.vendorsByKind.get(5);
  if (!services || services.length === 0) return;
  const s = Math.max(1, ctx.scale);
  const bills: ReadonlyArray<readonly [number, string, Dec]> = [
    [A.rent, 'Office and yard rent', new Dec(4800).times(s).toDecimalPlaces(2)],
    [A.insurance, 'General liability and auto insurance', new Dec(3900).times(s).toDecimalPlaces(2)],
    [A.utilities, 'Electric and water', r.money(900, 1800).times(s).toDecimalPlaces(2)],
  ];
  bills.forEach(([account, what, amount], k) => {
    const vendor = services[k % services.length]!;
    postApInvoice(sim, r, { vendor, invoiceNumber: vendorInvoiceNumber(ctx, vendor), date, description: what, lines: [{ account, description: `${what} ${date.slice(0, 7)}`, quantity: new Dec(1), unitPrice: amount }] });
  });
}

// ------------------------------------------------------------------ purchase orders

interface PoLine {
  lineNumber: number;
  part: number | null;
  description: string;
  account: number;
  costCode: string | null;
  costType: number | null;
  phase: number | null;
  unit: string;
  ordered: Dec;
  unitPrice: Dec;
  received: Dec;
  canceled: Dec;
}

/** A purchase order (stock or job) with its receipts planned; receipts run on their dates. */
export function createPurchaseOrder(sim: Sim, date: string): void {
  const { ctx } = sim;
  const r = ctx.rnd('po');
  const suppliers = ctx.vendorsByKind.get(1) ?? [];
  if (suppliers.length === 0) return;
  const vendor = suppliers[r.int(0, suppliers.length - 1)]!;
  const jobs = ctx.activeJobs(date);
  const recnum = ctx.books.recnum('pchord');
  const orderNumber = `PO26-${String(recnum).padStart(6, '0')}`;
  const stock = r.chance(0.45) || jobs.length === 0;
  const siteJobs = ctx.activeSiteJobs(date);
  const toSite = stock && siteJobs.length > 0 && r.chance(0.3) ? siteJobs[r.int(0, siteJobs.length - 1)]! : null;
  const job = stock ? toSite : jobs[r.int(0, jobs.length - 1)]!;
  const location = stock ? (toSite ? toSite.siteLocation! : 1) : null;
  const locationAccount = location ? ctx.locations[location - 1]!.account : null;
  const lines: PoLine[] = [];
  const vendorParts = ctx.partsByVendor.get(vendor.num) ?? [];
  const lineCount = r.int(2, 6);
  for (let k = 1; k <= lineCount; k++) {
    const part = vendorParts.length && r.chance(0.8) ? vendorParts[r.int(0, vendorParts.length - 1)]! : ctx.parts[r.int(0, ctx.parts.length - 1)]!;
    if (lines.some((l) => l.part === part.num)) continue;
    const unitPrice = r4(part.cost.times(r.int(95, 108)).div(100));
    const ordered = new Dec(part.cost.gt(200) ? r.int(1, 6) : r.int(5, 80));
    const c = !stock && job ? jobCode(r, job, part.costCode) : null;
    lines.push({
      lineNumber: lines.length + 1,
      part: stock || r.chance(0.7) ? part.num : null,
      description: part.name,
      account: stock ? locationAccount! : COST_TYPE_ACCOUNT[1]!,
      costCode: c?.code ?? null,
      costType: stock ? null : 1,
      phase: c?.phase ?? null,
      unit: part.unit,
      ordered,
      unitPrice,
      received: ZERO,
      canceled: ZERO,
    });
  }
  // Receipt plan: most lines arrive complete in one delivery, some in two, a few are cut short.
  const first = addDays(date, r.int(2, 12));
  const second = addDays(first, r.int(6, 20));
  const void_ = r.chance(0.02);
  const master = !void_ && r.chance(0.01);
  const receipts: Array<{ date: string; lines: Array<{ line: PoLine; quantity: Dec }> }> = [];
  if (!void_ && !master) {
    const r1: Array<{ line: PoLine; quantity: Dec }> = [];
    const r2_: Array<{ line: PoLine; quantity: Dec }> = [];
    for (const l of lines) {
      const partial = r.chance(0.25) && l.ordered.gt(1);
      const q1 = partial ? l.ordered.times(r.int(40, 90)).div(100).toDecimalPlaces(0, Dec.ROUND_DOWN) : l.ordered;
      if (q1.gt(0)) r1.push({ line: l, quantity: q1 });
      const rest = l.ordered.minus(q1);
      if (rest.gt(0)) {
        if (r.chance(0.8)) r2_.push({ line: l, quantity: rest });
        else if (daysBetween(date, CUTOFF_DATE) > 45) l.canceled = rest;
      }
    }
    if (r1.length && first <= CUTOFF_DATE) receipts.push({ date: first, lines: r1 });
    if (r2_.length && second <= CUTOFF_DATE) receipts.push({ date: second, lines: r2_ });
  }
  let receivedTotal = ZERO;
  for (const rc of receipts) for (const x of rc.lines) {
    x.line.received = x.line.received.plus(x.quantity);
    receivedTotal = receivedTotal.plus(r2(x.quantity.times(x.line.unitPrice)));
  }
  const orderTotal = sum(lines.map((l) => r2(l.ordered.times(l.unitPrice))));
  const open = lines.some((l) => l.received.plus(l.canceled).lt(l.ordered));
  const status = void_ ? 5 : master ? 6 : !open ? 4 : lines.some((l) => l.received.gt(0)) ? 3 : 1;
  const taxAmount = !stock && job ? taxFor(ctx, job, orderTotal) : ZERO;
  const id = ctx.uuid();
  const user = USERS[r.int(0, 2)]!;
  const lastReceipt = receipts.length ? receipts[receipts.length - 1]!.date : undefined;
  ctx.add('pchord', {
    _idnum: id,
    recnum,
    ordnum: orderNumber,
    orddte: date,
    vndnum: vendor.num,
    jobnum: job?.num ?? null,
    phsnum: null,
    dscrpt: stock ? `Stock replenishment ${ctx.locations[location! - 1]!.name}` : `Material for ${job!.name}`,
    ordtyp: stock ? 2 : 1,
    deldte: first,
    locnum: location,
    ordttl: money(orderTotal),
    rcvttl: money(receivedTotal),
    taxamt: money(taxAmount),
    status,
    ...ctx.audit(date, 8 * 60 + (recnum % 500), user),
    ...(lastReceipt ? { upddte: stamp(lastReceipt, 14 * 60) } : {}),
  });
  for (const l of lines) {
    ctx.add('pcorln', {
      _idnum: ctx.uuid(),
      _idref: id,
      linnum: l.lineNumber,
      prtnum: l.part,
      dscrpt: l.description,
      lgract: l.account,
      cstcde: l.costCode ? code(l.costCode) : null,
      csttyp: l.costType,
      untdsc: l.unit,
      linqty: qty(l.ordered),
      linprc: price(l.unitPrice),
      extttl: money(r2(l.ordered.times(l.unitPrice))),
      rcvdte: qty(l.received),
      cancel: qty(l.canceled),
      ...ctx.audit(date, 8 * 60 + (recnum % 500), user),
    });
    const open = l.ordered.minus(l.received).minus(l.canceled);
    if (!void_ && !master && open.gt(0)) {
      if (stock && l.part) sim.inv.cell(l.part, location!).onOrder = sim.inv.cell(l.part, location!).onOrder.plus(open);
      if (job) sim.commit(job.num, r2(open.times(l.unitPrice)));
    }
  }
  receipts.forEach((rc, k) => {
    sim.schedule(rc.date, () => receivePurchaseOrder(sim, { vendor, orderNumber, job, location, lines: rc.lines, date: rc.date, receiptNumber: k + 1 }));
  });
}

function r4(v: Dec): Dec {
  return v.toDecimalPlaces(4, Dec.ROUND_HALF_UP);
}

function receivePurchaseOrder(
  sim: Sim,
  p: { vendor: Vendor; orderNumber: string; job: Job | null; location: number | null; lines: Array<{ line: PoLine; quantity: Dec }>; date: string; receiptNumber: number },
): void {
  const { ctx } = sim;
  const r = ctx.rnd('po-receipts');
  const apLines: ApLine[] = p.lines.map(({ line, quantity }) => {
    const extended = r2(quantity.times(line.unitPrice));
    return {
      lineNumber: line.lineNumber,
      account: line.account,
      description: line.description,
      job: p.location ? null : (p.job?.num ?? null),
      phase: p.location ? null : line.phase,
      costCode: p.location ? null : line.costCode,
      costType: p.location ? null : line.costType,
      quantity,
      unitPrice: line.unitPrice,
      tax: p.location ? ZERO : taxFor(ctx, p.job, extended),
    };
  });
  const posted = postApInvoice(sim, r, {
    vendor: p.vendor,
    invoiceNumber: vendorInvoiceNumber(ctx, p.vendor),
    date: p.date,
    description: `Receipt ${p.receiptNumber} of ${p.orderNumber}`,
    job: p.job,
    orderNumber: p.orderNumber,
    lines: apLines,
    source: SRC.poReceipts,
    review: true,
  });
  for (const { line, quantity } of p.lines) {
    if (p.location && line.part) {
      const cell = sim.inv.cell(line.part, p.location);
      const value = posted.lines.find((l) => l.lineNumber === line.lineNumber)!.extended;
      sim.inv.move({ part: line.part, location: p.location, quantity, value, type: MOVE.receipt, date: p.date, source: SRC.poReceipts, sourceRecord: posted.recnum });
      cell.onOrder = Dec.max(ZERO, cell.onOrder.minus(quantity));
      const part = ctx.parts[line.part - 1]!;
      if (part.serialized) serials(sim, part.num, p.location, quantity, p.date, p.orderNumber, line.unitPrice);
    }
  }
}

/** Serial-numbered units of a receipt (invsrl). */
export function serials(sim: Sim, part: number, location: number, quantity: Dec, date: string, orderNumber: string | null, unitCost: Dec): void {
  const { ctx } = sim;
  const r = ctx.rnd('serials');
  const n = Math.min(10, quantity.toNumber());
  for (let k = 0; k < n; k++) {
    const recnum = ctx.books.recnum('invsrl');
    ctx.add('invsrl', {
      _idnum: ctx.uuid(),
      recnum,
      prtnum: part,
      serial: `SN${part}-${String(recnum).padStart(6, '0')}`,
      locnum: location,
      status: 1,
      rcvdat: date,
      ordnum: orderNumber,
      untcst: price(unitCost),
      jobnum: null,
      wrnend: addDays(date, 365 * r.int(1, 6)),
      ...ctx.audit(date < '2026-01-01' ? '2025-12-31' : date, 12 * 60),
    });
  }
}

// ------------------------------------------------------------------ subcontracts

export interface SubcontractPlan {
  num: number;
  vendor: Vendor;
  job: Job;
  number: string;
  date: string;
  original: Dec;
  changes: Dec;
  retainagePct: Dec;
  lines: Array<{ description: string; phase: number; code: string; value: Dec; billed: Dec; retainage: Dec }>;
  billed: Dec;
  retainageHeld: Dec;
  released?: boolean;
  insuranceExpires: string;
}

/** Progress of a job on a date, 0 to 1 (an S-curve over its duration). */
export function progress(job: Job, date: string): number {
  const total = daysBetween(job.start, job.end);
  if (total <= 0) return 1;
  const x = Math.min(1, Math.max(0, daysBetween(job.start, date) / total));
  return x * x * (3 - 2 * x);
}

/** Monthly subcontract billing on the 25th: a payable invoice per subcontract, retainage, a lien waiver. */
export function subcontractBilling(sim: Sim, date: string, plans: readonly SubcontractPlan[]): void {
  const { ctx } = sim;
  const r = ctx.rnd('sub-billing');
  const previous = addDays(date, -30);
  for (const s of plans) {
    if (s.date > date || s.job.start > date) continue;
    const total = s.original.plus(s.changes);
    const target = r2(total.times(Math.round(progress(s.job, date) * 10000)).div(10000));
    const already = r2(total.times(Math.round(progress(s.job, previous) * 10000)).div(10000));
    const thisPeriod = (s.job.status === 5 && date >= s.job.end ? total : target).minus(s.billed);
    if (thisPeriod.lte(0) || (target.equals(already) && !(s.job.status === 5 && date >= s.job.end))) continue;
    // Spread over the lines by their share of the contract value.
    const shares = s.lines.map((l) => r2(thisPeriod.times(l.value).div(s.original)));
    const diff = thisPeriod.minus(sum(shares));
    shares[shares.length - 1] = shares[shares.length - 1]!.plus(diff);
    const release = s.job.status === 5 ? addDays(s.job.end, 35) : null;
    const posted = postApInvoice(sim, r, {
      vendor: s.vendor,
      invoiceNumber: vendorInvoiceNumber(ctx, s.vendor),
      date,
      description: `${s.number} progress billing`,
      job: s.job,
      lines: s.lines
        .map((l, k) => ({ account: COST_TYPE_ACCOUNT[4]!, description: l.description, job: s.job.num, phase: l.phase, costCode: l.code, costType: 4, quantity: new Dec(1), unitPrice: shares[k]! }))
        .filter((l) => !l.unitPrice.isZero()),
      retainagePct: s.retainagePct,
      retainageRelease: release,
    });
    s.billed = s.billed.plus(posted.total);
    const released = release && Sim.paidBy(release) ? posted.retainage : ZERO;
    s.retainageHeld = s.retainageHeld.plus(posted.retainage).minus(released);
    s.lines.forEach((l, k) => {
      l.billed = l.billed.plus(shares[k]!);
    });
    if (!released.isZero()) s.released = true;
    sim.commit(s.job.num, posted.total.negated());
    ctx.add('lenwvr', {
      _idnum: ctx.uuid(),
      recnum: ctx.books.recnum('lenwvr'),
      vndnum: s.vendor.num,
      jobnum: s.job.num,
      ctcrec: s.num,
      wvrtyp: s.job.status === 5 && date >= s.job.end ? 3 : 1,
      thrdte: date,
      amount: money(posted.total),
      rcvdat: posted.paid.gt(0) ? addDays(date, r.int(3, 20)) : null,
      status: posted.paid.gt(0) ? 2 : r.chance(0.05) ? 3 : 1,
      ...ctx.audit(date, 11 * 60),
    });
  }
}

// ------------------------------------------------------------------ credit cards

/** Monthly card statement: charges coded to accounts, jobs and equipment, paid through a payable invoice. */
export function cardStatement(sim: Sim, date: string, issuer: { num: number; vendor: number }, previousBalance: Dec): Dec {
  const { ctx } = sim;
  const r = ctx.rnd(`card-${issuer.num}`);
  const vendor = ctx.vendors[issuer.vendor - 1]!;
  const jobs = ctx.activeJobs(date);
  const count = ctx.n(5, 3);
  const charges: Array<ApLine & { merchant: string; day: string }> = [];
  for (let k = 0; k < count; k++) {
    const day = addDays(date, -r.int(1, 28));
    if (issuer.num === 2) {
      const eq = r.pick(ctx.equipment);
      charges.push({ merchant: r.pick(['Basin Fuel Stop', 'Ridgeway Travel Center', 'Cascade Cardlock']), day, account: A.fuel, description: `Fuel ${eq.name}`, equipment: eq.num, equipmentCategory: 1, quantity: r.decimal(15, 90, 1), unitPrice: r.decimal(3.7, 4.8, 3) });
    } else if (jobs.length && r.chance(0.45)) {
      const job = jobs[r.int(0, jobs.length - 1)]!;
      const c = jobCode(r, job);
      charges.push({ merchant: r.pick(['Harlow Hardware', 'Pinecrest Home Center', 'Millbrook Rental Counter']), day, account: COST_TYPE_ACCOUNT[5]!, description: 'Job supplies (card)', job: job.num, phase: c.phase, costCode: c.code, costType: 5, quantity: new Dec(1), unitPrice: r.money(12, 480) });
    } else {
      charges.push({ merchant: r.pick(['Stillwater Office Mart', 'Copperline Cafe', 'Westhaven Software', 'Timberline Parcel']), day, account: r.pick([A.officeSupplies, A.shopSupplies]), description: r.pick(['Office supplies', 'Software subscription', 'Client lunch', 'Shipping']), quantity: new Dec(1), unitPrice: r.money(9, 650) });
    }
  }
  const posted = postApInvoice(sim, r, {
    vendor,
    invoiceNumber: `ST${date.replace(/-/g, '').slice(2)}-${issuer.num}`,
    date,
    description: `Card statement ${date}`,
    lines: charges.map((c, k) => ({ ...c, lineNumber: k + 1 })),
  });
  const id = ctx.uuid();
  ctx.add('ccdrec', {
    _idnum: id,
    recnum: ctx.books.recnum('ccdrec'),
    crdiss: issuer.num,
    stmdte: date,
    prvbal: money(previousBalance),
    chgttl: money(posted.total),
    pmtttl: money(previousBalance),
    stmbal: money(posted.total),
    invrec: posted.recnum,
    status: 2,
    ...ctx.audit(addDays(date, 3) > CUTOFF_DATE ? date : addDays(date, 3), 13 * 60),
  });
  charges.forEach((c, k) => {
    ctx.add('ccrcln', {
      _idnum: ctx.uuid(),
      _idref: id,
      linnum: k + 1,
      trndte: c.day,
      mrchnt: c.merchant,
      dscrpt: c.description,
      lgract: c.account,
      jobnum: c.job ?? null,
      cstcde: c.costCode ? code(c.costCode) : null,
      csttyp: c.costType ?? null,
      amount: money(r2(c.quantity.times(c.unitPrice))),
      clrflg: true,
      ...ctx.audit(date, 13 * 60),
    });
  });
  return posted.total;
}
