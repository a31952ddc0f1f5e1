/**
 * The writes bench/posting.ts measures: one entry per write route. An entry says how to build
 * the n-th request body, whether an Idempotency-Key is optional or required (required: "without
 * a key" is not measured), and the rows the write puts in the database, written by a raw knex
 * transaction (the floor the HTTP path is compared with: no checks, no reads, no number
 * allocation, no HTTP). A later write adds one entry here.
 *
 * The raw transactions write the same rows as the service, with record numbers far above
 * anything the service allocates (the service's counters are synced with max(recnum) once, during
 * the warm-up, before any raw row exists).
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { FX, apInvoice, journal } from '../test/support/posting-fixture';
import { postJson } from '../test/support/server-process';
import { Dec } from '../src/storage/decimal';
import { dialectFor, engineOf } from '../src/storage/dialect';

export interface BenchContext {
  knex: Knex;
  port: number;
  apiKey: string;
  runId: string;
}

export interface Scenario {
  /** Name in BENCH_WRITES and in the results. */
  name: string;
  path: string;
  /** `optional`: measured without and with a key; `required`: with a key only. */
  key: 'optional' | 'required';
  /** Rows one posting writes (for the README). */
  rows: string;
  /** Run once before the warm-up (reference rows the bodies need, stock to take from...). */
  setup?(ctx: BenchContext): Promise<void>;
  /** The n-th request body (`tag` is unique in the run: document numbers). */
  body(ctx: BenchContext, n: number, tag: string): unknown;
  /** One document's rows in `trx`; `recnum` is unique in the run (far above the service's numbers). */
  raw(trx: Knex.Transaction, ctx: BenchContext, recnum: number): Promise<void>;
}

const money = (knex: Knex, v: string | Dec) => dialectFor(engineOf(knex)).encodeDecimal(new Dec(v), 2);
const scaled = (knex: Knex, v: string | number | Dec, scale: number) => dialectFor(engineOf(knex)).encodeDecimal(new Dec(v), scale);
/** A record number in a table the raw loop fills several rows of per document (job costs, histories...). */
const subRecnum = (recnum: number, i: number) => 1_000_000_000 + (recnum - 50_000_000) * 10 + i;

async function addToBalances(trx: Knex.Transaction, changes: ReadonlyArray<readonly [number, string, string]>): Promise<void> {
  for (const [account, d, c] of changes) {
    await trx('lgrbal')
      .where({ lgract: account, postyr: FX.year, actprd: FX.openPeriod })
      .update({ dbttot: trx.raw('dbttot + ?', [money(trx, d)]), crdtot: trx.raw('crdtot + ?', [money(trx, c)]) });
  }
}

async function rawJournal(trx: Knex.Transaction, runId: string, recnum: number, source: number, lines: ReadonlyArray<readonly [number, string, string, number | null]>): Promise<void> {
  const id = randomUUID();
  const total = lines.reduce((s, l) => s.plus(l[1]), new Dec(0)).toFixed(2);
  await trx('lgrtrn').insert({ _idnum: id, recnum, trnnum: `RAW-${runId}-${recnum}`, trndte: FX.openDate, dscrpt: 'raw', srcnum: source, status: 1, dbttot: money(trx, total), crdtot: money(trx, total), entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year });
  await trx('lgtnln').insert(lines.map(([account, d, c, job], i) => ({ _idnum: randomUUID(), _idref: id, linnum: i + 1, lgract: account, dscrpt: '', dbtamt: money(trx, d), crdamt: money(trx, c), jobnum: job })));
}

// ---------------------------------------------------------------------------------------------
// Journals and AP invoices (the rows and bodies of the first version of the bench: unchanged).

const journals: Scenario = {
  name: 'journals',
  path: '/api/v3/ledger-transactions',
  key: 'optional',
  rows: 'header, 3 lines, 3 balance UPDATEs',
  body: (_ctx, _n, tag) => journal(tag),
  async raw(trx, ctx, recnum) {
    const id = randomUUID();
    const lines: Array<[number, string, string]> = [
      [FX.accounts.overhead, '100.10', '0'],
      [FX.accounts.directExpense, '20.05', '0'],
      [FX.accounts.cash, '0', '120.15'],
    ];
    await trx('lgrtrn').insert({ _idnum: id, recnum, trnnum: `RAW-${ctx.runId}-${recnum}`, trndte: FX.openDate, dscrpt: 'raw', srcnum: FX.source.journal, status: 1, dbttot: money(trx, '120.15'), crdtot: money(trx, '120.15'), entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year });
    await trx('lgtnln').insert(lines.map(([account, d, c], i) => ({ _idnum: randomUUID(), _idref: id, linnum: i + 1, lgract: account, dscrpt: '', dbtamt: money(trx, d), crdamt: money(trx, c) })));
    await addToBalances(trx, lines);
  },
};

const invoices: Scenario = {
  name: 'invoices',
  path: '/api/v3/ap-invoices',
  key: 'optional',
  rows: 'invoice, 10 lines, journal + 11 lines, 10 job costs, 2 balance UPDATEs',
  body: (_ctx, _n, tag) => apInvoice(tag, 10),
  async raw(trx, ctx, recnum) {
    const inv = randomUUID();
    await trx('acpinv').insert({ _idnum: inv, recnum, vndnum: FX.vendor.withDefaults, invnum: `RAW-${ctx.runId}-${recnum}`, invdte: FX.openDate, duedte: FX.openDate, dscrpt: 'raw', jobnum: FX.job.open, phsnum: FX.phase, invttl: money(trx, '101.55'), amtpad: money(trx, '0'), invbal: money(trx, '101.55'), retain: money(trx, '0'), taxamt: money(trx, '1'), status: 1, entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year, lgrrec: recnum });
    await trx('apivln').insert(Array.from({ length: 10 }, (_, i) => ({ _idnum: randomUUID(), _idref: inv, linnum: i + 1, lgract: FX.accounts.directExpense, dscrpt: '', jobnum: FX.job.open, phsnum: FX.phase, cstcde: scaled(trx, FX.costCode, 3), csttyp: 1, linqty: scaled(trx, 2, 4), linprc: scaled(trx, 5, 4), extttl: money(trx, '10.05'), taxamt: money(trx, '0') })));
    await rawJournal(trx, ctx.runId, recnum, 11, Array.from({ length: 11 }, (_, i) => (i < 10 ? ([FX.accounts.directExpense, '10.15', '0', FX.job.open] as const) : ([FX.accounts.apControl, '0', '101.55', null] as const))).map((l) => [...l] as [number, string, string, number | null]));
    await trx('jobcst').insert(Array.from({ length: 10 }, (_, i) => ({ _idnum: randomUUID(), recnum: subRecnum(recnum, i), jobnum: FX.job.open, phsnum: FX.phase, cstcde: scaled(trx, FX.costCode, 3), csttyp: 1, trndte: FX.openDate, dscrpt: '', srcnum: 11, docnum: 'RAW', srcrec: recnum, srclin: i + 1, vndnum: FX.vendor.withDefaults, cstamt: money(trx, '10.15'), csthrs: scaled(trx, 0, 2), status: 1, actprd: FX.openPeriod, postyr: FX.year })));
    await addToBalances(trx, [
      [FX.accounts.directExpense, '101.55', '0'],
      [FX.accounts.apControl, '0', '101.55'],
    ]);
  },
};

// ---------------------------------------------------------------------------------------------
// Inventory allocations: a Shipped consumption on a job, 2 lines of 1 unit each, out of the
// seed's main warehouse. 1,000,000 of each part is received first (through the service: a stock
// order at the part's average cost, so the average does not move), so stock never runs out.

/** Seeded demo company: location 1 (Main warehouse, inventory account 1210), job 2601 phase 3, direct expense 5010. */
const SEED = { warehouse: 1, inventoryAccount: 1210, directExpense: 5010, apControl: 2010, job: 2601, phase: 3, stockVendor: 9 } as const;
/** Two parts stocked at the main warehouse, with their seeded average cost (unit cost of the top-up). */
const ALLOCATED_PARTS = [
  { part: 72, average: '36.789', value: '36.79' },
  { part: 187, average: '16.0671', value: '16.07' },
] as const;
const TOP_UP_QUANTITY = 1_000_000;

async function insertOrder(knex: Knex, ordnum: string, header: Record<string, unknown>, lines: Array<Record<string, unknown>>): Promise<void> {
  const max = await knex('pchord').max<{ m: number }>({ m: 'recnum' }).first();
  const id = randomUUID();
  await knex('pchord').insert({ _idnum: id, recnum: Number(max!.m) + 1, ordnum, orddte: '2026-11-02', rcvttl: money(knex, '0'), taxamt: money(knex, '0'), status: 1, ...header });
  await knex('pcorln').insert(lines.map((l, i) => ({ _idnum: randomUUID(), _idref: id, linnum: i + 1, rcvdte: scaled(knex, 0, 4), cancel: scaled(knex, 0, 4), ...l })));
}

const allocations: Scenario = {
  name: 'allocations',
  path: '/api/v3/inventory-allocations',
  key: 'optional',
  rows: 'header, 2 lines, history counter UPDATE + 2 stock histories, 2 stock UPDATEs, journal + 3 lines, 2 balance UPDATEs, 2 job costs, 2 inventory-consumed rows',
  async setup(ctx) {
    const { knex } = ctx;
    const ordnum = `BSTK-${ctx.runId}`;
    const lines = ALLOCATED_PARTS.map((p) => ({ prtnum: p.part, dscrpt: `Bench stock ${p.part}`, lgract: SEED.inventoryAccount, untdsc: 'EA', linqty: scaled(knex, TOP_UP_QUANTITY, 4), linprc: scaled(knex, p.average, 4), extttl: money(knex, new Dec(p.average).times(TOP_UP_QUANTITY).toFixed(2)) }));
    await insertOrder(knex, ordnum, { vndnum: SEED.stockVendor, dscrpt: 'Bench stock', ordtyp: 2, locnum: SEED.warehouse, ordttl: money(knex, ALLOCATED_PARTS.reduce((s, p) => s.plus(new Dec(p.average).times(TOP_UP_QUANTITY)), new Dec(0)).toFixed(2)) }, lines);
    const res = await postJson(ctx.port, '/api/v3/purchase-order-receipts', { orderNumber: ordnum, receiptDate: FX.openDate, lines: ALLOCATED_PARTS.map((_, i) => ({ lineNumber: i + 1, updateQuantity: TOP_UP_QUANTITY })) }, { 'x-api-key': ctx.apiKey, 'Idempotency-Key': `bench-stock-${ctx.runId}` });
    if (res.status !== 200) throw new Error(`stock top-up: ${res.status} ${JSON.stringify(res.body)}`);
  },
  body: (_ctx, _n, tag) => ({
    allocationNumber: tag,
    allocationDate: FX.openDate,
    description: 'Bench allocation',
    status: 4,
    purpose: 2,
    fromLocation: SEED.warehouse,
    jobNumber: SEED.job,
    phaseNumber: SEED.phase,
    lines: ALLOCATED_PARTS.map((p, i) => ({ lineNumber: i + 1, partNumber: p.part, quantity: 1, costCode: 3, costType: 1 })),
  }),
  async raw(trx, ctx, recnum) {
    const id = randomUUID();
    const total = ALLOCATED_PARTS.reduce((s, p) => s.plus(p.value), new Dec(0)).toFixed(2);
    const tag = `RAW-${ctx.runId}-${recnum}`;
    await trx('invalc').insert({ _idnum: id, recnum, alcnum: tag, trndte: FX.openDate, dscrpt: 'raw', prpose: 2, frmloc: SEED.warehouse, tolocn: null, jobnum: SEED.job, phsnum: SEED.phase, ttlcst: money(trx, total), status: 4, entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year, lgrrec: recnum });
    await trx('invaln').insert(ALLOCATED_PARTS.map((p, i) => ({ _idnum: randomUUID(), _idref: id, linnum: i + 1, prtnum: p.part, dscrpt: '', alcqty: scaled(trx, 1, 4), untcst: scaled(trx, p.average, 4), extcst: money(trx, p.value), cstcde: scaled(trx, 3, 3), csttyp: 1 })));
    // History numbers come from the counter inside the transaction, as the service takes them
    // (it re-syncs that counter with max(recnum) on every posting, so a number range of our own
    // would be overtaken).
    const [counter] = await trx('numseq').where({ name: 'invhst' }).update({ next_value: trx.raw('next_value + ?', [ALLOCATED_PARTS.length]) }, ['next_value']);
    const firstHistory = Number(counter.next_value) - ALLOCATED_PARTS.length;
    await trx('invhst').insert(ALLOCATED_PARTS.map((p, i) => ({ _idnum: randomUUID(), recnum: firstHistory + i, prtnum: p.part, locnum: SEED.warehouse, trndte: FX.openDate, mvttyp: 4, hstqty: scaled(trx, -1, 4), untcst: scaled(trx, p.average, 4), extcst: money(trx, `-${p.value}`), balqty: scaled(trx, 0, 4), srcnum: 23, srcrec: recnum, entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year })));
    for (const p of ALLOCATED_PARTS) {
      await trx('invqty')
        .where({ prtnum: p.part, locnum: SEED.warehouse })
        .update({ qtyohn: trx.raw('qtyohn - ?', [scaled(trx, 1, 4)]), qtyavl: trx.raw('qtyavl - ?', [scaled(trx, 1, 4)]) });
    }
    await rawJournal(trx, ctx.runId, recnum, 23, [...ALLOCATED_PARTS.map((p) => [SEED.directExpense, p.value, '0', SEED.job] as [number, string, string, number | null]), [SEED.inventoryAccount, '0', total, null]]);
    await addToBalances(trx, [
      [SEED.directExpense, total, '0'],
      [SEED.inventoryAccount, '0', total],
    ]);
    await trx('jobcst').insert(ALLOCATED_PARTS.map((p, i) => ({ _idnum: randomUUID(), recnum: subRecnum(recnum, i), jobnum: SEED.job, phsnum: SEED.phase, cstcde: scaled(trx, 3, 3), csttyp: 1, trndte: FX.openDate, dscrpt: '', srcnum: 23, docnum: tag, srcrec: recnum, srclin: i + 1, cstamt: money(trx, p.value), csthrs: scaled(trx, 0, 2), status: 1, actprd: FX.openPeriod, postyr: FX.year })));
    await trx('invcsm').insert(ALLOCATED_PARTS.map((p, i) => ({ _idnum: randomUUID(), recnum: subRecnum(recnum, i), prtnum: p.part, locnum: SEED.warehouse, jobnum: SEED.job, phsnum: SEED.phase, cstcde: scaled(trx, 3, 3), csttyp: 1, trndte: FX.openDate, csmqty: scaled(trx, 1, 4), untcst: scaled(trx, p.average, 4), extcst: money(trx, p.value), alcrec: recnum, jcsrec: subRecnum(recnum, i), entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year })));
  },
};

// ---------------------------------------------------------------------------------------------
// PO receipts: 1 unit on each of the 2 lines of an Open job order (job 2607, direct expense
// 5010, 12.50 a unit: a 25.00 Review invoice that posts, 2 job costs). Orders of 10,000,000 units a
// line are made for the run, several of them, used in turn: receipts of one order are
// serialised (a lock on the order number), and integrators receive different orders at once.

const RECEIPT_ORDERS = 8;
const ORDERED_QUANTITY = 10_000_000;
/** Lines of the seed's job order PO26-000060: cost codes 5.2 and 2.5, cost type 1, on 5010. */
const RECEIPT_LINES = [
  { costCode: '5.2', description: 'Damper 1 in Insulated' },
  { costCode: '2.5', description: 'Concrete Anchor 16d Stainless' },
] as const;
const RECEIPT_JOB = 2607;
const RECEIPT_VENDOR = 15;
const receiptOrder = (ctx: BenchContext, n: number) => `BPO-${ctx.runId}-${n % RECEIPT_ORDERS}`;
/** pchord._idnum of each bench order (the raw loop reads nothing). */
const receiptOrderIds = new Map<string, string>();

const receipts: Scenario = {
  name: 'receipts',
  path: '/api/v3/purchase-order-receipts',
  key: 'required',
  rows: '2 order-line UPDATEs, order UPDATE, invoice + 2 lines, journal + 3 lines, 2 balance UPDATEs, 2 job costs',
  async setup(ctx) {
    const { knex } = ctx;
    for (let i = 0; i < RECEIPT_ORDERS; i += 1) {
      await insertOrder(
        knex,
        `BPO-${ctx.runId}-${i}`,
        { vndnum: RECEIPT_VENDOR, jobnum: RECEIPT_JOB, dscrpt: 'Bench job order', ordtyp: 1, ordttl: money(knex, new Dec(ORDERED_QUANTITY).times('12.5').times(RECEIPT_LINES.length).toFixed(2)) },
        RECEIPT_LINES.map((l) => ({ prtnum: null, dscrpt: l.description, lgract: SEED.directExpense, cstcde: scaled(knex, l.costCode, 3), csttyp: 1, untdsc: 'EA', linqty: scaled(knex, ORDERED_QUANTITY, 4), linprc: scaled(knex, '12.5', 4), extttl: money(knex, new Dec(ORDERED_QUANTITY).times('12.5').toFixed(2)) })),
      );
      const ordnum = `BPO-${ctx.runId}-${i}`;
      receiptOrderIds.set(ordnum, String((await knex('pchord').where({ ordnum }).first('_idnum'))._idnum));
    }
  },
  body: (ctx, n) => ({ orderNumber: receiptOrder(ctx, n), receiptDate: FX.openDate, lines: RECEIPT_LINES.map((_, i) => ({ lineNumber: i + 1, updateQuantity: 1 })) }),
  async raw(trx, ctx, recnum) {
    const order = { _idnum: receiptOrderIds.get(receiptOrder(ctx, recnum))! };
    const one = scaled(trx, 1, 4);
    for (let i = 0; i < RECEIPT_LINES.length; i += 1) {
      await trx('pcorln').where({ _idref: order._idnum, linnum: i + 1 }).update({ rcvdte: trx.raw('rcvdte + ?', [one]) });
    }
    await trx('pchord').where({ _idnum: order._idnum }).update({ rcvttl: trx.raw('rcvttl + ?', [money(trx, '25')]), status: 3 });
    const inv = randomUUID();
    const tag = `RAW-${ctx.runId}-${recnum}`.slice(-20);
    await trx('acpinv').insert({ _idnum: inv, recnum, vndnum: RECEIPT_VENDOR, invnum: tag, invdte: FX.openDate, duedte: FX.openDate, dscrpt: 'raw', jobnum: RECEIPT_JOB, ordnum: receiptOrder(ctx, recnum), invttl: money(trx, '25'), amtpad: money(trx, '0'), invbal: money(trx, '25'), retain: money(trx, '0'), taxamt: money(trx, '0'), status: 2, entdte: FX.openDate, usrnme: 'raw', actprd: FX.openPeriod, postyr: FX.year, lgrrec: recnum });
    await trx('apivln').insert(RECEIPT_LINES.map((l, i) => ({ _idnum: randomUUID(), _idref: inv, linnum: i + 1, lgract: SEED.directExpense, dscrpt: l.description, jobnum: RECEIPT_JOB, cstcde: scaled(trx, l.costCode, 3), csttyp: 1, linqty: one, linprc: scaled(trx, '12.5', 4), extttl: money(trx, '12.5'), taxamt: money(trx, '0') })));
    await rawJournal(trx, ctx.runId, recnum, 13, [
      [SEED.directExpense, '12.50', '0', RECEIPT_JOB],
      [SEED.directExpense, '12.50', '0', RECEIPT_JOB],
      [SEED.apControl, '0', '25.00', null],
    ]);
    await addToBalances(trx, [
      [SEED.directExpense, '25', '0'],
      [SEED.apControl, '0', '25'],
    ]);
    await trx('jobcst').insert(RECEIPT_LINES.map((l, i) => ({ _idnum: randomUUID(), recnum: subRecnum(recnum, i), jobnum: RECEIPT_JOB, phsnum: null, cstcde: scaled(trx, l.costCode, 3), csttyp: 1, trndte: FX.openDate, dscrpt: '', srcnum: 13, docnum: tag, srcrec: recnum, srclin: i + 1, vndnum: RECEIPT_VENDOR, cstamt: money(trx, '12.5'), csthrs: scaled(trx, 0, 2), status: 1, actprd: FX.openPeriod, postyr: FX.year })));
  },
};

export const SCENARIOS: readonly Scenario[] = [journals, invoices, allocations, receipts];
