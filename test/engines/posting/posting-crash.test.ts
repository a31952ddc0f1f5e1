/**
 * Crash safety with the real service in a child process: postings fired with Idempotency-Keys,
 * the process SIGKILLed mid-flight, restarted, every request retried with its key. Each posting
 * exists exactly once, no document is half-written, the books balance, and every response seen
 * before the crash is the one replayed after it. Covered: AP invoices, journals, inventory allocations,
 * PO receipts, payroll postings (single Computed records of the seed), service invoices (Open work
 * orders: the seed's and a few written like the accounting system does) and service inventories.
 * The restarted service is the same instance's next boot (INSTANCE_ID): it frees the dead boot's
 * claims at start, so no retry waits out a lease. Then: 300 concurrent keyed journals killed
 * mid-way, the same; and a lock taken before a SIGKILL is still held after the restart.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../../support/app';
import { parseDatabaseUrl } from '../../../src/storage/database';
import { dialectFor, engineOf } from '../../../src/storage/dialect';
import { Dec } from '../../../src/storage/decimal';
import { FX, apInvoice, booksBalance, installPostingFixture, journal, seedAllocationToJob } from '../../support/posting-fixture';
import { postJson, spawnServer, type HttpResult, type SpawnedServer } from '../../support/server-process';
import { assertBooksInvariants } from '../../support/invariants';

const adminKey = randomUUID();
const apiKey = randomUUID();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let db: { url: string; drop: () => Promise<void> };
let knex: Knex;
const servers: SpawnedServer[] = [];

before(async () => {
  db = await createTestDatabase();
  knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 2 }).config);
  await installPostingFixture(knex);
});
after(async () => {
  for (const s of servers) await s.kill();
  await knex?.destroy();
  await db?.drop();
});

async function start(env: Record<string, string> = {}): Promise<SpawnedServer> {
  // DB_DEADLINE_MS 2000: many postings answer 504 before the kill. The same INSTANCE_ID on every
  // start: a restart is the same instance's next boot, which frees the dead boot's claims at once
  // (without that, a retry would wait out the lease, 2 x deadline).
  const server = await spawnServer({ databaseUrl: db.url, adminKey, apiKey, env: { DB_DEADLINE_MS: '2000', INSTANCE_ID: 'crash-node', ...env } });
  servers.push(server);
  return server;
}

interface Planned {
  path: string;
  key: string;
  body: Record<string, unknown>;
  number: string;
  /** How many times the posting exists in the database (1 after the retries, never more). */
  count: (db: Knex) => Promise<number>;
}

const countWhere = async (db: Knex, table: string, where: Record<string, unknown>): Promise<number> => {
  const [row] = await db(table).where(where).count({ n: '*' });
  return Number((row as { n: unknown }).n);
};

/** Header table and document-number column of the writes that carry a number of their own. */
function written(path: string, number: string): (db: Knex) => Promise<number> {
  const [table, column] = WRITTEN_TO[path]!;
  return (db) => countWhere(db, table, { [column]: number });
}

test('SIGKILL mid-flight, restart, retry with the same keys: every posting exactly once, nothing half-written, books balance', async (t) => {
  const planned: Planned[] = [];
  for (let i = 0; i < 24; i += 1) {
    const number = `CR-INV-${i}`;
    planned.push({ path: '/api/v3/ap-invoices', key: `crash-${randomUUID()}`, body: apInvoice(number, 10), number, count: written('/api/v3/ap-invoices', number) });
  }
  for (let i = 0; i < 12; i += 1) {
    const number = `CR-JE-${i}`;
    planned.push({ path: '/api/v3/ledger-transactions', key: `crash-${randomUUID()}`, body: journal(number), number, count: written('/api/v3/ledger-transactions', number) });
  }
  for (let i = 0; i < 12; i += 1) {
    const number = `CR-IA-${i}`;
    planned.push({ path: '/api/v3/inventory-allocations', key: `crash-${randomUUID()}`, body: seedAllocationToJob(number), number, count: written('/api/v3/inventory-allocations', number) });
  }
  // PO receipts (key required) on two open stock orders of the seed: received to date, invoice, journal and stock together or not at all.
  for (let i = 0; i < 12; i += 1) {
    const number = `CR-RCV-${i}`;
    const [orderNumber, lineNumber, updateQuantity] = RECEIPT_LINES[i % 2]!;
    const body = { orderNumber, receiptDate: FX.openDate, vendorInvoiceNumber: number, lines: [{ lineNumber, updateQuantity }] };
    planned.push({ path: '/api/v3/purchase-order-receipts', key: `crash-${randomUUID()}`, body, number, count: written('/api/v3/purchase-order-receipts', number) });
  }
  // Payroll: one Computed record of the seed per posting (a batch posts once), each a journal of source 16.
  const lastWrites = await planTheLastWrites(knex);
  for (const r of lastWrites.payroll) {
    const number = payrollJournalNumber(r.recnum);
    planned.push({ path: PAYROLL, key: `crash-${randomUUID()}`, body: { recordNumbers: [r.recnum] }, number, count: (db) => countWhere(db, 'lgrtrn', { srcnum: 16, trnnum: number }) });
  }
  // Service invoices: one Open work order per posting (journal of source 22, parts out of the truck).
  for (const w of lastWrites.workOrders) {
    const body = { recordNumber: w.recnum, partsLocation: TRUCK, receivableAccount: 1120, costOfGoodsAccount: 5200 };
    planned.push({ path: SERVICE_POST, key: `crash-${randomUUID()}`, body, number: w.invnum, count: (db) => countWhere(db, 'lgrtrn', { srcnum: 22, trnnum: w.invnum }) });
  }
  // Service inventories: stored only, one row each (told apart by serial number).
  for (let i = 0; i < 8; i += 1) {
    const number = `CR-SI-${i}`;
    const body = { clientNumber: 12, serviceLocation: 9, description: `Crash test unit ${i}`, manufacturer: 'Carrier', model: '48FC-06', serialNumber: number, installDate: '2026-11-20' };
    planned.push({ path: SERVICE_INVENTORY, key: `crash-${randomUUID()}`, body, number, count: (db) => countWhere(db, 'srvivt', { serial: number }) });
  }

  // Sent interleaved (one of each write in turn), so that every write is in flight when the kill
  // lands, not only those at the head of the queue (SQLite runs the postings one at a time).
  const byPath = new Map<string, Planned[]>();
  for (const p of planned) byPath.set(p.path, [...(byPath.get(p.path) ?? []), p]);
  const interleaved: Planned[] = [];
  for (let i = 0; interleaved.length < planned.length; i += 1) for (const list of byPath.values()) if (list[i]) interleaved.push(list[i]!);

  const first = await start({ POSTING_DELAY_MS: '120' });
  const seen = new Map<string, HttpResult>();
  const answeredPaths = new Set<string>();
  const inFlight = interleaved.map((p) =>
    postJson(first.port, p.path, p.body, { 'x-api-key': apiKey, 'Idempotency-Key': p.key })
      .then((res) => {
        if (res.status === 200) answeredPaths.add(p.path);
        seen.set(p.key, res);
      })
      .catch(() => undefined),
  );
  // Kill once every write has posted at least once (so each has a pre-crash answer to replay), or
  // half the postings have answered (a slow machine: 504s past the deadline), whichever is first.
  while (answeredPaths.size < byPath.size && seen.size < planned.length / 2) await sleep(10);
  // ... at a moment a claimed key's posting is under way (SQLite posts one at a time: between one
  // posting's commit and the next claim no key is claimed, and a loaded machine can kill there).
  const claimedNow = async () => (await knex('idmkey').whereIn('idem_key', planned.map((p) => p.key)).where({ state: 'in_flight' }).first()) !== undefined;
  for (const until = Date.now() + 5_000; Date.now() < until && !(await claimedNow()); ) await sleep(2);
  await first.kill('SIGKILL');
  await Promise.all(inFlight);
  assert.ok(seen.size < planned.length, `the kill landed mid-flight (${seen.size} of ${planned.length} answered)`);

  // Nothing half-written right after the crash; some keys were left in flight by the dead owner.
  await assertWhole(knex, lastWrites);
  // Where the crash landed, per write: posted before it / answered 504 (outcome unknown) / neither.
  const landed: Record<string, [number, number, number]> = {};
  for (const p of planned) {
    const kind = (landed[p.path.replace('/api/v3/', '')] ??= [0, 0, 0]);
    const committed = await p.count(knex);
    assert.ok(committed <= 1, `${p.number}: at most once before the retries`);
    if (committed === 1) kind[0] += 1;
    else if (seen.get(p.key)?.status === 504) kind[1] += 1;
    else kind[2] += 1;
  }
  t.diagnostic(`at the kill (posted / 504 / in flight): ${JSON.stringify(landed)}`);
  const lastPending = [PAYROLL, SERVICE_POST, SERVICE_INVENTORY].map((path) => landed[path.replace('/api/v3/', '')]!).reduce((n, k) => n + k[1] + k[2], 0);
  assert.ok(lastPending >= 1, 'the crash left payroll, service invoice or service inventory postings unfinished');
  // In flight, or `unknown` (answered 504 past the deadline, its commit still pending): on a loaded
  // machine every claim left at the kill may be the latter.
  const orphaned = await knex('idmkey').whereIn('idem_key', planned.map((p) => p.key)).whereIn('state', ['in_flight', 'unknown']);
  assert.ok(orphaned.length >= 1, 'the crash left claimed keys whose posting never committed');

  const second = await start();
  // The restart freed the dead boot's claims: no retry meets IDEMPOTENCY_KEY_IN_FLIGHT, each posts at once.
  assert.equal(await knex('idmkey').whereIn('idem_key', planned.map((p) => p.key)).whereNot({ state: 'completed' }).count({ n: '*' }).then((r) => Number((r[0] as { n: unknown }).n)), 0, 'no claim of the dead boot is left after the restart');
  const retryStarted = Date.now();
  let inFlightAfterRestart = 0;
  const final = new Map<string, HttpResult>();
  for (const p of planned) {
    for (let attempt = 0; ; attempt += 1) {
      assert.ok(attempt < 100, `${p.number} settled`);
      let res: HttpResult;
      try {
        res = await postJson(second.port, p.path, p.body, { 'x-api-key': apiKey, 'Idempotency-Key': p.key });
      } catch {
        await sleep(100);
        continue;
      }
      if (res.status === 409 && res.headers['x-error-code'] === 'IDEMPOTENCY_KEY_IN_FLIGHT') {
        inFlightAfterRestart += 1;
        await sleep(Number(res.headers['retry-after'] ?? 1) * 1000);
        continue;
      }
      // What a client does on 504 (outcome unknown) and 502 (refused): retry with the same key.
      if (res.status === 504 || res.status === 502) {
        await sleep(200 * (attempt + 1));
        continue;
      }
      assert.equal(res.status, 200, `${p.number}: ${JSON.stringify(res.body)}`);
      final.set(p.key, res);
      break;
    }
  }

  t.diagnostic(`after the restart every key settled in ${Date.now() - retryStarted} ms; ${inFlightAfterRestart} answers were 409 in flight`);
  assert.equal(inFlightAfterRestart, 0, 'no retry after the restart waits for a lease (409 IDEMPOTENCY_KEY_IN_FLIGHT)');
  for (const p of planned) {
    assert.equal(await p.count(knex), 1, `${p.number} exists exactly once`);
    const before = seen.get(p.key);
    if (before && before.status === 200) {
      assert.deepEqual(final.get(p.key)!.body, before.body, `${p.number}: the replay equals the answer sent before the crash`);
      assert.equal(final.get(p.key)!.headers['idempotency-status'], 'replayed');
    }
  }
  await assertWhole(knex, lastWrites);
  await assertPostedOnce(knex, lastWrites);
  await assertBooksInvariants(knex);
  // Every receipt counted once in received to date (each order got 6 of the 12).
  for (const [orderNumber, lineNumber, quantity] of RECEIPT_LINES) {
    const order = await knex('pchord').where({ ordnum: orderNumber }).first();
    const line = await knex('pcorln').where({ _idref: order._idnum, linnum: lineNumber }).first();
    assert.equal(dialectFor(engineOf(knex)).decodeDecimal(line.rcvdte, 4)!.toFixed(), String(6 * quantity), `${orderNumber}/${lineNumber}: received exactly once per receipt`);
  }
  const books = await booksBalance(knex);
  assert.equal(books.debit, books.credit, 'the books balance');
  const open = await knex('idmkey').whereIn('idem_key', planned.map((p) => p.key)).whereNot({ state: 'completed' });
  assert.deepEqual(open, [], 'every key ends completed');
  await second.kill('SIGTERM');
});

/** Header table and document-number column of each write. */
const WRITTEN_TO: Record<string, [string, string]> = {
  '/api/v3/ap-invoices': ['acpinv', 'invnum'],
  '/api/v3/ledger-transactions': ['lgrtrn', 'trnnum'],
  '/api/v3/inventory-allocations': ['invalc', 'alcnum'],
  '/api/v3/purchase-order-receipts': ['acpinv', 'invnum'],
};


/** Open stock orders of the seed (nothing received yet): [orderNumber, line, quantity per receipt]. */
const RECEIPT_LINES: ReadonlyArray<readonly [string, number, number]> = [
  ['PO26-000065', 1, 2],
  ['PO26-000064', 3, 3],
];

/** Every AP invoice of the test has 10 lines, its journal with lines, and 10 job costs; balances match the lines. */
async function assertWhole(db: Knex, expect: LastWrites): Promise<void> {
  const invoices = await db('acpinv').where('invnum', 'like', 'CR-INV-%');
  for (const inv of invoices) {
    const lines = await db('apivln').where({ _idref: inv._idnum });
    assert.equal(lines.length, 10, `${inv.invnum}: all lines`);
    const journal = await db('lgrtrn').where({ recnum: inv.lgrrec }).first();
    assert.ok(journal, `${inv.invnum}: its journal`);
    assert.equal((await db('lgtnln').where({ _idref: journal._idnum })).length, 11, `${inv.invnum}: journal lines`);
    assert.equal((await db('jobcst').where({ srcnum: 11, srcrec: inv.recnum })).length, 10, `${inv.invnum}: job costs`);
  }
  // Every allocation: its lines, movements, consumption records, job costs and journal, or none of them.
  for (const a of await db('invalc').where('alcnum', 'like', 'CR-IA-%')) {
    assert.equal((await db('invaln').where({ _idref: a._idnum })).length, 2, `${a.alcnum}: all lines`);
    assert.equal((await db('invhst').where({ srcnum: 23, srcrec: a.recnum })).length, 2, `${a.alcnum}: movements`);
    assert.equal((await db('invcsm').where({ alcrec: a.recnum })).length, 2, `${a.alcnum}: inventory consumed`);
    assert.equal((await db('jobcst').where({ srcnum: 23, srcrec: a.recnum })).length, 2, `${a.alcnum}: job costs`);
    const journal = await db('lgrtrn').where({ recnum: a.lgrrec }).first();
    assert.ok(journal, `${a.alcnum}: its journal`);
    assert.equal((await db('lgtnln').where({ _idref: journal._idnum })).length, 3, `${a.alcnum}: journal lines`);
  }
  // A receipt: its one invoice line, its journal (stock debited, AP credited), its stock movement;
  // and received to date = the receipts of the order (nothing half-written).
  const receipts = await db('acpinv').where('invnum', 'like', 'CR-RCV-%');
  for (const inv of receipts) {
    assert.equal((await db('apivln').where({ _idref: inv._idnum })).length, 1, `${inv.invnum}: its line`);
    const journal = await db('lgrtrn').where({ recnum: inv.lgrrec, srcnum: 13 }).first();
    assert.ok(journal, `${inv.invnum}: its journal`);
    assert.equal((await db('lgtnln').where({ _idref: journal._idnum })).length, 2, `${inv.invnum}: journal lines`);
    assert.equal((await db('invhst').where({ srcnum: 13, srcrec: inv.recnum })).length, 1, `${inv.invnum}: stock movement`);
  }
  const dec4 = (raw: unknown) => dialectFor(engineOf(db)).decodeDecimal(raw, 4) ?? new Dec(0);
  for (const [orderNumber, lineNumber] of RECEIPT_LINES) {
    const order = await db('pchord').where({ ordnum: orderNumber }).first();
    const line = await db('pcorln').where({ _idref: order._idnum, linnum: lineNumber }).first();
    const got = await db('apivln as l').join('acpinv as i', 'i._idnum', 'l._idref').where({ 'i.ordnum': orderNumber, 'l.linnum': lineNumber }).select('l.linqty');
    const sum = got.reduce((s: Dec, r: any) => s.plus(dec4(r.linqty)), new Dec(0));
    assert.equal(dec4(line.rcvdte).toFixed(), sum.toFixed(), `${orderNumber}/${lineNumber}: received to date = the receipts`);
  }
  // The balance of the test's expense account equals what its journal lines say.
  const dialect = dialectFor(engineOf(db));
  const lineRows = await db('lgtnln as l').join('lgrtrn as h', 'h._idnum', 'l._idref').where('l.lgract', FX.accounts.directExpense).select('l.dbtamt', 'l.crdamt', 'h.actprd', 'h.postyr');
  let debit = new Dec(0);
  for (const r of lineRows) if (Number(r.postyr) === FX.year && Number(r.actprd) === FX.openPeriod) debit = debit.plus(dialect.decodeDecimal(r.dbtamt, 2)!);
  const bal = await db('lgrbal').where({ lgract: FX.accounts.directExpense, postyr: FX.year, actprd: FX.openPeriod }).first();
  assert.equal(bal ? dialect.decodeDecimal(bal.dbttot, 2)!.toFixed(2) : '0.00', debit.toFixed(2), 'ledger balance equals the posted lines');
  await assertLastWritesWhole(db, expect);
}

const PAYROLL = '/api/v3/payroll-records/post';
const SERVICE_POST = '/api/v3/service-invoices/post';
const SERVICE_INVENTORY = '/api/v3/service-inventories';
/** Seeded pay period left Computed (check date 2026-11-27), and how many of its records the test posts. */
const PAYROLL_PERIOD_END = '2026-11-22';
const PAYROLL_RECORDS = 8;
/** Service truck 1 (inventory account 1220): the parts of the work orders leave it. */
const TRUCK = 3;
/** Open work orders the test writes besides the seed's (the seed leaves three). */
const EXTRA_WORK_ORDERS = 3;

const payrollJournalNumber = (recnum: number) => `PR20261127-${recnum}`;

interface LastWrites {
  /** Computed records posted one per request, with the job and equipment costs each must produce. */
  payroll: Array<{ recnum: number; jobCosts: number; equipmentCosts: number }>;
  /** Open work orders posted one per request, with their invoice number and part lines (= stock movements). */
  workOrders: Array<{ recnum: number; invnum: string; partLines: number }>;
}

/**
 * What the payroll and service-invoice postings will work on: the first Computed records of the
 * seed's open pay period, and every Open unposted work order (the seed's three plus a few written
 * straight into the tables, as the accounting system would, so that more of them are in flight).
 */
async function planTheLastWrites(db: Knex): Promise<LastWrites> {
  const dialect = dialectFor(engineOf(db));
  const money = (v: Dec) => dialect.encodeDecimal(v, 2);
  for (let i = 0; i < EXTRA_WORK_ORDERS; i += 1) {
    const id = randomUUID();
    const recnum = 99501 + i;
    // Labor 2 h at 85.00, part 212 x1 at 40.00, part 149 x1 at 25.00 (both stocked on the truck).
    const lines = [
      { type: 1, part: null, quantity: '2', price: '85', description: 'Labor' },
      { type: 2, part: 212, quantity: '1', price: '40', description: 'Part 212' },
      { type: 2, part: 149, quantity: '1', price: '25', description: 'Part 149' },
    ];
    const total = lines.reduce((sum, l) => sum.plus(new Dec(l.quantity).times(l.price)), new Dec(0));
    await db('srvinv').insert({
      _idnum: id,
      recnum,
      invnum: `CR-WO-${i}`,
      invdte: '2026-11-19',
      clnnum: 12,
      srvloc: 9,
      srvtyp: 2,
      dscrpt: `Crash test work order ${i}`,
      wrksts: 4,
      invttl: money(total),
      taxamt: money(new Dec(0)),
      amtpad: money(new Dec(0)),
      invbal: money(total),
      status: 1,
      actprd: FX.openPeriod,
      postyr: FX.year,
      usrnme: 'test',
    });
    await db('srvlin').insert(
      lines.map((l, k) => ({
        _idnum: randomUUID(),
        _idref: id,
        linnum: k + 1,
        lintyp: l.type,
        prtnum: l.part,
        dscrpt: l.description,
        linqty: dialect.encodeDecimal(new Dec(l.quantity), 4),
        linprc: dialect.encodeDecimal(new Dec(l.price), 4),
        untcst: dialect.encodeDecimal(new Dec(0), 4),
        extttl: money(new Dec(l.quantity).times(l.price)),
        taxabl: false,
        lgract: 4030,
      })),
    );
  }
  const workOrders: LastWrites['workOrders'] = [];
  for (const w of await db('srvinv').where({ status: 1 }).whereNull('lgrrec').orderBy('recnum').select('recnum', 'invnum', '_idnum')) {
    const partLines = (await db('srvlin').where({ _idref: w._idnum, lintyp: 2 }).whereNotNull('prtnum').select('linqty')).filter((l: any) => dialect.decodeDecimal(l.linqty, 4)!.greaterThan(0)).length;
    workOrders.push({ recnum: Number(w.recnum), invnum: String(w.invnum), partLines });
  }
  assert.equal(workOrders.length, 3 + EXTRA_WORK_ORDERS, 'the seed leaves three Open work orders');
  assert.ok(workOrders.some((w) => w.partLines > 0) && workOrders.some((w) => w.partLines === 0), 'work orders with and without parts');

  const payroll: LastWrites['payroll'] = [];
  for (const r of await db('payrec').where({ prdend: PAYROLL_PERIOD_END, status: 2 }).orderBy('recnum').limit(PAYROLL_RECORDS).select('recnum', '_idnum')) {
    const lines = await db('tmcdln').where({ _idref: r._idnum }).select('jobnum', 'eqpnum');
    payroll.push({
      recnum: Number(r.recnum),
      jobCosts: lines.filter((l: any) => l.jobnum !== null).length,
      equipmentCosts: lines.filter((l: any) => l.jobnum === null && l.eqpnum !== null).length,
    });
  }
  assert.equal(payroll.length, PAYROLL_RECORDS, 'the seed leaves enough Computed payroll records');
  assert.ok(payroll.some((p) => p.jobCosts > 0) && payroll.some((p) => p.equipmentCosts > 0), 'records with job and with equipment labor');
  return { payroll, workOrders };
}

/**
 * Payroll records and work orders are each posted completely or not at all: Posted with its one
 * journal (source 16 / 22) and all its job, equipment costs or stock movements; or still
 * Computed / Open with none of them.
 */
async function assertLastWritesWhole(db: Knex, expect: LastWrites): Promise<void> {
  for (const p of expect.payroll) {
    const record = await db('payrec').where({ recnum: p.recnum }).first('status', 'lgrrec');
    const journals = await db('lgrtrn').where({ srcnum: 16, trnnum: payrollJournalNumber(p.recnum) }).select('recnum', '_idnum');
    const jobCosts = await countWhere(db, 'jobcst', { srcnum: 16, srcrec: p.recnum });
    const equipmentCosts = await countWhere(db, 'eqpcst', { srcnum: 16, srcrec: p.recnum });
    if (Number(record.status) === 3) {
      assert.equal(journals.length, 1, `payroll record ${p.recnum}: one journal`);
      assert.equal(Number(record.lgrrec), Number(journals[0].recnum), `payroll record ${p.recnum}: references its journal`);
      assert.ok((await countWhere(db, 'lgtnln', { _idref: journals[0]._idnum })) >= 2, `payroll record ${p.recnum}: journal lines`);
      assert.equal(jobCosts, p.jobCosts, `payroll record ${p.recnum}: job costs`);
      assert.equal(equipmentCosts, p.equipmentCosts, `payroll record ${p.recnum}: equipment costs`);
    } else {
      assert.equal(Number(record.status), 2, `payroll record ${p.recnum}: Computed or Posted`);
      assert.equal(record.lgrrec, null, `payroll record ${p.recnum}: no journal reference`);
      assert.deepEqual([journals.length, jobCosts, equipmentCosts], [0, 0, 0], `payroll record ${p.recnum}: nothing written`);
    }
  }
  for (const w of expect.workOrders) {
    const header = await db('srvinv').where({ recnum: w.recnum }).first('status', 'lgrrec', 'wrksts');
    const journals = await db('lgrtrn').where({ srcnum: 22, trnnum: w.invnum }).select('recnum', '_idnum');
    const movements = await countWhere(db, 'invhst', { srcnum: 22, srcrec: w.recnum });
    assert.equal(Number(header.status), 1, `${w.invnum}: stays Open (an open receivable)`);
    if (header.lgrrec !== null) {
      assert.equal(journals.length, 1, `${w.invnum}: one journal`);
      assert.equal(Number(header.lgrrec), Number(journals[0].recnum), `${w.invnum}: references its journal`);
      assert.ok((await countWhere(db, 'lgtnln', { _idref: journals[0]._idnum })) >= 2, `${w.invnum}: journal lines`);
      assert.equal(movements, w.partLines, `${w.invnum}: stock movements`);
      assert.equal(Number(header.wrksts), 5, `${w.invnum}: work complete`);
    } else {
      assert.deepEqual([journals.length, movements], [0, 0], `${w.invnum}: nothing written`);
      assert.notEqual(Number(header.wrksts), 5, `${w.invnum}: not marked complete`);
    }
  }
  const inventories = await db('srvivt').where('serial', 'like', 'CR-SI-%').groupBy('serial').having(db.raw('count(*) > 1')).select('serial');
  assert.deepEqual(inventories, [], 'no service inventory stored twice');
}

/** After the retries: every payroll record Posted and every work order invoiced, once. */
async function assertPostedOnce(db: Knex, expect: LastWrites): Promise<void> {
  for (const p of expect.payroll) {
    const record = await db('payrec').where({ recnum: p.recnum }).first('status', 'lgrrec');
    assert.equal(Number(record.status), 3, `payroll record ${p.recnum}: Posted`);
    assert.equal(await countWhere(db, 'lgrtrn', { srcnum: 16, recnum: record.lgrrec }), 1, `payroll record ${p.recnum}: its journal has source 16`);
  }
  for (const w of expect.workOrders) {
    const header = await db('srvinv').where({ recnum: w.recnum }).first('lgrrec');
    assert.notEqual(header.lgrrec, null, `${w.invnum}: invoiced`);
    assert.equal(await countWhere(db, 'lgrtrn', { srcnum: 22, recnum: header.lgrrec }), 1, `${w.invnum}: its journal has source 22`);
  }
}

test('300 concurrent keyed journals, SIGKILL mid-way, restart: every key posts exactly once and its retry posts at once (no lease wait), books balance', async (t) => {
  const planned = Array.from({ length: 300 }, (_, i) => ({ key: `c300-${randomUUID()}`, number: `C3-${i}` }));
  const send = (port: number, p: { key: string; number: string }) => postJson(port, '/api/v3/ledger-transactions', journal(p.number), { 'x-api-key': apiKey, 'Idempotency-Key': p.key });
  const first = await start({ POSTING_DELAY_MS: '10' });
  let answered = 0;
  const statuses: Record<number, number> = {};
  const inFlight = planned.map((p) =>
    send(first.port, p)
      .then((res) => {
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status === 200) answered += 1;
      })
      .catch(() => undefined),
  );
  const waitStarted = Date.now();
  // Kill once 40 have posted, or half have answered at all (PostgreSQL on a slow machine: most
  // answer 504 at the 2 s deadline while their postings still run), whichever comes first.
  const total = () => Object.values(statuses).reduce((a, b) => a + b, 0);
  while (answered < 40 && total() < planned.length / 2 && Date.now() - waitStarted < 30_000) await sleep(5);
  await first.kill('SIGKILL');
  await Promise.all(inFlight);
  assert.ok(answered < planned.length, `the kill landed mid-way (${answered} of ${planned.length} answered 200)`);
  const left = await knex('idmkey').whereIn('idem_key', planned.map((p) => p.key)).whereNot({ state: 'completed' }).count({ n: '*' });
  const leftClaimed = Number((left[0] as { n: unknown }).n);
  t.diagnostic(`before the kill: ${JSON.stringify(statuses)}; ${leftClaimed} keys left claimed by the dead process`);
  assert.ok(leftClaimed >= 1, 'the kill left keys claimed by the dead process');

  const second = await start();
  const retryStarted = Date.now();
  let inFlight409 = 0;
  for (let i = 0; i < planned.length; i += 30) {
    await Promise.all(
      planned.slice(i, i + 30).map(async (p) => {
        for (let attempt = 0; ; attempt += 1) {
          assert.ok(attempt < 50, `${p.number} settled`);
          const res = await send(second.port, p);
          if (res.status === 409 && res.headers['x-error-code'] === 'IDEMPOTENCY_KEY_IN_FLIGHT') {
            inFlight409 += 1;
            await sleep(1000);
            continue;
          }
          if (res.status === 504 || res.status === 502) {
            await sleep(100 * (attempt + 1));
            continue;
          }
          assert.equal(res.status, 200, `${p.number}: ${JSON.stringify(res.body)}`);
          return;
        }
      }),
    );
  }
  t.diagnostic(`retries after the restart: ${Date.now() - retryStarted} ms for ${planned.length} keys, ${inFlight409} answers 409 in flight`);
  assert.equal(inFlight409, 0, 'no retry waits out the dead process\'s lease');
  const rows = await knex('lgrtrn').whereIn('trnnum', planned.map((p) => p.number)).select('trnnum');
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(String(r.trnnum), (counts.get(String(r.trnnum)) ?? 0) + 1);
  for (const p of planned) assert.equal(counts.get(p.number), 1, `${p.number} exists exactly once`);
  const books = await booksBalance(knex);
  assert.equal(books.debit, books.credit, 'the books balance');
  await assertBooksInvariants(knex);
  await second.kill('SIGTERM');
});

test('a lock taken before a SIGKILL is still held after the restart (and the restarted service holds no connection for it)', async () => {
  const s1 = await start();
  const lock = await postJson(s1.port, '/api/v3/utility/lock', { userName: 'nightly-backup' }, { 'x-api-key': adminKey });
  assert.equal(lock.status, 200, JSON.stringify(lock.body));
  await s1.kill('SIGKILL');
  const s2 = await start();
  const ping = await postJson(s2.port, '/api/v3/utility/ping', {}, { 'x-api-key': apiKey });
  assert.equal(ping.status, 200);
  assert.equal(ping.body.status, 'locked');
  assert.equal(ping.body.lockUser, 'nightly-backup');
  const write = await postJson(s2.port, '/api/v3/ledger-transactions', journal('CR-LOCK'), { 'x-api-key': apiKey });
  assert.equal(write.status, 423);
  assert.equal(write.headers['retry-after'], '60');
  assert.equal(write.body.lockUser, 'nightly-backup');
  const unlock = await postJson(s2.port, '/api/v3/utility/un-lock', { userName: 'nightly-backup' }, { 'x-api-key': adminKey });
  assert.equal(unlock.status, 200, JSON.stringify(unlock.body));
  const after = await postJson(s2.port, '/api/v3/ledger-transactions', journal('CR-LOCK'), { 'x-api-key': apiKey });
  assert.equal(after.status, 200, JSON.stringify(after.body));
  await s2.kill('SIGTERM');
});
