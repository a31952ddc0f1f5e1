/**
 * Crash safety with the real service in a child process: postings fired with Idempotency-Keys,
 * the process SIGKILLed mid-flight, restarted, every request retried with its key. Each posting
 * exists exactly once, no document is half-written, the books balance, and every response seen
 * before the crash is the one replayed after it (AP invoices, journals and PO receipts). Then: a lock taken before a SIGKILL is still
 * held after the restart.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from './support/app';
import { parseDatabaseUrl } from '../src/storage/database';
import { dialectFor, engineOf } from '../src/storage/dialect';
import { Dec } from '../src/storage/decimal';
import { FX, apInvoice, booksBalance, installPostingFixture, journal, seedAllocationToJob } from './support/posting-fixture';
import { postJson, spawnServer, type HttpResult, type SpawnedServer } from './support/server-process';
import { assertBooksInvariants } from './support/invariants';

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
  // DB_DEADLINE_MS 2000: the in-flight lease (2 x deadline) of a killed owner expires in 4 s.
  const server = await spawnServer({ databaseUrl: db.url, adminKey, apiKey, env: { DB_DEADLINE_MS: '2000', ...env } });
  servers.push(server);
  return server;
}

interface Planned {
  path: string;
  key: string;
  body: Record<string, unknown>;
  number: string;
}

test('SIGKILL mid-flight, restart, retry with the same keys: every posting exactly once, nothing half-written, books balance', async () => {
  const planned: Planned[] = [];
  for (let i = 0; i < 24; i += 1) {
    const number = `CR-INV-${i}`;
    planned.push({ path: '/api/v3/ap-invoices', key: `crash-${randomUUID()}`, body: apInvoice(number, 10), number });
  }
  for (let i = 0; i < 12; i += 1) {
    const number = `CR-JE-${i}`;
    planned.push({ path: '/api/v3/ledger-transactions', key: `crash-${randomUUID()}`, body: journal(number), number });
  }
  for (let i = 0; i < 12; i += 1) {
    const number = `CR-IA-${i}`;
    planned.push({ path: '/api/v3/inventory-allocations', key: `crash-${randomUUID()}`, body: seedAllocationToJob(number), number });
  }
  // PO receipts (key required) on two open stock orders of the seed: received to date, invoice, journal and stock together or not at all.
  for (let i = 0; i < 12; i += 1) {
    const number = `CR-RCV-${i}`;
    const [orderNumber, lineNumber, updateQuantity] = RECEIPT_LINES[i % 2]!;
    const body = { orderNumber, receiptDate: FX.openDate, vendorInvoiceNumber: number, lines: [{ lineNumber, updateQuantity }] };
    planned.push({ path: '/api/v3/purchase-order-receipts', key: `crash-${randomUUID()}`, body, number });
  }

  const first = await start({ POSTING_DELAY_MS: '120' });
  const seen = new Map<string, HttpResult>();
  let answered = 0;
  const inFlight = planned.map((p) =>
    postJson(first.port, p.path, p.body, { 'x-api-key': apiKey, 'Idempotency-Key': p.key })
      .then((res) => {
        answered += 1;
        seen.set(p.key, res);
      })
      .catch(() => undefined),
  );
  while (answered < 3) await sleep(10);
  await first.kill('SIGKILL');
  await Promise.all(inFlight);
  assert.ok(seen.size < planned.length, `the kill landed mid-flight (${seen.size} of ${planned.length} answered)`);

  // Nothing half-written right after the crash; some keys were left in flight by the dead owner.
  await assertWhole(knex);
  const orphaned = await knex('idmkey').whereIn('idem_key', planned.map((p) => p.key)).where({ state: 'in_flight' });
  assert.ok(orphaned.length >= 1, 'the crash left claimed keys whose posting never committed');

  const second = await start();
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

  for (const p of planned) {
    const [table, column] = WRITTEN_TO[p.path]!;
    const rows = await knex(table).where({ [column]: p.number });
    assert.equal(rows.length, 1, `${p.number} exists exactly once`);
    const before = seen.get(p.key);
    if (before && before.status === 200) {
      assert.deepEqual(final.get(p.key)!.body, before.body, `${p.number}: the replay equals the answer sent before the crash`);
      assert.equal(final.get(p.key)!.headers['idempotency-status'], 'replayed');
    }
  }
  await assertWhole(knex);
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
async function assertWhole(db: Knex): Promise<void> {
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
}

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
