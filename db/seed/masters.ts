/**
 * Master data: vendors, clients, jobs (phases, budgets, paygroups, proposals), employees
 * (deductions, benefits), equipment (rates), parts (vendor prices, assemblies), inventory
 * locations and the service side (locations, installed equipment, contracts).
 */
import { Dec } from '../../src/storage/decimal';
import { CUTOFF_DATE } from './books';
import { A, COST_CODES } from './chart';
import type { Ctx, Employee, Job, Location, Part } from './context';
import {
  COMPANY,
  EQUIPMENT_KINDS,
  PART_CLASSES,
  PHASE_NAMES,
  TRADES,
  VENDOR_KINDS,
  address,
  clientName,
  domainOf,
  email,
  equipmentName,
  fakeTaxId,
  jobName,
  partName,
  personName,
  phone,
  shortName,
  vendorName,
} from './names';
import { CALC, DEPARTMENTS, JOB_TYPES, tradeWorkersComp } from './setup';
import { addDays, code, formatDate, hours, money, parseDate, pct, price, qty } from './util';

/** Default cost code of a material supplier by what it sells. */
const SUPPLIER_CODES: ReadonlyArray<readonly [string, string]> = [
  ['Building Supply', '6.100'],
  ['Lumber', '6.100'],
  ['Concrete', '3.000'],
  ['Steel', '5.100'],
  ['Electrical', '16.100'],
  ['Plumbing', '15.100'],
];

/** Job status by position in a repeating pattern of 20: 13 current, 3 complete, 1 each bid, refused, contract, closed. */
const JOB_STATUS_PATTERN = [4, 4, 4, 5, 4, 1, 4, 4, 3, 4, 4, 5, 4, 2, 4, 4, 6, 4, 5, 4];

/** Cost code per part class. */
const CLASS_CODES = ['6.100', '3.000', '6.100', '16.100', '15.100', '15.200', '9.100', '9.200', '8.100', '1.000'];
const CLASS_COST: ReadonlyArray<readonly [number, number]> = [
  [4, 180], [6, 140], [9, 60], [2, 320], [3, 900], [4, 600], [8, 45], [12, 160], [45, 950], [6, 140],
];

export async function seedMasters(ctx: Ctx): Promise<void> {
  vendors(ctx);
  clients(ctx);
  employees(ctx);
  jobs(ctx);
  equipment(ctx);
  parts(ctx);
  locations(ctx);
  serviceMasters(ctx);
}

function vendors(ctx: Ctx): void {
  const r = ctx.rnd('vendors');
  const count = ctx.n(22, 12);
  const weights = VENDOR_KINDS.map((k) => [k, k.weight] as const);
  for (let i = 1; i <= count; i++) {
    // The first vendors cover every kind so that small scales still have each.
    const kind = i <= VENDOR_KINDS.length ? VENDOR_KINDS[i - 1]! : r.weighted(weights);
    const name = vendorName(r, kind, i);
    const supplierCode = SUPPLIER_CODES.find(([w]) => name.includes(w))?.[1];
    const a = address(r);
    const contact = personName(r);
    const cc = kind.costType === 4 ? r.pick(['2.200', '7.200', '9.100', '15.000', '16.000', '4.000', '2.400']) : kind.costType === 6 ? '1.300' : kind.costType === 1 ? (supplierCode ?? '6.100') : '1.000';
    const v = { num: i, name, kind: kind.type, account: kind.account, costType: kind.costType, costCode: cc, terms: kind.subcontractor ? 30 : r.pick([10, 15, 30, 30, 45]), subcontractor: kind.subcontractor };
    ctx.vendors.push(v);
    const list = ctx.vendorsByKind.get(kind.type) ?? [];
    list.push(v);
    ctx.vendorsByKind.set(kind.type, list);
    const domain = domainOf(name);
    ctx.w.add('actpay', {
      _idnum: ctx.uuid(),
      recnum: i,
      vndnme: name,
      shtnme: shortName(name, i),
      cntnme: `${contact.first} ${contact.last}`,
      addrs1: a.street,
      ctynme: a.city,
      state_: a.state,
      zipcde: a.zip,
      phnnum: phone(r),
      e_mail: `ap@${domain}`,
      vndtyp: kind.type,
      dftact: kind.account,
      dftcde: code(cc),
      dfttyp: kind.costType,
      duedys: v.terms,
      rpt199: kind.subcontractor,
      inactv: r.chance(0.03),
      ...ctx.audit(formatDate(parseDate('2019-03-01') + r.int(0, 2400) * 86400000)),
    });
    const contacts = r.int(1, 2);
    for (let c = 0; c < contacts; c++) {
      const p = c === 0 ? contact : personName(r);
      ctx.add('vndcnt', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('vndcnt'),
        vndnum: i,
        cntnme: `${p.first} ${p.last}`,
        jobttl: c === 0 ? r.pick(['Sales representative', 'Account manager', 'Owner', 'Project manager']) : r.pick(['Accounts receivable', 'Dispatcher', 'Estimator']),
        phnnum: phone(r),
        cllphn: phone(r),
        e_mail: email(p.first, p.last, domain),
        prmcnt: c === 0,
        ...ctx.audit('2025-01-15'),
      });
    }
  }
  // Agencies the payroll remits to, and the card issuers' vendors.
  const specials: Array<[keyof Ctx['special'] | 'card', string]> = [
    ['taxAgency', 'Federal Tax Deposit (EFTPS)'],
    ['stateAgency', 'Oregon Department of Revenue'],
    ['union', 'Northwest Trades Trust Fund'],
    ['benefits', 'Evergreen Health Cooperative'],
    ['card', 'Summit Business Card Services'],
    ['card', 'Northwind Fleet Card'],
  ];
  for (const [role, name] of specials) {
    const num = ctx.vendors.length + 1;
    const a = address(r);
    ctx.vendors.push({ num, name, kind: 7, account: A.accountsPayable, costType: 5, costCode: '1.000', terms: 15, subcontractor: false });
    ctx.w.add('actpay', {
      _idnum: ctx.uuid(),
      recnum: num,
      vndnme: name,
      shtnme: shortName(name, num),
      cntnme: null,
      addrs1: a.street,
      ctynme: a.city,
      state_: a.state,
      zipcde: a.zip,
      phnnum: phone(r),
      e_mail: `payments@${domainOf(name)}`,
      vndtyp: 7,
      dftact: role === 'card' ? A.officeSupplies : A.accountsPayable,
      dftcde: null,
      dfttyp: null,
      duedys: 15,
      rpt199: false,
      inactv: false,
      ...ctx.audit('2019-02-01'),
    });
    if (role === 'card') ctx.special.cardIssuers.push({ num: ctx.special.cardIssuers.length + 1, vendor: num, account: A.creditCardPayable });
    else (ctx.special as Record<string, unknown>)[role] = num;
  }
  for (const issuer of ctx.special.cardIssuers) {
    ctx.add('crdiss', {
      _idnum: ctx.uuid(),
      recnum: issuer.num,
      issnme: issuer.num === 1 ? 'Summit Business Visa' : 'Northwind Fleet Fuel Card',
      vndnum: issuer.vendor,
      lgract: issuer.account,
      crdlst: String(r.int(1000, 9999)),
      crdlmt: money(issuer.num === 1 ? 50000 * Math.max(1, Math.round(ctx.scale)) : 25000 * Math.max(1, Math.round(ctx.scale))),
      stmday: issuer.num === 1 ? 25 : 28,
      inactv: false,
      ...ctx.audit('2022-06-01'),
    });
  }
}

function clients(ctx: Ctx): void {
  const r = ctx.rnd('clients');
  const count = ctx.n(14, 8);
  for (let i = 1; i <= count; i++) {
    const name = clientName(r, i);
    const a = address(r);
    const contact = personName(r);
    const type = r.weighted([[1, 5], [2, 2], [3, 2], [4, 3], [5, 1]] as const);
    const taxDistrict = a.city === 'Pinecrest' ? 2 : a.city === 'Tamarack' ? 3 : 1;
    const terms = type === 3 || type === 2 ? 45 : 30;
    ctx.clients.push({ num: i, name, terms, service: type === 4 || type === 5 || i % 3 === 0, taxDistrict });
    const domain = domainOf(name);
    ctx.add('reccln', {
      _idnum: ctx.uuid(),
      recnum: i,
      clnnme: name,
      shtnme: shortName(name, i),
      cntnme: `${contact.first} ${contact.last}`,
      addrs1: a.street,
      ctynme: a.city,
      state_: a.state,
      zipcde: a.zip,
      phnnum: phone(r),
      e_mail: email(contact.first, contact.last, domain),
      clntyp: type,
      taxdst: taxDistrict,
      duedys: terms,
      crdlmt: money(r.pick([50000, 100000, 250000, 500000, 1000000])),
      inactv: r.chance(0.02),
      ...ctx.audit(formatDate(parseDate('2018-05-01') + r.int(0, 2600) * 86400000)),
    });
    const contacts = r.int(1, 3);
    for (let c = 0; c < contacts; c++) {
      const p = c === 0 ? contact : personName(r);
      ctx.add('clncnt', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('clncnt'),
        clnnum: i,
        cntnme: `${p.first} ${p.last}`,
        jobttl: r.pick(['Owner representative', 'Facilities manager', 'Project manager', 'Controller', 'Property manager']),
        phnnum: phone(r),
        cllphn: phone(r),
        e_mail: email(p.first, p.last, domain),
        prmcnt: c === 0,
        ...ctx.audit('2025-02-10'),
      });
    }
  }
}

function employees(ctx: Ctx): void {
  const r = ctx.rnd('employees');
  const count = ctx.n(16, 12);
  const fixed: Array<Employee['role']> = ['office', 'office', 'service', 'mechanic', 'foreman'];
  const fieldTrades = TRADES.filter(([t]) => ['Laborer', 'Carpenter', 'Equipment Operator', 'Concrete Finisher'].includes(t));
  for (let i = 1; i <= count; i++) {
    let role: Employee['role'];
    if (i <= fixed.length) role = fixed[i - 1]!;
    else role = r.weighted([['field', 70], ['foreman', 8], ['service', 10], ['mechanic', 4], ['office', 8]] as const);
    const trade =
      role === 'office' ? 'Office' : role === 'service' ? 'Service Technician' : role === 'mechanic' ? 'Mechanic' : role === 'foreman' ? 'Foreman' : r.weighted(fieldTrades.map((t) => [t[0], t[3]] as const));
    const tradeIndex = TRADES.findIndex(([t]) => t === trade);
    const [, min, max] = tradeIndex >= 0 ? TRADES[tradeIndex]! : ['Office', 0, 0];
    const hourly = role !== 'office';
    const rate = hourly ? r.money(min, max) : new Dec(0);
    const salary = hourly ? new Dec(0) : r.money(2100, 4600);
    const name = personName(r);
    const hire = r.chance(0.12) ? formatDate(parseDate('2026-01-12') + r.int(0, 240) * 86400000) : formatDate(parseDate('2008-01-01') + r.int(0, 6500) * 86400000);
    const leaves = i > fixed.length && r.chance(0.06);
    const termination = leaves ? formatDate(parseDate(hire > '2026-02-01' ? hire : '2026-02-01') + r.int(30, 200) * 86400000) : null;
    const e: Employee = {
      num: 100 + i,
      first: name.first,
      last: name.last,
      trade,
      role,
      hourly,
      rate,
      salary,
      paygroup: tradeIndex >= 0 ? tradeIndex + 1 : TRADES.length + 1,
      department: role === 'office' ? 1 : role === 'service' ? 3 : role === 'mechanic' ? 4 : 2,
      workersComp: role === 'office' ? 4 : tradeWorkersComp(trade),
      union: trade === 'Carpenter' ? 1 : trade === 'Equipment Operator' ? 2 : trade === 'Laborer' && r.chance(0.6) ? 3 : null,
      hire,
      termination: termination && termination < CUTOFF_DATE ? termination : null,
      retirementPct: r.chance(0.45) ? new Dec(r.pick([3, 4, 5, 6])) : new Dec(0),
      health: r.chance(0.7) ? new Dec(r.pick([45, 45, 85, 120])) : new Dec(0),
      job: null,
      truck: null,
    };
    ctx.employees.push(e);
    const a = address(r);
    const status = e.termination ? r.pick([3, 4, 5]) : r.chance(0.02) ? 2 : 1;
    ctx.add('employ', {
      _idnum: ctx.uuid(),
      recnum: e.num,
      lstnme: e.last,
      fstnme: e.first,
      addrs1: a.street,
      ctynme: a.city,
      state_: a.state,
      zipcde: a.zip,
      phnnum: phone(r),
      e_mail: email(e.first, e.last, 'mail.example'),
      dtebth: formatDate(parseDate('1962-01-01') + r.int(0, 15000) * 86400000),
      dtehre: hire,
      dtetrm: e.termination,
      status,
      paytyp: hourly ? 1 : 2,
      payrt1: price(rate),
      salary: money(salary),
      paygrp: e.paygroup,
      dptmnt: e.department,
      wkrcmp: e.workersComp,
      pstion: role === 'office' ? r.pick(['Controller', 'Payroll administrator', 'Project accountant', 'Estimator', 'Office manager', 'Project manager']) : trade,
      // Not published: the SSN-like id (never issued range) and emergency contact stay in storage only.
      ssnumb: fakeTaxId(r),
      ...ctx.audit(hire < '2024-01-01' ? '2024-01-02' : hire),
    });
    // Deductions and benefits (year-to-date amounts are completed after payroll, see finish.ts).
    if (e.union) ctx.payrollDeductions.push({ emp: e.num, calc: CALC.union, rate: new Dec('1.5'), amount: new Dec(0), description: 'Union dues' });
    if (!e.retirementPct.isZero()) ctx.payrollDeductions.push({ emp: e.num, calc: CALC.retirement, rate: e.retirementPct, amount: new Dec(0), description: '401(k) deferral' });
    if (!e.health.isZero()) ctx.payrollDeductions.push({ emp: e.num, calc: CALC.health, rate: new Dec(0), amount: e.health, description: 'Health plan, employee share' });
  }
  // Office managers head departments.
  const office = ctx.employees.filter((e) => e.role === 'office');
  const managers = [office[0]?.num ?? null, ctx.employees.find((e) => e.role === 'foreman')?.num ?? null, ctx.employees.find((e) => e.role === 'service')?.num ?? null, ctx.employees.find((e) => e.role === 'mechanic')?.num ?? null];
  DEPARTMENTS.forEach(([num, name, account], k) => {
    ctx.add('dptmnt', { _idnum: ctx.uuid(), recnum: num, dptnme: name, mgrnum: managers[k] ?? null, lgract: account, inactv: false, ...ctx.audit('2024-12-02') });
  });
}

function jobs(ctx: Ctx): void {
  const r = ctx.rnd('jobs');
  const count = ctx.n(11, 8);
  const foremen = ctx.employees.filter((e) => e.role === 'foreman');
  const phaseCodes = COST_CODES.map(([c]) => c).filter((c) => !c.endsWith('.000') || c === '1.000');
  for (let i = 1; i <= count; i++) {
    const num = 2600 + i;
    const status = JOB_STATUS_PATTERN[(i - 1) % JOB_STATUS_PATTERN.length]!;
    const client = ctx.clients[r.int(0, ctx.clients.length - 1)]!;
    const a = address(r);
    let start: string;
    let end: string;
    switch (status) {
      case 1:
      case 2:
        start = formatDate(parseDate('2027-01-15') + r.int(0, 120) * 86400000);
        break;
      case 3:
        start = formatDate(parseDate('2026-12-01') + r.int(0, 60) * 86400000);
        break;
      case 5:
        start = formatDate(parseDate('2025-07-01') + r.int(0, 200) * 86400000);
        break;
      case 6:
        start = formatDate(parseDate('2025-01-10') + r.int(0, 120) * 86400000);
        break;
      default:
        start = formatDate(parseDate('2025-09-01') + r.int(0, 370) * 86400000);
    }
    if (status === 5) end = formatDate(Math.max(parseDate('2026-02-20'), Math.min(parseDate('2026-10-15'), parseDate(start) + r.int(150, 320) * 86400000)));
    else if (status === 6) end = formatDate(parseDate(start) + r.int(120, 240) * 86400000);
    else end = formatDate(Math.max(parseDate('2026-12-10'), parseDate(start) + r.int(180, 480) * 86400000));
    const jobType = r.weighted([[1, 5], [2, 2], [3, 3], [4, 2], [5, 1]] as const);
    const retainage = new Dec(JOB_TYPES[jobType - 1]![3]);
    const phaseCount = r.int(3, 5);
    const phases = Array.from({ length: phaseCount }, (_, k) => k + 1);
    const codes = r
      .sample(phaseCodes, r.int(7, 12))
      .sort((x, y) => Number(x) - Number(y))
      .map((c, k, all) => ({ code: c, phase: Math.min(phaseCount, 1 + Math.floor((k * phaseCount) / all.length)) }));
    if (!codes.some((c) => c.code === '1.100')) codes.unshift({ code: '1.100', phase: 1 });
    // Planned cost: about one crew member per job at scale-independent density; see docs in finish.ts.
    const weeks = Math.max(8, Math.round((parseDate(end) - parseDate(start)) / (7 * 86400000)));
    const planned = new Dec(weeks).times(r.int(9000, 15000));
    const contract = planned.times('1.25').div(1000).toDecimalPlaces(0).times(1000);
    const state = client.taxDistrict === 1 ? a.state : 'WA';
    const job: Job = {
      num,
      name: jobName(r, a.city),
      client: client.num,
      status,
      start,
      end,
      phases,
      codes,
      contract: contract.toDecimalPlaces(0),
      retainagePct: retainage,
      supervisor: foremen.length ? foremen[(i - 1) % foremen.length]!.num : null,
      taxDistrict: state === 'WA' ? (a.city === 'Tamarack' ? 3 : 2) : 1,
      state,
      jobType,
      billing: jobType === 5 ? 'tm' : 'progress',
      siteLocation: null,
    };
    ctx.plannedCost.set(num, planned);
    ctx.jobs.push(job);
    ctx.jobsByNum.set(num, job);
  }
}

/** Writes jobs, phases, budgets, job paygroups and proposals (after the simulation fixed contract amounts). */
export function writeJobs(ctx: Ctx): void {
  const r = ctx.rnd('job-rows');
  for (const job of ctx.jobs) {
    const a = address(r);
    ctx.w.add('actrec', {
      _idnum: ctx.uuid(),
      recnum: job.num,
      jobnme: job.name,
      shtnme: shortName(job.name, job.num),
      clnnum: job.client,
      status: job.status,
      jobtyp: job.jobType,
      addrs1: a.street,
      ctynme: a.city,
      state_: job.state,
      zipcde: a.zip,
      suprvr: job.supervisor,
      cntrct: money(job.contract),
      retpct: pct(job.retainagePct),
      sttdte: job.status <= 2 ? null : job.start,
      cmpdte: job.status >= 5 ? job.end : null,
      taxdst: job.taxDistrict,
      ...ctx.audit(minDate(job.start, '2026-01-05') < '2025-06-01' ? '2025-06-01' : addDays(minDate(job.start, CUTOFF_DATE), -20)),
    });
    for (const p of job.phases) {
      ctx.w.add('jobphs', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('jobphs'),
        jobnum: job.num,
        phsnum: p,
        phsnme: PHASE_NAMES[p - 1] ?? `Phase ${p}`,
        status: job.status >= 5 ? 3 : job.status === 4 && p <= Math.floor(job.phases.length / 2) ? 2 : 1,
        sttdte: job.status <= 2 ? null : addDays(job.start, (p - 1) * 30),
        fnhdte: job.status >= 5 ? job.end : null,
        cntrct: money(job.contract.div(job.phases.length).toDecimalPlaces(2)),
        ...ctx.audit('2025-06-01'),
      });
    }
  }
}

function minDate(a: string, b: string): string {
  return a < b ? a : b;
}

function equipment(ctx: Ctx): void {
  const r = ctx.rnd('equipment');
  const count = ctx.n(8, 6);
  for (let i = 1; i <= count; i++) {
    const typeIndex = (i - 1) % EQUIPMENT_KINDS.length;
    const [kind, rate, costK] = EQUIPMENT_KINDS[typeIndex]!;
    const n = equipmentName(r, kind);
    const cost = new Dec(costK * 1000).times(r.int(80, 115)).div(100).toDecimalPlaces(0);
    const vehicle = kind === 'Pickup Truck' || kind === 'Dump Truck' || kind === 'Flatbed Trailer';
    const num = 500 + i;
    ctx.equipment.push({ num, name: n.name, type: typeIndex + 1, rate: new Dec(rate), costCode: typeIndex < 4 ? '2.200' : '1.200', cost, vehicle, job: null });
    const year = r.int(2012, 2025);
    ctx.add('eqpmnt', {
      _idnum: ctx.uuid(),
      recnum: num,
      eqpnme: n.name,
      eqptyp: typeIndex + 1,
      mannme: n.make,
      modnum: n.model,
      yrmdl: year,
      serial: n.serial,
      lcnnum: vehicle ? `${r.pick(['OR', 'WA'])} ${r.int(100, 999)}${String.fromCharCode(65 + r.int(0, 25))}${String.fromCharCode(65 + r.int(0, 25))}` : null,
      prcdte: `${Math.min(2025, year + r.int(0, 1))}-${String(r.int(1, 12)).padStart(2, '0')}-${String(r.int(1, 28)).padStart(2, '0')}`,
      prccst: money(cost),
      jobnum: null,
      hrsmtr: hours(r.int(150, 9000)),
      status: i % 13 === 7 ? 3 : 2,
      ...ctx.audit(`${Math.min(2025, year + 1)}-02-01`),
    });
    ctx.add('eqprte', {
      _idnum: ctx.uuid(),
      recnum: ctx.books.recnum('eqprte'),
      eqpnum: num,
      effdte: '2025-01-01',
      hrlrte: price(new Dec(rate).times('0.95').toDecimalPlaces(2)),
      dlyrte: price(new Dec(rate).times('7.6').toDecimalPlaces(2)),
      wklrte: price(new Dec(rate).times(34).toDecimalPlaces(2)),
      mthrte: price(new Dec(rate).times(120).toDecimalPlaces(2)),
      oprinc: false,
      ...ctx.audit('2024-12-20'),
    });
    ctx.add('eqprte', {
      _idnum: ctx.uuid(),
      recnum: ctx.books.recnum('eqprte'),
      eqpnum: num,
      effdte: '2026-01-01',
      hrlrte: price(rate),
      dlyrte: price(new Dec(rate).times(8)),
      wklrte: price(new Dec(rate).times(36)),
      mthrte: price(new Dec(rate).times(125)),
      oprinc: false,
      ...ctx.audit('2025-12-18'),
    });
  }
}

function parts(ctx: Ctx): void {
  const r = ctx.rnd('parts');
  const count = ctx.n(400, 60);
  const suppliers = ctx.vendorsByKind.get(1) ?? [];
  for (let i = 1; i <= count; i++) {
    const cls = (i - 1) % PART_CLASSES.length;
    const [className, bases, unit, sizes, variants] = PART_CLASSES[cls]!;
    const base = r.pick(bases);
    const [lo, hi] = CLASS_COST[cls]!;
    const cost = r.decimal(lo * 0.25, hi, 2);
    const vendor = suppliers[r.int(0, suppliers.length - 1)]!;
    const serialized = base === 'Water Heater' || base === 'Thermostat' || base === 'Condensate Pump';
    const p: Part = {
      num: i,
      code: `${className.slice(0, 3).toUpperCase()}-${String(i).padStart(6, '0')}`,
      name: partName(r, base, sizes, variants),
      unit,
      cls: cls + 1,
      cost,
      price: cost.times('1.35').toDecimalPlaces(2),
      vendor: vendor.num,
      costCode: CLASS_CODES[cls]!,
      serialized,
      edited: `${formatDate(parseDate('2026-01-05') + r.int(0, 300) * 86400000)} 10:${String(r.int(10, 59))}:00`,
    };
    ctx.parts.push(p);
    const byVendor = ctx.partsByVendor.get(vendor.num) ?? [];
    byVendor.push(p);
    ctx.partsByVendor.set(vendor.num, byVendor);
    ctx.w.add('tkfprt', {
      _idnum: ctx.uuid(),
      recnum: i,
      prtcde: p.code,
      prtnme: p.name,
      dscrpt: `${className}: ${p.name}`,
      prtunt: unit,
      prtcls: cls === 3 && base === 'LED Troffer' ? PART_CLASSES.length + 1 : cls + 1,
      prtcst: price(cost),
      avgcst: price(cost),
      lstcst: price(cost),
      bilprc: price(p.price),
      mannme: r.pick(['Hartline', 'Brennan', 'Norquist', 'Ardent', 'Tessaro', 'Kobold']),
      manprt: `${r.int(10, 99)}-${r.int(1000, 9999)}`,
      vndnum: vendor.num,
      cstcde: code(p.costCode),
      csttyp: 1,
      minqty: qty(r.int(2, 20)),
      brcode: `0${r.int(10000, 99999)}${r.int(100000, 999999)}`,
      inactv: r.chance(0.01),
      // The average and last cost are completed in finish.ts, which also sets upddte to the
      // last price-book edit (a value different from this one, so the upddte trigger keeps it).
      insdte: '2025-01-06 08:00:00',
      upddte: '2025-01-06 08:00:00',
      insusr: 'dfairbanks',
      updusr: 'dfairbanks',
    });
    const other = suppliers.length > 1 && r.chance(0.6) ? suppliers[r.int(0, suppliers.length - 1)]! : null;
    const others = other && other.num !== vendor.num ? [other] : [];
    for (const [k, v] of [vendor, ...others].entries()) {
      ctx.add('vndprc', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('vndprc'),
        vndnum: v.num,
        prtnum: i,
        vndprt: `${v.name.slice(0, 2).toUpperCase()}${r.int(10000, 99999)}`,
        untprc: price(k === 0 ? cost : cost.times(r.int(97, 112)).div(100).toDecimalPlaces(2)),
        prcunt: unit,
        minqty: qty(r.pick([1, 1, 5, 10, 25])),
        leddys: r.int(1, 21),
        effdte: formatDate(parseDate('2025-06-01') + r.int(0, 400) * 86400000),
        prfvnd: k === 0,
        ...ctx.audit('2025-06-01'),
        upddte: `${formatDate(parseDate('2026-01-05') + r.int(0, 300) * 86400000)} 11:${String(r.int(10, 59))}:00`,
      });
    }
  }
  // Assemblies: kits of 3 to 6 parts.
  const asmCount = ctx.n(8, 5);
  for (let i = 1; i <= asmCount; i++) {
    const kit = r.sample(ctx.parts, r.int(3, 6));
    const lines = kit.map((p) => ({ p, q: new Dec(r.int(1, 12)) }));
    const total = lines.reduce((s, l) => s.plus(l.q.times(l.p.cost)), new Dec(0));
    const id = ctx.uuid();
    const cls = ((i - 1) % 5) + 1;
    ctx.add('tkfasm', {
      _idnum: id,
      recnum: i,
      asmcde: `ASM-${String(i).padStart(5, '0')}`,
      asmnme: `${['Wall framing', 'Footing', 'Office circuit', 'Restroom rough-in', 'Rooftop unit service'][cls - 1]} kit ${i}`,
      asmcls: cls,
      asmunt: 'EA',
      ttlcst: price(total),
      bilprc: price(total.times('1.4').toDecimalPlaces(2)),
      labhrs: hours(r.decimal(0.5, 16, 1)),
      cstcde: code(kit[0]!.costCode),
      inactv: false,
      ...ctx.audit('2025-03-01'),
    });
    lines.forEach((l, k) => {
      ctx.add('asmprt', {
        _idnum: ctx.uuid(),
        _idref: id,
        linnum: k + 1,
        prtnum: l.p.num,
        dscrpt: l.p.name,
        prtqty: qty(l.q),
        untcst: price(l.p.cost),
        extcst: money(l.q.times(l.p.cost)),
        ...ctx.audit('2025-03-01'),
      });
    });
  }
}

function locations(ctx: Ctx): void {
  const r = ctx.rnd('locations');
  const techs = ctx.employees.filter((e) => e.role === 'service');
  const list: Array<Omit<Location, 'num'> & { street?: string }> = [
    { name: 'Main warehouse', type: 1, account: A.inventoryWarehouse, job: null },
    { name: 'Equipment yard', type: 1, account: A.inventoryWarehouse, job: null },
  ];
  for (let t = 0; t < Math.max(2, Math.ceil(techs.length / 2)); t++) list.push({ name: `Service truck ${t + 1}`, type: 2, account: A.inventoryTrucks, job: null });
  const current = ctx.jobs.filter((j) => j.status === 4 && j.start <= '2026-06-01');
  const sites = current.filter((_, k) => k % 8 === 0);
  for (const j of sites) list.push({ name: `Job site store ${j.num}`, type: 3, account: A.inventoryWarehouse, job: j.num });
  list.forEach((l, k) => {
    const num = k + 1;
    ctx.locations.push({ num, name: l.name, type: l.type, account: l.account, job: l.job });
    if (l.job) ctx.job(l.job).siteLocation = num;
    const a = address(r);
    ctx.add('invloc', {
      _idnum: ctx.uuid(),
      recnum: num,
      locnme: l.name,
      loctyp: l.type,
      addrs1: l.type === 2 ? null : num === 1 ? '4410 Foundry Way' : a.street,
      ctynme: l.type === 2 ? null : num <= 2 ? COMPANY.city : a.city,
      state_: l.type === 2 ? null : COMPANY.state,
      zipcde: l.type === 2 ? null : a.zip,
      jobnum: l.job,
      lgract: l.account,
      inactv: false,
      ...ctx.audit('2024-12-05'),
    });
  });
  // Service technicians drive the trucks (two to a truck).
  const trucks = ctx.locations.filter((l) => l.type === 2);
  techs.forEach((t, k) => (t.truck = trucks[Math.floor(k / 2) % trucks.length]!.num));
}

function serviceMasters(ctx: Ctx): void {
  const r = ctx.rnd('service-masters');
  const clients = ctx.clients.filter((c) => c.service);
  const equipmentKinds: ReadonlyArray<readonly [string, string]> = [
    ['Rooftop unit', 'Hartline'],
    ['Gas boiler', 'Norquist'],
    ['Water heater', 'Brennan'],
    ['Split system heat pump', 'Ardent'],
    ['Backflow preventer', 'Tessaro'],
    ['Exhaust fan', 'Kobold'],
  ];
  const heaters = ctx.parts.filter((p) => p.serialized);
  for (const c of clients) {
    const sites = r.int(1, 3);
    for (let s = 0; s < sites; s++) {
      const num = ctx.books.recnum('srvloc');
      const a = address(r);
      const contact = personName(r);
      const taxDistrict = a.city === 'Pinecrest' ? 2 : a.city === 'Tamarack' ? 3 : 1;
      ctx.serviceLocations.push({ num, client: c.num, taxDistrict });
      ctx.serviceLocationsByNum.set(num, ctx.serviceLocations[ctx.serviceLocations.length - 1]!);
      ctx.add('srvloc', {
        _idnum: ctx.uuid(),
        recnum: num,
        clnnum: c.num,
        locnme: s === 0 ? `${c.name} - main` : `${c.name} - site ${s + 1}`,
        addrs1: a.street,
        ctynme: a.city,
        state_: a.state,
        zipcde: a.zip,
        cntnme: `${contact.first} ${contact.last}`,
        phnnum: phone(r),
        taxdst: taxDistrict,
        ntetxt: r.chance(0.4) ? r.pick(['Gate code 4417#', 'Check in at front desk', 'Roof access by ladder in janitor closet', 'Dog on premises']) : null,
        inactv: false,
        ...ctx.audit('2024-09-10'),
      });
      const units: number[] = [];
      const unitCount = r.int(1, 3);
      for (let u = 0; u < unitCount; u++) {
        const [kind, make] = r.pick(equipmentKinds);
        const unit = ctx.books.recnum('srvivt');
        units.push(unit);
        const part = kind === 'Water heater' && heaters.length ? r.pick(heaters) : null;
        const installed = formatDate(parseDate('2014-01-01') + r.int(0, 4300) * 86400000);
        ctx.add('srvivt', {
          _idnum: ctx.uuid(),
          recnum: unit,
          clnnum: c.num,
          srvloc: num,
          dscrpt: `${kind} #${u + 1}`,
          mannme: make,
          modnum: `${kind.slice(0, 2).toUpperCase()}${r.int(100, 999)}`,
          serial: `${make.slice(0, 3).toUpperCase()}${r.int(1000000, 9999999)}`,
          prtnum: part?.num ?? null,
          insdat: installed,
          wrnend: addDays(installed, 365 * r.int(1, 10)),
          status: r.chance(0.05) ? 2 : 1,
          ...ctx.audit(installed < '2024-01-01' ? '2024-01-03' : installed),
        });
      }
      ctx.serviceInventory.set(num, units);
      if (r.chance(0.45)) {
        const frequency = r.weighted([[1, 4], [2, 3], [4, 1]] as const);
        const perBilling = r.money(frequency === 1 ? 180 : frequency === 2 ? 450 : 1500, frequency === 1 ? 650 : frequency === 2 ? 1600 : 4800);
        const billings = frequency === 1 ? 12 : frequency === 2 ? 4 : 1;
        const start = formatDate(parseDate('2025-03-01') + r.int(0, 420) * 86400000).slice(0, 8) + '01';
        const cnum = ctx.books.recnum('srvcon');
        const end = addDays(start, 365 - 1);
        ctx.serviceContracts.push({ num: cnum, client: c.num, location: num, amount: perBilling, frequency, start, end });
        const id = ctx.uuid();
        const nextBilling = nextContractBilling(start, frequency, CUTOFF_DATE);
        ctx.add('srvcon', {
          _idnum: id,
          recnum: cnum,
          clnnum: c.num,
          srvloc: num,
          dscrpt: `${['', 'Monthly', 'Quarterly', '', 'Annual'][frequency]} maintenance agreement`,
          sttdte: start,
          enddte: end,
          blgfrq: frequency === 4 ? 4 : frequency,
          cntrct: money(perBilling.times(billings)),
          blgamt: money(perBilling),
          nxtblg: end < CUTOFF_DATE ? null : nextBilling,
          status: end < CUTOFF_DATE ? 2 : start > CUTOFF_DATE ? 4 : 1,
          ...ctx.audit(addDays(start, -10)),
        });
        units.forEach((unit, k) => {
          ctx.add('srvcln', {
            _idnum: ctx.uuid(),
            _idref: id,
            linnum: k + 1,
            srvtyp: k === 0 ? 1 : 4,
            dscrpt: k === 0 ? 'Scheduled maintenance' : 'Annual inspection',
            vstyer: k === 0 ? (frequency === 1 ? 12 : frequency === 2 ? 4 : 2) : 1,
            srvivt: unit,
            amount: money(perBilling.times(billings).div(units.length).toDecimalPlaces(2)),
            ...ctx.audit(addDays(start, -10)),
          });
        });
      }
    }
  }
}

/** First billing date of a contract on or after `after`. */
export function nextContractBilling(start: string, frequency: number, after: string): string {
  const step = frequency === 1 ? 1 : frequency === 2 ? 3 : 12;
  let y = Number(start.slice(0, 4));
  let m = Number(start.slice(5, 7));
  for (let guard = 0; guard < 200; guard++) {
    const d = `${y}-${String(m).padStart(2, '0')}-01`;
    if (d >= after) return d;
    m += step;
    while (m > 12) {
      m -= 12;
      y++;
    }
  }
  return after;
}

