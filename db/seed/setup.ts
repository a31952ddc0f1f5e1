/**
 * Company setup: chart of accounts, transaction sources, ledger setup, fiscal periods, ledger
 * budgets, cost types / divisions / codes and the small code tables (departments, types,
 * classes, tax, workers comp, unions, paygroups, payroll calculations, banks, card issuers).
 */
import { Dec } from '../../src/storage/decimal';
import { CURRENT_PERIOD, FISCAL_YEAR } from './books';
import { A, ACT, CHART, COST_CODES, COST_DIVISIONS, COST_TYPES, SOURCES } from './chart';
import type { Ctx } from './context';
import { EQUIPMENT_KINDS, PART_CLASSES, TRADES, VENDOR_KINDS, personName, phone } from './names';
import { code, lastDayOfMonth, money, pct, price } from './util';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const SETUP_DATE = '2024-12-02';

export const DEPARTMENTS: ReadonlyArray<readonly [number, string, number]> = [
  [1, 'Administration', A.officeSalaries],
  [2, 'Field operations', A.laborExpense],
  [3, 'Service', A.serviceCostOfGoods],
  [4, 'Equipment shop', A.shopLabor],
];

export const JOB_TYPES: ReadonlyArray<readonly [number, string, string, number]> = [
  [1, 'Commercial', 'Private commercial construction', 10],
  [2, 'Public works', 'Prevailing-wage public projects', 5],
  [3, 'Tenant improvement', 'Interior build-outs and remodels', 10],
  [4, 'Multifamily', 'Apartments and townhomes', 10],
  [5, 'Time and material', 'Cost-plus and T&M work', 0],
];

export const CLIENT_TYPES: ReadonlyArray<readonly [number, string, string, number]> = [
  [1, 'Owner', 'Private owner or developer', 30],
  [2, 'General contractor', 'We work as a subcontractor', 45],
  [3, 'Government', 'City, county, school district', 45],
  [4, 'Property manager', 'Managed commercial property (service)', 15],
  [5, 'Residential', 'Homeowner', 15],
];

export const SERVICE_TYPES: ReadonlyArray<readonly [number, string, string, number, number]> = [
  [1, 'Preventive maintenance', 'Scheduled maintenance visit', 2, A.serviceIncomeNonTaxable],
  [2, 'Repair', 'Breakdown repair', 3, A.serviceIncomeTaxable],
  [3, 'Installation', 'New equipment installation', 6, A.serviceIncomeTaxable],
  [4, 'Inspection', 'Code or warranty inspection', 1, A.serviceIncomeNonTaxable],
  [5, 'Emergency call', 'After-hours emergency', 3, A.serviceIncomeTaxable],
  [6, 'Warranty', 'Warranty work, not billed', 2, A.serviceIncomeNonTaxable],
];

export const WORKERS_COMP: ReadonlyArray<readonly [number, string, string, string]> = [
  // recnum, name, class code, rate per 100 of wages
  [1, 'Carpentry - commercial', '5403', '6.12'],
  [2, 'Concrete construction', '5213', '5.48'],
  [3, 'Excavation and grading', '6217', '4.37'],
  [4, 'Clerical office', '8810', '0.14'],
  [5, 'HVAC and plumbing service', '5183', '3.21'],
  [6, 'Equipment repair shop', '3632', '3.02'],
];

/** Payroll calculation numbers the payroll generator uses. */
export const CALC = { federal: 1, socialSecurity: 2, medicare: 3, state: 4, local: 5, union: 6, retirement: 7, health: 8, employerFica: 9, unemployment: 10, workersComp: 11 } as const;

export async function seedSetup(ctx: Ctx): Promise<void> {
  const { w } = ctx;
  const r = ctx.rnd('setup');

  for (const a of CHART) {
    w.add('lgract', {
      _idnum: ctx.uuid(),
      recnum: a.number,
      lngnme: a.name,
      shtnme: a.short,
      acttyp: a.type,
      sumact: a.summary ?? null,
      dptmnt: a.department ?? null,
      subtyp: a.subsidiary ?? 0,
      inactv: a.inactive ?? false,
      ntetxt: a.inactive ? 'Closed when marketing moved to the office budget.' : null,
      ...ctx.audit(SETUP_DATE),
    });
  }
  for (const [num, name, abbr, std] of SOURCES) {
    w.add('source', { _idnum: ctx.uuid(), recnum: num, srcnme: name, abbrvn: abbr, stdsrc: std, inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  w.add('lgrstp', {
    _idnum: ctx.uuid(),
    recnum: 1,
    fscend: 12,
    curyer: FISCAL_YEAR,
    curprd: CURRENT_PERIOD,
    prdplc: 2,
    apcact: A.accountsPayable,
    arcact: A.accountsReceivable,
    cshact: A.cashOperating,
    invact: A.inventoryWarehouse,
    invadj: A.inventoryShrinkage,
    wipact: A.wip,
    dexact: A.materialExpense,
    eqpact: A.equipmentRepairs,
    pylact: A.fedWithholding,
    rtpact: A.retentionPayable,
    rtract: A.retentionReceivable,
    stxact: A.salesTaxPayable,
    srvact: A.serviceIncomeTaxable,
    ...ctx.audit(SETUP_DATE),
    upddte: '2026-11-02 07:45:00',
  });
  // Fiscal periods: 2025 closed, 2026 open (the setup's current period, 11, bounds postings).
  for (const year of [FISCAL_YEAR - 1, FISCAL_YEAR]) {
    for (let p = 0; p <= 12; p++) {
      w.add('fscprd', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('fscprd'),
        postyr: year,
        actprd: p,
        prdnme: p === 0 ? `Prior-year adjustments ${year}` : `${MONTHS[p - 1]} ${year}`,
        sttdte: p === 0 ? `${year}-01-01` : `${year}-${String(p).padStart(2, '0')}-01`,
        enddte: p === 0 ? `${year}-12-31` : lastDayOfMonth(year, p),
        status: year < FISCAL_YEAR ? 2 : 1,
        ...ctx.audit(year < FISCAL_YEAR ? '2024-12-15' : '2025-12-15'),
      });
    }
  }

  for (const [num, name, abbr, preset] of COST_TYPES) {
    w.add('csttyp', { _idnum: ctx.uuid(), recnum: num, typnme: name, abbrvn: abbr, preset, inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  for (const [num, name] of COST_DIVISIONS) {
    ctx.add('cstdiv', {
      _idnum: ctx.uuid(),
      recnum: num,
      divnme: name,
      frmcde: code(num),
      thrcde: code(new Dec(num).plus('0.999')),
      inactv: false,
      ...ctx.audit(SETUP_DATE),
    });
  }
  COST_CODES.forEach(([cc, name, unit], i) => {
    w.add('cstcde', {
      _idnum: ctx.uuid(),
      recnum: i + 1,
      cstcde: code(cc),
      cdenme: name,
      untdsc: unit,
      cstdiv: Math.floor(Number(cc)),
      inactv: false,
      ...ctx.audit(SETUP_DATE),
    });
  });

  for (const k of VENDOR_KINDS) {
    ctx.add('vndtyp', { _idnum: ctx.uuid(), recnum: k.type, typnme: k.typeName, lgract: k.account, rpt199: k.subcontractor, inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  ctx.add('vndtyp', { _idnum: ctx.uuid(), recnum: 7, typnme: 'Tax and benefit agencies', lgract: null, rpt199: false, inactv: false, ...ctx.audit(SETUP_DATE) });
  for (const [num, name, desc, terms] of CLIENT_TYPES) {
    ctx.add('clntyp', { _idnum: ctx.uuid(), recnum: num, typnme: name, dscrpt: desc, duedys: terms, inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  for (const [num, name, desc, ret] of JOB_TYPES) {
    ctx.add('jobtyp', { _idnum: ctx.uuid(), recnum: num, typnme: name, dscrpt: desc, retpct: pct(ret), inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  EQUIPMENT_KINDS.forEach(([name, rate], i) => {
    ctx.add('eqptyp', {
      _idnum: ctx.uuid(),
      recnum: i + 1,
      typnme: name,
      dscrpt: `${name}s, owned`,
      cstcde: code(i < 4 ? '2.200' : '1.200'),
      hrlrte: price(rate),
      inactv: false,
      ...ctx.audit(SETUP_DATE),
    });
  });
  PART_CLASSES.forEach(([name], i) => {
    ctx.add('prtcls', {
      _idnum: ctx.uuid(),
      recnum: i + 1,
      clsnme: name,
      prncls: null,
      csttyp: 1,
      inactv: false,
      ...ctx.audit(SETUP_DATE),
    });
  });
  // A nested class (child of Electrical) shows the hierarchy.
  ctx.add('prtcls', { _idnum: ctx.uuid(), recnum: PART_CLASSES.length + 1, clsnme: 'Lighting', prncls: 4, csttyp: 1, inactv: false, ...ctx.audit(SETUP_DATE) });
  const asmClasses = ['Framing kits', 'Concrete kits', 'Electrical rough-in', 'Plumbing rough-in', 'Service kits'];
  asmClasses.forEach((name, i) => {
    ctx.add('asmcls', { _idnum: ctx.uuid(), recnum: i + 1, clsnme: name, prncls: null, dscrpt: `${name} for estimating and issue`, inactv: false, ...ctx.audit(SETUP_DATE) });
  });
  const poTypes: ReadonlyArray<readonly [string, string, boolean]> = [
    ['Material', 'Material delivered to a job', true],
    ['Stock', 'Stock replenishment into a warehouse or truck', true],
    ['Rental', 'Equipment rental', false],
    ['Service', 'Outside services', false],
  ];
  poTypes.forEach(([name, desc, auto], i) => {
    ctx.add('pchtyp', { _idnum: ctx.uuid(), recnum: i + 1, typnme: name, dscrpt: desc, atocls: auto, inactv: false, ...ctx.audit(SETUP_DATE) });
  });
  for (const [num, name, desc, hrs, account] of SERVICE_TYPES) {
    ctx.add('srvtyp', { _idnum: ctx.uuid(), recnum: num, typnme: name, dscrpt: desc, dfthrs: money(hrs), lgract: account, inactv: false, ...ctx.audit(SETUP_DATE) });
  }

  // Sales tax: Oregon has none; the Washington jobs and sites pay state + county + city.
  const entities: ReadonlyArray<readonly [number, string, string]> = [
    [1, 'Washington State Dept. of Revenue', '6.5'],
    [2, 'Clarkmoor County', '0.9'],
    [3, 'City of Pinecrest', '1.3'],
    [4, 'City of Tamarack', '1.1'],
  ];
  for (const [num, name, rate] of entities) {
    ctx.add('taxent', { _idnum: ctx.uuid(), recnum: num, entnme: name, taxrte: pct(rate), vndnum: null, lgract: A.salesTaxPayable, rptidn: `WA-${600 + num * 17}`, inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  const districts: ReadonlyArray<readonly [number, string, number | null, number | null, number | null, string]> = [
    [1, 'Oregon (no sales tax)', null, null, null, '0'],
    [2, 'Pinecrest, WA', 1, 2, 3, '8.7'],
    [3, 'Tamarack, WA', 1, 2, 4, '8.5'],
  ];
  for (const [num, name, e1, e2, e3, rate] of districts) {
    ctx.taxRates.set(num, new Dec(rate));
    ctx.add('taxdst', { _idnum: ctx.uuid(), recnum: num, dstnme: name, taxen1: e1, taxen2: e2, taxen3: e3, taxrte: pct(rate), taxmat: num !== 1, taxlab: false, inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  for (const [num, name, cls, rate] of WORKERS_COMP) {
    ctx.add('wkrcmp', { _idnum: ctx.uuid(), recnum: num, cdenme: name, state_: 'OR', clscde: cls, cmprte: pct(rate), expmod: pct('0.92'), inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  ctx.add('loctax', { _idnum: ctx.uuid(), recnum: 1, taxnme: 'Millbrook transit tax', athrty: 'Millbrook Transit District', state_: 'OR', taxrte: pct('0.1'), emprte: pct('0'), maxwge: money(0), lgract: A.stateWithholding, inactv: false, ...ctx.audit(SETUP_DATE) });
  ctx.add('loctax', { _idnum: ctx.uuid(), recnum: 2, taxnme: 'Statewide transit tax', athrty: 'Oregon Dept. of Revenue', state_: 'OR', taxrte: pct('0.1'), emprte: pct('0'), maxwge: money(0), lgract: A.stateWithholding, inactv: false, ...ctx.audit(SETUP_DATE) });
  ctx.add('loctax', { _idnum: ctx.uuid(), recnum: 3, taxnme: 'County school levy (repealed)', athrty: 'Clarkmoor County', state_: 'WA', taxrte: pct('0.05'), emprte: pct('0.05'), maxwge: money(50000), lgract: A.stateWithholding, inactv: true, ...ctx.audit(SETUP_DATE) });
  const rc = personName(r);
  const unions: ReadonlyArray<readonly [number, string, string]> = [
    [1, 'Carpenters Regional Council', 'Local 2154'],
    [2, 'Operating Engineers', 'Local 701'],
    [3, 'Laborers International', 'Local 296'],
  ];
  for (const [num, name, local] of unions) {
    ctx.add('unnrec', { _idnum: ctx.uuid(), recnum: num, unnnme: name, lclnum: local, cntnme: `${rc.first} ${rc.last}`, phnnum: phone(r), vndnum: null, inactv: false, ...ctx.audit(SETUP_DATE) });
  }
  TRADES.forEach(([title, min, max], i) => {
    const base = new Dec(min).plus(max).div(2).toDecimalPlaces(2);
    ctx.paygroupRates.set(i + 1, base);
    ctx.add('paygrp', {
      _idnum: ctx.uuid(),
      recnum: i + 1,
      grpnme: title,
      payrt1: price(base),
      payrt2: price(base.times('1.5')),
      payrt3: price(base.times(2)),
      wkrcmp: tradeWorkersComp(title),
      unnnum: title === 'Carpenter' ? 1 : title === 'Equipment Operator' ? 2 : title === 'Laborer' ? 3 : null,
      cstcde: code(title === 'Equipment Operator' ? '2.200' : title === 'Concrete Finisher' ? '3.300' : '6.100'),
      inactv: false,
      ...ctx.audit(SETUP_DATE),
    });
  });
  ctx.add('paygrp', { _idnum: ctx.uuid(), recnum: TRADES.length + 1, grpnme: 'Office', payrt1: price(0), payrt2: price(0), payrt3: price(0), wkrcmp: 4, unnnum: null, cstcde: null, inactv: false, ...ctx.audit(SETUP_DATE) });

  const calcs: ReadonlyArray<readonly [number, string, number, number, string, number, number | null, number | null]> = [
    [CALC.federal, 'Federal income tax', 1, 4, '10', 0, A.fedWithholding, null],
    [CALC.socialSecurity, 'Social security', 1, 1, '6.2', 176100, A.ficaPayable, null],
    [CALC.medicare, 'Medicare', 1, 1, '1.45', 0, A.ficaPayable, null],
    [CALC.state, 'Oregon income tax', 2, 4, '4', 0, A.stateWithholding, null],
    [CALC.local, 'Statewide transit tax', 3, 1, '0.1', 0, A.stateWithholding, null],
    [CALC.union, 'Union dues', 4, 1, '1.5', 0, A.benefitsPayable, null],
    [CALC.retirement, '401(k) deferral', 4, 1, '3', 0, A.benefitsPayable, null],
    [CALC.health, 'Health plan (employee share)', 4, 3, '45', 0, A.benefitsPayable, A.employeeBenefits],
    [CALC.employerFica, 'Employer FICA', 6, 1, '7.65', 0, A.ficaPayable, A.payrollTaxes],
    [CALC.unemployment, 'FUTA and SUTA', 6, 1, '3', 0, A.unemploymentPayable, A.payrollTaxes],
    [CALC.workersComp, 'Workers compensation', 6, 1, '0', 0, A.workersCompPayable, A.workersComp],
  ];
  for (const [num, name, type, method, rate, maxwge, liab, exp] of calcs) {
    ctx.add('paycal', {
      _idnum: ctx.uuid(),
      recnum: num,
      calnme: name,
      caltyp: type,
      calmth: method,
      calrte: price(rate),
      maxwge: money(maxwge),
      maxamt: money(0),
      lblact: liab,
      expact: exp,
      vndnum: null,
      inactv: false,
      ...ctx.audit(SETUP_DATE),
    });
  }
  const banks: ReadonlyArray<readonly [number, string, number, string, number | null]> = [
    [1, 'Operating account', A.cashOperating, '4417', 20418],
    [2, 'Payroll account', A.cashPayroll, '8802', 700001],
    [3, 'Petty cash box', A.pettyCash, '', null],
  ];
  for (const [num, name, account, last4, next] of banks) {
    ctx.add('bnkact', {
      _idnum: ctx.uuid(),
      recnum: num,
      actnme: name,
      bnknme: num === 3 ? 'Office safe' : 'First Cascade Bank',
      lgract: account,
      actlst: last4 || null,
      rtenum: num === 3 ? null : '123006800',
      nxtchk: next,
      lstrec: null,
      lstbal: money(0),
      inactv: false,
      ...ctx.audit(SETUP_DATE),
    });
  }
  // Ledger budgets: a monthly plan for the income and expense accounts.
  const lb = ctx.rnd('ledger-budgets');
  for (const a of CHART) {
    if (a.type < ACT.operatingIncome || a.inactive) continue;
    const base = Math.round(budgetBase(a.number) * 0.55) * ctx.scale;
    if (!base) continue;
    for (let p = 1; p <= 12; p++) {
      const amount = new Dec(Math.round(base * (0.85 + lb.next() * 0.3))).times(a.type === ACT.operatingIncome || a.type === ACT.otherIncome ? -1 : 1);
      ctx.budgets.set(`${a.number}|${p}`, amount);
      ctx.add('lgrbdg', {
        _idnum: ctx.uuid(),
        recnum: ctx.books.recnum('lgrbdg'),
        lgract: a.number,
        postyr: FISCAL_YEAR,
        actprd: p,
        bdgamt: money(amount),
        revamt: money(p >= 7 ? amount.times('1.04').toDecimalPlaces(0) : amount),
        ntetxt: p === 7 ? 'Mid-year revision' : null,
        ...ctx.audit('2025-12-10'),
      });
    }
  }
}

function tradeWorkersComp(title: string): number {
  if (title === 'Concrete Finisher') return 2;
  if (title === 'Equipment Operator') return 3;
  if (title === 'Mechanic') return 6;
  if (title === 'Service Technician') return 5;
  return 1;
}

export { tradeWorkersComp };

/** Monthly budget of an income or expense account at scale 1 (whole dollars). */
function budgetBase(account: number): number {
  const table: Record<number, number> = {
    [A.contractIncome]: 520000,
    [A.serviceIncomeTaxable]: 14000,
    [A.serviceIncomeNonTaxable]: 9000,
    [A.equipmentRevenue]: 30000,
    [A.materialExpense]: 110000,
    [A.laborExpense]: 140000,
    [A.equipmentJobExpense]: 30000,
    [A.subcontractExpense]: 90000,
    [A.otherJobExpense]: 6000,
    [A.permitExpense]: 4000,
    [A.serviceCostOfGoods]: 12000,
    [A.fuel]: 6000,
    [A.equipmentRepairs]: 5000,
    [A.depreciation]: 16000,
    [A.shopLabor]: 5000,
    [A.officeSalaries]: 26000,
    [A.payrollTaxes]: 19000,
    [A.rent]: 8500,
    [A.utilities]: 2200,
    [A.insurance]: 7000,
    [A.officeSupplies]: 3500,
    [A.professionalFees]: 2500,
    [A.inventoryShrinkage]: 600,
    [A.workersComp]: 8000,
    [A.interestIncome]: 300,
    [A.interestExpense]: 2800,
  };
  return table[account] ?? 0;
}

export { VENDOR_KINDS };
