/**
 * Reference data the posting tests rely on, added to whatever database they run on (the seeded
 * demo company, or an empty one): its own accounts, vendors, jobs and cost codes with numbers
 * far above the seed's, and a known ledger setup (fiscal year = calendar year 2026, open period
 * 11, period derived from the document date, AP control and retainage payable accounts below).
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { Dec } from '../../src/storage/decimal';
import { dialectFor, engineOf } from '../../src/storage/dialect';
import { DATA_TOKEN_SQL } from '../../src/storage/data-change-log';
import { queryRows } from './invariants';

export const FX = {
  year: 2026,
  openPeriod: 11,
  /** A date in the open period. */
  openDate: '2026-11-14',
  /** A date in an earlier period (10 of 2026). */
  earlierDate: '2026-10-05',
  /** A date in a later period (12 of 2026): PERIOD_CLOSED. */
  laterDate: '2026-12-03',
  accounts: {
    cash: 99100,
    apControl: 99200,
    retainagePayable: 99210,
    wip: 99300,
    directExpense: 99500,
    overhead: 99600,
    equipmentExpense: 99700,
    inactive: 99900,
  },
  source: { journal: 990, inactive: 991, ap: 11 },
  vendor: { withDefaults: 99001, noDefaults: 99002, inactive: 99003, overheadDefault: 99004 },
  job: { open: 99001, closed: 99002, other: 99003 },
  phase: 1,
  costCode: '99.1',
  otherCostCode: '99.25',
  costType: { material: 1, subcontract: 4 },
  equipment: 99001,
} as const;

async function upsert(knex: Knex, table: string, key: Record<string, unknown>, row: Record<string, unknown>): Promise<void> {
  const existing = await knex(table).where(key).first();
  if (existing) await knex(table).where(key).update(row);
  else await knex(table).insert({ _idnum: randomUUID(), ...key, ...row });
}

export async function installPostingFixture(knex: Knex): Promise<void> {
  const dialect = dialectFor(engineOf(knex));
  const money = (v: string | number) => dialect.encodeDecimal(new Dec(v), 2);
  const code = (v: string) => dialect.encodeDecimal(new Dec(v), 3);
  const A = FX.accounts;
  const accounts: Array<[number, string, number, boolean]> = [
    [A.cash, 'Test cash', 1, false],
    [A.apControl, 'Test accounts payable', 5, false],
    [A.retainagePayable, 'Test retainage payable', 5, false],
    [A.wip, 'Test work in progress', 3, false],
    [A.directExpense, 'Test direct expense', 9, false],
    [A.overhead, 'Test overhead', 11, false],
    [A.equipmentExpense, 'Test equipment expense', 10, false],
    [A.inactive, 'Test inactive', 11, true],
  ];
  for (const [recnum, name, type, inactive] of accounts) {
    await upsert(knex, 'lgract', { recnum }, { lngnme: name, shtnme: name.slice(0, 15), acttyp: type, subtyp: 0, inactv: inactive });
  }
  await upsert(knex, 'source', { recnum: FX.source.journal }, { srcnme: 'Test journals', abbrvn: 'TSTJ', stdsrc: false, inactv: false });
  await upsert(knex, 'source', { recnum: FX.source.inactive }, { srcnme: 'Test inactive', abbrvn: 'TSTI', stdsrc: false, inactv: true });
  const ap = await knex('source').where({ recnum: FX.source.ap }).first();
  if (!ap) await upsert(knex, 'source', { recnum: FX.source.ap }, { srcnme: 'Payable Invoices', abbrvn: 'AP', stdsrc: true, inactv: false });
  for (const [recnum, name] of [
    [1, 'Material'],
    [2, 'Labor'],
    [3, 'Equipment'],
    [4, 'Subcontract'],
    [5, 'Other'],
  ] as const) {
    const existing = await knex('csttyp').where({ recnum }).first();
    if (!existing) await upsert(knex, 'csttyp', { recnum }, { typnme: name, abbrvn: name.slice(0, 3), preset: true, inactv: false });
    else await knex('csttyp').where({ recnum }).update({ inactv: false });
  }
  for (const [cc, name] of [
    [FX.costCode, 'Test pipe'],
    [FX.otherCostCode, 'Test fittings'],
  ] as const) {
    const existing = await knex('cstcde').where({ cstcde: code(cc) }).first();
    if (!existing) {
      const max = await knex('cstcde').max<{ m: number | null }>({ m: 'recnum' }).first();
      await knex('cstcde').insert({ _idnum: randomUUID(), recnum: Number(max?.m ?? 0) + 1, cstcde: code(cc), cdenme: name, inactv: false });
    }
  }
  await upsert(knex, 'actpay', { recnum: FX.vendor.withDefaults }, {
    vndnme: 'Test Pipe Supply',
    shtnme: 'TESTPIPE',
    dftact: A.directExpense,
    dftcde: code(FX.costCode),
    dfttyp: FX.costType.material,
    duedys: 30,
    inactv: false,
  });
  await upsert(knex, 'actpay', { recnum: FX.vendor.noDefaults }, { vndnme: 'Test No Defaults', shtnme: 'TESTNODEF', dftact: null, dftcde: null, dfttyp: null, duedys: 15, inactv: false });
  await upsert(knex, 'actpay', { recnum: FX.vendor.inactive }, { vndnme: 'Test Inactive Vendor', shtnme: 'TESTINACT', dftact: A.overhead, duedys: 30, inactv: true });
  await upsert(knex, 'actpay', { recnum: FX.vendor.overheadDefault }, { vndnme: 'Test Office Supply', shtnme: 'TESTOFFICE', dftact: A.overhead, duedys: 10, inactv: false });
  await upsert(knex, 'actrec', { recnum: FX.job.open }, { jobnme: 'Test job', shtnme: 'TESTJOB', status: 4, cntrct: money(100000), retpct: 0 });
  await upsert(knex, 'actrec', { recnum: FX.job.closed }, { jobnme: 'Test closed job', shtnme: 'TESTCLOSED', status: 6, cntrct: money(0), retpct: 0 });
  await upsert(knex, 'actrec', { recnum: FX.job.other }, { jobnme: 'Test other job', shtnme: 'TESTOTHER', status: 4, cntrct: money(0), retpct: 0 });
  for (const job of [FX.job.open, FX.job.other]) {
    const existing = await knex('jobphs').where({ jobnum: job, phsnum: FX.phase }).first();
    if (!existing) {
      const max = await knex('jobphs').max<{ m: number | null }>({ m: 'recnum' }).first();
      await knex('jobphs').insert({ _idnum: randomUUID(), recnum: Number(max?.m ?? 0) + 1, jobnum: job, phsnum: FX.phase, phsnme: 'Rough-in', status: 1, cntrct: money(0) });
    }
  }
  const eq = await knex('eqpmnt').where({ recnum: FX.equipment }).first();
  if (!eq) await knex('eqpmnt').insert({ _idnum: randomUUID(), recnum: FX.equipment, eqpnme: 'Test excavator', prccst: money(0), hrsmtr: dialect.encodeDecimal(new Dec(0), 2), status: 1 });

  const setup = {
    fscend: 12,
    curyer: FX.year,
    curprd: FX.openPeriod,
    prdplc: 2,
    apcact: A.apControl,
    rtpact: A.retainagePayable,
    wipact: A.wip,
    dexact: A.directExpense,
    eqpact: A.equipmentExpense,
  };
  const existingSetup = await knex('lgrstp').orderBy('recnum').first();
  if (existingSetup) await knex('lgrstp').where({ recnum: existingSetup.recnum }).update(setup);
  else await knex('lgrstp').insert({ _idnum: randomUUID(), recnum: 1, ...setup });

  const anyPeriod = await knex('fscprd').first('recnum');
  if (!anyPeriod) {
    let recnum = 1;
    for (const year of [FX.year - 1, FX.year]) {
      for (let p = 0; p <= 12; p += 1) {
        const last = new Date(Date.UTC(year, p, 0)).getUTCDate();
        await knex('fscprd').insert({
          _idnum: randomUUID(),
          recnum: recnum++,
          postyr: year,
          actprd: p,
          prdnme: `P${p} ${year}`,
          sttdte: p === 0 ? `${year}-01-01` : `${year}-${String(p).padStart(2, '0')}-01`,
          enddte: p === 0 ? `${year}-12-31` : `${year}-${String(p).padStart(2, '0')}-${String(last).padStart(2, '0')}`,
          status: year < FX.year ? 2 : 1,
        });
      }
    }
  }
}

/** Debit and credit totals of an account in a period, straight from lgrbal (0 when no row). */
export async function balanceOf(knex: Knex, account: number, year: number, period: number): Promise<{ debit: string; credit: string }> {
  const dialect = dialectFor(engineOf(knex));
  const row = await knex('lgrbal').where({ lgract: account, postyr: year, actprd: period }).first();
  if (!row) return { debit: '0.00', credit: '0.00' };
  return { debit: dialect.decodeDecimal(row.dbttot, 2)!.toFixed(2), credit: dialect.decodeDecimal(row.crdtot, 2)!.toFixed(2) };
}

/** Sum of debits and credits over every balance row: the books balance when they are equal. */
export async function booksBalance(knex: Knex): Promise<{ debit: string; credit: string }> {
  const dialect = dialectFor(engineOf(knex));
  const rows = await knex('lgrbal').select('dbttot', 'crdtot');
  let d = new Dec(0);
  let c = new Dec(0);
  for (const r of rows) {
    d = d.plus(dialect.decodeDecimal(r.dbttot, 2)!);
    c = c.plus(dialect.decodeDecimal(r.crdtot, 2)!);
  }
  return { debit: d.toFixed(2), credit: c.toFixed(2) };
}

/**
 * Row counts of `tables` and the data change counter (src/storage/data-change-log.ts: moved by
 * every transaction that commits book data, which change events are detected from): a refused
 * posting moves none of them.
 */
export async function bookFootprint(knex: Knex, tables: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of tables) out[table] = await countRows(knex, table);
  const [token] = await queryRows<{ n: unknown }>(knex, DATA_TOKEN_SQL);
  out.dataChangeToken = Number(token!.n);
  return out;
}

export async function countRows(knex: Knex, table: string, where: Record<string, unknown> = {}): Promise<number> {
  const row = await knex(table).where(where).count<{ n: number | string }[]>({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/** A balanced 3-line journal. */
export function journal(transactionNumber: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    transactionNumber,
    transactionDate: FX.openDate,
    enteredDate: FX.openDate,
    description: 'Test journal',
    sourceNumber: FX.source.journal,
    lines: [
      { lineNumber: 1, ledgerAccount: FX.accounts.overhead, description: 'Rent', debitAmount: 100.1 },
      { lineNumber: 2, ledgerAccount: FX.accounts.directExpense, description: 'Material', debitAmount: 20.05 },
      { lineNumber: 3, ledgerAccount: FX.accounts.cash, description: 'Paid', creditAmount: 120.15 },
    ],
    ...overrides,
  };
}

/** An Open AP invoice with `lines` job lines (amount 10.00 + line number cents each, tax 1.00 on the first). */
export function apInvoice(invoiceNumber: string, lineCount = 2, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const lines = Array.from({ length: lineCount }, (_, i) => ({
    lineNumber: i + 1,
    description: `Line ${i + 1}`,
    costCode: Number(FX.costCode),
    costType: FX.costType.material,
    quantity: 2,
    unitPrice: 5 + (i + 1) / 200,
    extendedTotal: 10 + (i + 1) / 100,
    ...(i === 0 ? { salesTax: 1 } : {}),
  }));
  const extended = lines.reduce((s, l) => s.plus(new Dec(l.extendedTotal)), new Dec(0));
  return {
    vendorNumber: FX.vendor.withDefaults,
    invoiceNumber,
    invoiceDate: FX.openDate,
    description: 'Test invoice',
    jobNumber: FX.job.open,
    phaseNumber: FX.phase,
    status: 1,
    invoiceTotal: Number(extended.plus(1).toFixed(2)),
    salesTax: 1,
    lines,
    ...overrides,
  };
}

/** A Closed job order of the seeded demo company (job 2607, lines on direct expense 5010): the model of openSeedJobOrder. */
export const SEED_JOB_PO_MODEL = 'PO26-000060';

/**
 * A new Open job order on the seeded demo company, modelled on SEED_JOB_PO_MODEL (its vendor, job
 * and lines): 10 ordered at 12.50 on every line, nothing received; line 2 optionally part cancelled.
 */
export async function openSeedJobOrder(knex: Knex, orderNumber: string, options: { orderType?: number; cancelLine2?: number } = {}): Promise<void> {
  const dialect = dialectFor(engineOf(knex));
  const model = await knex('pchord').where({ ordnum: SEED_JOB_PO_MODEL }).first();
  if (!model) throw new Error(`openSeedJobOrder needs the seeded demo company (purchase order ${SEED_JOB_PO_MODEL})`);
  const lines = await knex('pcorln').where({ _idref: model._idnum }).orderBy('linnum');
  const max = await knex('pchord').max<{ m: number }>({ m: 'recnum' }).first();
  const id = randomUUID();
  const money = (v: string) => dialect.encodeDecimal(new Dec(v), 2);
  const q4 = (v: string | number) => dialect.encodeDecimal(new Dec(v), 4);
  await knex('pchord').insert({
    _idnum: id,
    recnum: Number(max!.m) + 1,
    ordnum: orderNumber,
    orddte: '2026-11-02',
    vndnum: model.vndnum,
    jobnum: model.jobnum,
    dscrpt: 'Test job order',
    ordtyp: options.orderType ?? 1,
    ordttl: money(String(125 * lines.length)),
    rcvttl: money('0'),
    taxamt: money('0'),
    status: 1,
  });
  await knex('pcorln').insert(
    lines.map((l: any) => ({
      _idnum: randomUUID(),
      _idref: id,
      linnum: l.linnum,
      prtnum: l.prtnum,
      dscrpt: l.dscrpt,
      lgract: l.lgract,
      cstcde: l.cstcde,
      csttyp: l.csttyp,
      untdsc: l.untdsc,
      linqty: q4(10),
      linprc: dialect.encodeDecimal(new Dec('12.5'), 4),
      extttl: money('125'),
      rcvdte: q4(0),
      cancel: q4(Number(l.linnum) === 2 ? (options.cancelLine2 ?? 0) : 0),
    })),
  );
}

/**
 * A Shipped consumption on the seeded demo company: parts 72 and 187 from the main warehouse
 * (location 1) on job 2601 phase 3, cost code 3, cost type 1 (stock, job costs and a journal).
 */
export function seedAllocationToJob(allocationNumber: string, quantities: readonly [number, number] = [1, 1], overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    allocationNumber,
    allocationDate: FX.openDate,
    status: 4,
    purpose: 2,
    fromLocation: 1,
    jobNumber: 2601,
    phaseNumber: 3,
    lines: [
      { lineNumber: 1, partNumber: 72, quantity: quantities[0], costCode: 3, costType: 1 },
      { lineNumber: 2, partNumber: 187, quantity: quantities[1], costCode: 3, costType: 1 },
    ],
    ...overrides,
  };
}
