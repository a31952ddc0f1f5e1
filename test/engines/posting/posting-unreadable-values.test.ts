/**
 * Writes that meet a stored value the contract cannot publish (docs/decisions/0370): another
 * program wrote it into the accounting database. The write answers 502 STORED_VALUE_UNREADABLE
 * naming the entity, record and field, posts nothing (it rolls back as a whole), and records the
 * answer under its Idempotency-Key (the spec: a request that reached the database is recorded);
 * corrected, a new key posts. Never a 500, and never the value taken for another one: text in an
 * inactive flag is not "active".
 */
import { randomUUID } from 'node:crypto';
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../../support/app';
import { assertProblem } from '../../support/http';
import { assertBooksInvariants } from '../../support/invariants';
import { countRows } from '../../support/posting-fixture';

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(async () => {
  await t?.close();
});

/** The tables a posting writes: none may move when it is refused. */
const POSTED_TABLES = ['acpinv', 'apivln', 'lgrtrn', 'lgtnln', 'jobcst', 'invhst', 'lgrbal', 'srvinv'] as const;

async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of POSTED_TABLES) out[table] = await countRows(t.knex, table);
  return out;
}

function post(path: string, body: unknown, key: string) {
  return t.http.post(path).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

test('a purchase order receipt whose order holds the date infinity: 502 naming the order and field, nothing posted, the answer kept under its key; corrected, a new key posts', async () => {
  const order = await t.knex('pchord').where({ ordnum: 'PO26-000065' }).first('_idnum', 'deldte');
  const line = await t.knex('pcorln').where({ _idref: order._idnum, linnum: 1 }).first('rcvdte');
  const body = { orderNumber: 'PO26-000065', receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 5 }] };
  const before = await counts();
  // Both engines store it: PostgreSQL's date takes 'infinity', SQLite takes any text.
  await t.knex.raw("UPDATE pchord SET deldte = 'infinity' WHERE _idnum = ?", [order._idnum]);
  const key = `po-${randomUUID()}`;
  const res = await post('/api/v3/purchase-order-receipts', body, key);
  assert.equal(res.status, 502, res.text);
  const problem = assertProblem(res, 'STORED_VALUE_UNREADABLE', '/api/v3/purchase-order-receipts');
  assert.deepEqual(problem.unreadableValue, { entity: 'purchase-orders', field: 'deliveryDate', recordId: String(order._idnum).toLowerCase() });
  assert.equal(res.headers['idempotency-status'], 'applied');
  // Nothing posted, nothing received.
  assert.deepEqual(await counts(), before);
  assert.equal(String((await t.knex('pcorln').where({ _idref: order._idnum, linnum: 1 }).first('rcvdte')).rcvdte), String(line.rcvdte));
  // The same key replays the recorded answer (the spec: a 502 that reached the database is kept).
  const again = await post('/api/v3/purchase-order-receipts', body, key);
  assert.equal(again.status, 502, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(await counts(), before);

  await t.knex('pchord').where({ _idnum: order._idnum }).update({ deldte: order.deldte });
  const fixed = await post('/api/v3/purchase-order-receipts', body, `po-${randomUUID()}`);
  assert.equal(fixed.status, 200, fixed.text);
  await assertBooksInvariants(t.knex);
});

test('a service invoice whose ledger accounts hold text in their inactive flags is refused 502 naming one, not posted as if they were active', async () => {
  const accounts = (await t.knex('lgract').select('_idnum', 'inactv')) as Array<{ _idnum: string; inactv: unknown }>;
  let refused: unknown;
  try {
    await t.knex.raw("UPDATE lgract SET inactv = 'maybe'");
  } catch (err) {
    refused = err;
  }
  try {
    if (t.engine !== 'sqlite') {
      // PostgreSQL's boolean refuses the text at write; the postings of the other test files cover the normal path.
      assert.ok(refused, 'PostgreSQL refuses text in a boolean column');
      return;
    }
    assert.equal(refused, undefined);
    const workOrder = await t.knex('srvinv').where({ recnum: 317 }).first('status');
    const before = await counts();
    const res = await post('/api/v3/service-invoices/post', { recordNumber: 317, partsLocation: 3, receivableAccount: 1120, costOfGoodsAccount: 5200 }, `si-${randomUUID()}`);
    assert.equal(res.status, 502, res.text);
    const problem = assertProblem(res, 'STORED_VALUE_UNREADABLE', '/api/v3/service-invoices/post');
    assert.equal(problem.unreadableValue.entity, 'ledger-accounts');
    assert.equal(problem.unreadableValue.field, 'inactive');
    assert.ok(accounts.some((a) => String(a._idnum).toLowerCase() === problem.unreadableValue.recordId), JSON.stringify(problem));
    assert.deepEqual(await counts(), before, 'nothing posted');
    assert.equal(Number((await t.knex('srvinv').where({ recnum: 317 }).first('status')).status), Number(workOrder.status), 'the work order is not invoiced');
  } finally {
    for (const a of accounts) await t.knex('lgract').where({ _idnum: a._idnum }).update({ inactv: a.inactv });
  }
});

test("an allocation whose part's stock history holds a value its cost column cannot (text in SQLite, NaN in PostgreSQL) is refused 502 naming that history, not costed as if it were 0", async () => {
  const alloc = {
    allocationNumber: `IA-UNREAD-${randomUUID().slice(0, 8)}`,
    allocationDate: '2026-11-20',
    description: 'Stock to Cedar Falls TI',
    status: 4,
    purpose: 2,
    fromLocation: 1,
    jobNumber: 2601,
    phaseNumber: 3,
    lines: [{ lineNumber: 1, partNumber: 72, quantity: 1, costCode: 3, costType: 1 }],
  };
  const history = await t.knex('invhst').where({ prtnum: 72 }).first('_idnum', 'extcst');
  assert.ok(history, 'the demo company has stock history for part 72');
  const before = await counts();
  // Both engines take it: SQLite any text, PostgreSQL's numeric NaN. sum() would read the text as 0.
  await t.knex('invhst').where({ _idnum: history._idnum }).update({ extcst: t.engine === 'sqlite' ? 'not a cost' : 'NaN' });
  try {
    const res = await post('/api/v3/inventory-allocations', alloc, `ia-${randomUUID()}`);
    assert.equal(res.status, 502, res.text);
    const problem = assertProblem(res, 'STORED_VALUE_UNREADABLE', '/api/v3/inventory-allocations');
    assert.deepEqual(problem.unreadableValue, { entity: 'inventory-histories', field: 'extendedCost', recordId: String(history._idnum).toLowerCase() });
    assert.deepEqual(await counts(), before, 'nothing posted');
  } finally {
    await t.knex('invhst').where({ _idnum: history._idnum }).update({ extcst: history.extcst });
  }
  const fixed = await post('/api/v3/inventory-allocations', alloc, `ia-${randomUUID()}`);
  assert.equal(fixed.status, 200, fixed.text);
  await assertBooksInvariants(t.knex);
});
