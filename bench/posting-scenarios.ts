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
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { FX, apInvoice, journal } from '../test/support/posting-fixture';
import { postJson } from '../test/support/server-process';
import { Dec } from '../src/storage/decimal';
import { dialectFor, engineOf } from '../src/storage/dialect';
import { toDbTime } from '../src/storage/db-time';

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
  /**
   * What the raw loop writes before the transaction of document `recnum`, on its own (a write
   * whose key is required: the idempotency record's claim, committed before the posting as the
   * service commits it). Every raw loop calls it when present (bench/posting.ts, posting-engine.ts).
   */
  rawBefore?(knex: Knex, ctx: BenchContext, recnum: number): Promise<void>;
}

/** One raw document: `rawBefore` (if any) on the pool, then `raw` in one transaction. */
export async function rawDocument(knex: Knex, scenario: Scenario, ctx: BenchContext, recnum: number): Promise<void> {
  await scenario.rawBefore?.(knex, ctx, recnum);
  await knex.transaction((trx) => scenario.raw(trx, ctx, recnum));
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

// The Idempotency-Key is required on receipts, so every receipt the service posts writes an
// idempotency record: its claim (an INSERT committed on its own, before the posting: the spec's
// "in flight" state that a concurrent duplicate sees) and its completion (an UPDATE storing the
// answer, in the posting's transaction). The raw loop writes that record the same way: rows the
// spec requires, not checks. Its answer is one the service stored (the same size), read once.

/** A completed idempotency record's stored answer (a receipt's), read once from the bench database. */
let storedAnswer: { status_code: number; response_headers: string; response_body: string } | undefined;
/** The claim's id (the attempt token) of each raw receipt, from rawBefore to raw. */
const rawClaims = new Map<number, string>();
/** The API key the raw records belong to (idmkey.api_key_id references apikey): any key of the bench database. */
let rawScope: string | undefined;

async function answerOfAReceipt(knex: Knex): Promise<NonNullable<typeof storedAnswer>> {
  if (!storedAnswer) {
    const row = await knex('idmkey').where({ state: 'completed', status_code: 200 }).whereLike('response_body', '%"invoiceRecordNumber"%').orderBy('created_at', 'desc').first('status_code', 'response_headers', 'response_body');
    if (!row) throw new Error('receipts: no receipt answer stored yet (post one through the service before the raw loop)');
    storedAnswer = { status_code: Number(row.status_code), response_headers: String(row.response_headers), response_body: String(row.response_body) };
  }
  return storedAnswer;
}

const receipts: Scenario = {
  name: 'receipts',
  path: '/api/v3/purchase-order-receipts',
  key: 'required',
  rows: '2 order-line UPDATEs, order UPDATE, invoice + 2 lines, journal + 3 lines, 2 balance UPDATEs, 2 job costs; the idempotency record (key required): its claim INSERT committed before the posting, its completion UPDATE with the answer inside (the raw loop writes both too)',
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
  async rawBefore(knex, ctx, recnum) {
    await answerOfAReceipt(knex);
    rawScope ??= String((await knex('apikey').orderBy('created_at').first('id'))?.id ?? '');
    if (!rawScope) throw new Error('receipts: no API key in the bench database for the raw idempotency records');
    const engine = engineOf(knex);
    const now = new Date();
    const id = randomUUID();
    rawClaims.set(recnum, id);
    await knex('idmkey')
      .insert({
        id,
        api_key_id: rawScope,
        idem_key: `raw-${ctx.runId}-${recnum}`,
        fingerprint: createHash('sha256').update(`raw ${recnum}`).digest('hex'),
        state: 'in_flight',
        created_at: toDbTime(engine, now),
        updated_at: toDbTime(engine, now),
        expires_at: toDbTime(engine, new Date(now.getTime() + 24 * 3_600_000)),
        locked_until: toDbTime(engine, new Date(now.getTime() + 60_000)),
        owner_instance: null,
        owner_boot: null,
      })
      .onConflict(['api_key_id', 'idem_key'])
      .ignore();
  },
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
    const id = rawClaims.get(recnum);
    if (id) {
      rawClaims.delete(recnum);
      const answer = storedAnswer!;
      await trx('idmkey')
        .where({ id })
        .whereIn('state', ['in_flight', 'unknown'])
        .update({ state: 'completed', status_code: answer.status_code, response_headers: answer.response_headers, response_body: answer.response_body, updated_at: toDbTime(engineOf(trx as unknown as Knex), new Date()), locked_until: null });
    }
  },
};

// ---------------------------------------------------------------------------------------------
// Payroll records and service work orders post once each: the setup copies a seeded document
// (with its lines) many times under new record numbers, and each request posts one copy. The
// raw loop writes the rows one posting wrote: the setup posts one copy through the service and
// keeps its journal, lines and cost rows as a template (the values stay encoded for the engine);
// the document UPDATE goes to a small pool of copies of its own, in turn.

/** Copies for the HTTP requests (each posts one) and for the raw loop's document UPDATEs. */
const DOCUMENT_COPIES = Number(process.env.BENCH_DOCUMENT_COPIES ?? 20_000);
const RAW_POOL = 50;
const COPY_BASE = 2_000_000;
const INSERT_CHUNK = 30;

async function insertInChunks(trx: Knex.Transaction, table: string, rows: Array<Record<string, unknown>>): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) await trx(table).insert(rows.slice(i, i + INSERT_CHUNK));
}

/** `count` copies of a header row and its lines, record numbers base, base + 1, ... */
async function copyDocument(knex: Knex, header: string, lines: string, source: Record<string, any>, base: number, count: number, change: (recnum: number) => Record<string, unknown>): Promise<void> {
  const sourceLines: Array<Record<string, any>> = await knex(lines).where({ _idref: source._idnum });
  await knex.transaction(async (trx) => {
    for (let start = 0; start < count; start += 1000) {
      const heads: Array<Record<string, unknown>> = [];
      const children: Array<Record<string, unknown>> = [];
      for (let i = start; i < Math.min(count, start + 1000); i += 1) {
        const id = randomUUID();
        heads.push({ ...source, _idnum: id, recnum: base + i, ...change(base + i) });
        for (const l of sourceLines) children.push({ ...l, _idnum: randomUUID(), _idref: id });
      }
      await insertInChunks(trx, header, heads);
      await insertInChunks(trx, lines, children);
    }
  });
}

/** Like subRecnum, for up to 40 rows per document (a payroll record has 15 job timecard lines), in a range of its own. */
const wideSubRecnum = (recnum: number, i: number) => {
  if (i >= 40) throw new Error('wideSubRecnum: more than 40 rows per document');
  return 1_500_000_000 + (recnum - 50_000_000) * 40 + i;
};

/** The rows one posting wrote: journal header and lines, job costs, equipment costs. */
interface PostedTemplate {
  journal: Record<string, any>;
  lines: Array<Record<string, any>>;
  jobCosts: Array<Record<string, any>>;
  equipmentCosts: Array<Record<string, any>>;
  /** Debit and credit per account (encoded), as the service adds them to lgrbal: one row each. */
  balances: Array<{ account: number; debit: ReturnType<typeof money>; credit: ReturnType<typeof money> }>;
}

async function templateOf(knex: Knex, ledgerRecord: number, source: number, documentRecord: number): Promise<PostedTemplate> {
  const journal = await knex('lgrtrn').where({ recnum: ledgerRecord }).first();
  const lines: Array<Record<string, any>> = await knex('lgtnln').where({ _idref: journal._idnum }).orderBy('linnum');
  const dialect = dialectFor(engineOf(knex));
  const sums = new Map<number, { debit: Dec; credit: Dec }>();
  for (const l of lines) {
    const s = sums.get(Number(l.lgract)) ?? { debit: new Dec(0), credit: new Dec(0) };
    s.debit = s.debit.plus(dialect.decodeDecimal(l.dbtamt, 2) ?? new Dec(0));
    s.credit = s.credit.plus(dialect.decodeDecimal(l.crdamt, 2) ?? new Dec(0));
    sums.set(Number(l.lgract), s);
  }
  return {
    journal,
    lines,
    balances: [...sums].map(([account, s]) => ({ account, debit: money(knex, s.debit), credit: money(knex, s.credit) })),
    jobCosts: await knex('jobcst').where({ srcnum: source, srcrec: documentRecord }).orderBy('recnum'),
    equipmentCosts: await knex('eqpcst').where({ srcnum: source, srcrec: documentRecord }).orderBy('recnum'),
  };
}

/** The template's rows again under `recnum` (journal) and sub-numbers (costs), balances added per account. */
async function rawFromTemplate(trx: Knex.Transaction, t: PostedTemplate, runId: string, recnum: number, documentRecord: number): Promise<void> {
  const id = randomUUID();
  const { _idnum: _a, recnum: _b, trnnum: _c, ...journal } = t.journal;
  await trx('lgrtrn').insert({ ...journal, _idnum: id, recnum, trnnum: `RAW-${runId}-${recnum}`.slice(-20) });
  await trx('lgtnln').insert(t.lines.map((l) => ({ ...l, _idnum: randomUUID(), _idref: id })));
  for (const b of t.balances) {
    await trx('lgrbal')
      .where({ lgract: b.account, postyr: journal.postyr, actprd: journal.actprd })
      .update({ dbttot: trx.raw('dbttot + ?', [b.debit]), crdtot: trx.raw('crdtot + ?', [b.credit]) });
  }
  if (t.jobCosts.length > 0) await insertInChunks(trx, 'jobcst', t.jobCosts.map((c, i) => ({ ...c, _idnum: randomUUID(), recnum: wideSubRecnum(recnum, i), srcrec: documentRecord })));
  if (t.equipmentCosts.length > 0) await insertInChunks(trx, 'eqpcst', t.equipmentCosts.map((c, i) => ({ ...c, _idnum: randomUUID(), recnum: wideSubRecnum(recnum, i), srcrec: documentRecord })));
}

function describeTemplate(name: string, what: string, t: PostedTemplate): void {
  process.stderr.write(`${name}: ${what} copied ${DOCUMENT_COPIES} + ${RAW_POOL} times; one posting wrote journal + ${t.lines.length} lines (${new Set(t.lines.map((l) => l.lgract)).size} accounts), ${t.jobCosts.length} job costs, ${t.equipmentCosts.length} equipment costs\n`);
}

/** Hands out the copies in order: one per request, never twice in a run. */
class CopyCounter {
  private next = 0;
  take(): number {
    if (this.next >= DOCUMENT_COPIES) throw new Error(`all ${DOCUMENT_COPIES} copies posted: raise BENCH_DOCUMENT_COPIES`);
    return COPY_BASE + this.next++;
  }
}

const PAYROLL_PERIOD_END = '2026-11-22';
const PAYROLL_SOURCE = 16;
const payrollCopies = new CopyCounter();
let payrollTemplate: PostedTemplate | undefined;

const payrolls: Scenario = {
  name: 'payrolls',
  path: '/api/v3/payroll-records/post',
  key: 'optional',
  rows: 'payroll record UPDATE, journal + lines (wages, burden, withholdings, net pay), a balance UPDATE per journal line, a job cost per job timecard line',
  async setup(ctx) {
    const { knex } = ctx;
    // The seed's Computed record for the period with the most job timecard lines (job costs too).
    const candidates: Array<Record<string, any>> = await knex('payrec').where({ status: 2, prdend: PAYROLL_PERIOD_END }).orderBy('recnum');
    if (candidates.length === 0) throw new Error(`payrolls: no Computed payroll record for ${PAYROLL_PERIOD_END} in the seed`);
    let source = candidates[0]!;
    let most = -1;
    for (const c of candidates) {
      const jobs = Number((await knex('tmcdln').where({ _idref: c._idnum }).whereNotNull('jobnum').count({ n: '*' }).first())!.n);
      if (jobs > most) [source, most] = [c, jobs];
    }
    await copyDocument(knex, 'payrec', 'tmcdln', source, COPY_BASE, DOCUMENT_COPIES, () => ({ chknum: null }));
    await copyDocument(knex, 'payrec', 'tmcdln', source, COPY_BASE + DOCUMENT_COPIES, RAW_POOL, () => ({ chknum: null }));
    const first = payrollCopies.take();
    const res = await postJson(ctx.port, '/api/v3/payroll-records/post', { recordNumbers: [first] }, { 'x-api-key': ctx.apiKey, 'Idempotency-Key': `bench-payroll-${ctx.runId}` });
    if (res.status !== 200) throw new Error(`payroll template: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
    const posted = await knex('payrec').where({ recnum: first }).first('lgrrec');
    payrollTemplate = await templateOf(knex, Number(posted.lgrrec), PAYROLL_SOURCE, first);
    describeTemplate('payrolls', `payroll record ${Number(source.recnum)}`, payrollTemplate);
  },
  body: () => ({ recordNumbers: [payrollCopies.take()] }),
  async raw(trx, ctx, recnum) {
    const t = payrollTemplate!;
    const record = COPY_BASE + DOCUMENT_COPIES + (recnum % RAW_POOL);
    await trx('payrec').where({ recnum: record }).update({ status: 3, lgrrec: recnum, actprd: t.journal.actprd, postyr: t.journal.postyr, upddte: t.journal.entdte, updusr: 'raw' });
    await rawFromTemplate(trx, t, ctx.runId, recnum, record);
  },
};

/** Seeded Open work order S26-000317 (client 3, site 1): labor 230.00 + trip charge 85.00, no parts, no tax. */
const WORK_ORDER = 317;
const SERVICE_SOURCE = 22;
const workOrderCopies = new CopyCounter();
let serviceTemplate: PostedTemplate | undefined;

const serviceInvoices: Scenario = {
  name: 'serviceInvoices',
  path: '/api/v3/service-invoices/post',
  key: 'optional',
  rows: 'work order UPDATE, journal + 2 lines (receivable, income), 2 balance UPDATEs',
  async setup(ctx) {
    const { knex } = ctx;
    const source = await knex('srvinv').where({ recnum: WORK_ORDER }).first();
    if (!source || Number(source.status) !== 1 || source.lgrrec !== null) throw new Error(`serviceInvoices: seeded work order ${WORK_ORDER} is not Open and unposted`);
    const copy = (recnum: number) => ({ invnum: `BW${recnum}` });
    await copyDocument(knex, 'srvinv', 'srvlin', source, COPY_BASE, DOCUMENT_COPIES, copy);
    await copyDocument(knex, 'srvinv', 'srvlin', source, COPY_BASE + DOCUMENT_COPIES, RAW_POOL, copy);
    const first = workOrderCopies.take();
    const res = await postJson(ctx.port, '/api/v3/service-invoices/post', { recordNumber: first }, { 'x-api-key': ctx.apiKey, 'Idempotency-Key': `bench-service-${ctx.runId}` });
    if (res.status !== 200) throw new Error(`service invoice template: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
    const posted = await knex('srvinv').where({ recnum: first }).first('lgrrec');
    serviceTemplate = await templateOf(knex, Number(posted.lgrrec), SERVICE_SOURCE, first);
    describeTemplate('serviceInvoices', `work order ${WORK_ORDER}`, serviceTemplate);
  },
  body: () => ({ recordNumber: workOrderCopies.take() }),
  async raw(trx, ctx, recnum) {
    const t = serviceTemplate!;
    const record = COPY_BASE + DOCUMENT_COPIES + (recnum % RAW_POOL);
    await trx('srvinv').where({ recnum: record }).update({ wrksts: 5, invttl: t.journal.dbttot, invbal: t.journal.dbttot, lgrrec: recnum, actprd: t.journal.actprd, postyr: t.journal.postyr, upddte: t.journal.entdte, updusr: 'raw' });
    await rawFromTemplate(trx, t, ctx.runId, recnum, record);
  },
};

// ---------------------------------------------------------------------------------------------
// Service inventories: stored only (one srvivt row, no journal), at the site of work order 317.

const SERVICE_CLIENT = 3;
const SERVICE_SITE = 1;

const serviceInventories: Scenario = {
  name: 'serviceInventories',
  path: '/api/v3/service-inventories',
  key: 'optional',
  rows: 'one service inventory row',
  body: (_ctx, _n, tag) => ({ clientNumber: SERVICE_CLIENT, serviceLocation: SERVICE_SITE, description: 'Bench rooftop unit', manufacturer: 'Bench', model: 'RTU-4', serialNumber: tag, installDate: FX.openDate }),
  async raw(trx, ctx, recnum) {
    await trx('srvivt').insert({ _idnum: randomUUID(), recnum, clnnum: SERVICE_CLIENT, srvloc: SERVICE_SITE, dscrpt: 'Bench rooftop unit', mannme: 'Bench', modnum: 'RTU-4', serial: `RAW-${ctx.runId}-${recnum}`, prtnum: null, insdat: FX.openDate, wrnend: null, status: 1, insusr: 'raw', updusr: 'raw' });
  },
};

export const SCENARIOS: readonly Scenario[] = [journals, invoices, allocations, receipts, payrolls, serviceInvoices, serviceInventories];
