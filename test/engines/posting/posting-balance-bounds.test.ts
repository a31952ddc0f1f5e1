/**
 * A posting adds to totals the books already hold: a journal to the ledger balances (lgrbal
 * debitTotal / creditTotal, decimal(14, 2)), a purchase order receipt to the order's received
 * total and each line's received to date. Every amount of the request fits its column (0440), yet
 * the sum with what is stored may not. Before decision 0441 PostgreSQL refused the statement
 * (22003: 400 VALUE_OUT_OF_RANGE without errors[], blaming "a value of the request") and SQLite
 * stored the scaled integer past the bound (the total then unreadable: 502). Now, on every engine:
 * 422 BUSINESS_RULE_VIOLATED naming the cell (`ledgerBalance` / `exceededValue`) and the request
 * field behind the addition, nothing posted, the stored total unchanged, the answer kept under the
 * Idempotency-Key and replayed, a dry run answering the same; a posting that reaches the bound
 * exactly still posts.
 *
 * The near-overflow state is planted straight into the database (another program's books: no
 * request could build it in a test's time), as posting-unreadable-balance.test.ts plants bad cells.
 */
import { randomUUID } from 'node:crypto';
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { queryRows } from '../../support/invariants';
import { FX, balanceOf, bookFootprint, countRows, journal } from '../../support/posting-fixture';
import { Dec } from '../../../src/storage/decimal';
import { dialectFor } from '../../../src/storage/dialect';

let t: TestApp;
usePostingApp((app) => (t = app));

const JOURNALS = '/api/v3/ledger-transactions';
const RECEIPTS = '/api/v3/purchase-order-receipts';
const A = FX.accounts;
/** decimal(14, 2): the ledger balances' and the received total's column. */
const MONEY_MAX = '999999999999.99';
/** decimal(14, 4): a line's received to date. */
const QUANTITY_MAX = '9999999999.9999';

function post(path: string, body: unknown, key: string, query = '') {
  return t.http.post(`${path}${query}`).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

const dialect = () => dialectFor(t.engine === 'sqlite' ? 'sqlite' : 'postgres');
/** `value` as the engine stores a decimal of `scale` (SQLite: the scaled integer), for a planted cell. */
const stored = (value: string, scale: number) => dialect().encodeDecimal(new Dec(value), scale);

/**
 * Plants `value` into `column` of the row `where` of `table`, runs `fn`, then takes the planted
 * amount out again: what `fn` posted stays added to the original value, so the books still agree
 * with their journal lines and receipts (the invariants checked after every test).
 */
async function withPlanted(table: string, where: Record<string, unknown>, column: string, value: string, scale: number, fn: () => Promise<void>): Promise<void> {
  const read = async () => dialect().decodeDecimal((await t.knex(table).where(where).first(column))[column], scale)!;
  const original = await read();
  await t.knex(table).where(where).update({ [column]: stored(value, scale) });
  try {
    await fn();
  } finally {
    const now = await read();
    await t.knex(table).where(where).update({ [column]: stored(now.minus(value).plus(original).toFixed(scale), scale) });
  }
}

// ------------------------------------------------------------------------------------------------
// Ledger balances
// ------------------------------------------------------------------------------------------------

const JOURNAL_TABLES = ['lgrtrn', 'lgtnln', 'lgrbal'] as const;
type Column = 'dbttot' | 'crdtot';

async function rawCell(account: number, column: Column): Promise<unknown> {
  const [row] = await queryRows<{ v: unknown }>(t.knex, `select ${column} as v from lgrbal where lgract = ? and postyr = ? and actprd = ?`, [account, FX.year, FX.openPeriod]);
  assert.ok(row, `the balance cell of ${account} exists`);
  return row.v;
}

/** Sets `column` of `account`'s cell in the open period to `value` (created first by a clean journal), runs `fn`, takes `value` out again. */
async function withBalance(account: number, column: Column, value: string, fn: () => Promise<void>): Promise<void> {
  const created = await post(
    JOURNALS,
    journal(`BB-SETUP-${randomUUID().slice(0, 8)}`, {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, description: 'Debit', debitAmount: 1 },
        { lineNumber: 2, ledgerAccount: A.cash, description: 'Credit', creditAmount: 1 },
      ],
    }),
    `bb-${randomUUID()}`,
  );
  assert.equal(created.status, 200, created.text);
  await withPlanted('lgrbal', { lgract: account, postyr: FX.year, actprd: FX.openPeriod }, column, value, 2, fn);
}

/** The refusal: 422 naming the balance and the line, nothing posted, the cell unchanged, replayed under the key, the same on a dry run. */
async function assertBalanceRefused(body: Record<string, unknown>, expected: { account: number; column: Column; field: 'debitTotal' | 'creditTotal'; line: string }): Promise<void> {
  const cellBefore = await rawCell(expected.account, expected.column);
  const before = await bookFootprint(t.knex, JOURNAL_TABLES);
  const key = `bb-${randomUUID()}`;
  const res = await post(JOURNALS, body, key);
  assert.equal(res.status, 422, res.text);
  const problem = assertProblem(res, 'BUSINESS_RULE_VIOLATED', JOURNALS);
  assert.deepEqual(problem.ledgerBalance, { ledgerAccount: expected.account, year: FX.year, period: FX.openPeriod, field: expected.field });
  assert.deepEqual(
    (problem.errors as Array<{ field: string; code: string }>).map((e) => ({ field: e.field, code: e.code })),
    [{ field: expected.line, code: 'range' }],
  );
  assert.match(problem.detail, new RegExp(`ledger account ${expected.account}.*${MONEY_MAX.replace('.', '\\.')}`));
  assert.equal(res.headers['idempotency-status'], 'applied');
  assert.deepEqual(await bookFootprint(t.knex, JOURNAL_TABLES), before, 'nothing posted, no data change');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: body.transactionNumber }), 0, 'no journal under that number');
  assert.deepEqual(await rawCell(expected.account, expected.column), cellBefore, 'the balance is unchanged');

  const again = await post(JOURNALS, body, key);
  assert.equal(again.status, 422, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(again.body.ledgerBalance, problem.ledgerBalance);
  assert.deepEqual(again.body.errors, problem.errors);

  const dry = await post(JOURNALS, body, `bb-${randomUUID()}`, '?dryRun=true');
  assert.equal(dry.status, 422, dry.text);
  const dryProblem = assertProblem(dry, 'BUSINESS_RULE_VIOLATED', JOURNALS);
  assert.deepEqual(dryProblem.ledgerBalance, problem.ledgerBalance);
  assert.deepEqual(dryProblem.errors, problem.errors);
  assert.deepEqual(await bookFootprint(t.knex, JOURNAL_TABLES), before, 'the dry run posted nothing either');
  assert.deepEqual(await rawCell(expected.account, expected.column), cellBefore, 'the balance is unchanged');
}

test('a journal whose debit would push a debit total past decimal(14, 2): 422 naming the balance and the first line on the account, nothing posted, replayed, the same dry', async () => {
  await withBalance(A.overhead, 'dbttot', '999999999995.00', async () => {
    // The account's line is the second: errors[] names it, not the first line of the journal.
    const body = journal(`BB-D-${randomUUID().slice(0, 8)}`, {
      lines: [
        { lineNumber: 1, ledgerAccount: A.cash, description: 'Credit', creditAmount: 10 },
        { lineNumber: 2, ledgerAccount: A.overhead, description: 'Debit', debitAmount: 10 },
      ],
    });
    await assertBalanceRefused(body, { account: A.overhead, column: 'dbttot', field: 'debitTotal', line: 'lines[1].ledgerAccount' });
  });
});

test('two credits on one account that together push its credit total past the bound: 422 naming the first of them', async () => {
  // Each credit alone (4.00, 6.00) fits beside the stored total; their sum (10.00) does not.
  await withBalance(A.cash, 'crdtot', '999999999991.00', async () => {
    const body = journal(`BB-C-${randomUUID().slice(0, 8)}`, {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, description: 'Debit', debitAmount: 10 },
        { lineNumber: 2, ledgerAccount: A.cash, description: 'Credit a', creditAmount: 4 },
        { lineNumber: 3, ledgerAccount: A.cash, description: 'Credit b', creditAmount: 6 },
      ],
    });
    await assertBalanceRefused(body, { account: A.cash, column: 'crdtot', field: 'creditTotal', line: 'lines[1].ledgerAccount' });
  });
});

test('a journal that brings a balance exactly to 999999999999.99 posts', async () => {
  await withBalance(A.overhead, 'dbttot', '999999999989.99', async () => {
    const before = await bookFootprint(t.knex, JOURNAL_TABLES);
    const body = journal(`BB-X-${randomUUID().slice(0, 8)}`, {
      lines: [
        { lineNumber: 1, ledgerAccount: A.overhead, description: 'Debit', debitAmount: 10 },
        { lineNumber: 2, ledgerAccount: A.cash, description: 'Credit', creditAmount: 10 },
      ],
    });
    const res = await post(JOURNALS, body, `bb-${randomUUID()}`);
    assert.equal(res.status, 200, res.text);
    assert.equal((await balanceOf(t.knex, A.overhead, FX.year, FX.openPeriod)).debit, MONEY_MAX);
    const after = await bookFootprint(t.knex, JOURNAL_TABLES);
    assert.equal(after.lgrtrn, before.lgrtrn! + 1, 'the journal is posted');
    // The balance is readable through the API at its bound.
    const read = await t.http
      .post('/api/v3/ledger-balances/query')
      .set('x-api-key', t.apiKey)
      .set('Content-Type', 'application/json')
      .send({
        select: ['debitTotal'],
        filters: { and: [A.overhead, FX.year, FX.openPeriod].map((value, i) => ({ match: { field: ['ledgerAccount', 'year', 'period'][i], operator: '=', value } })) },
      });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.data[0].debitTotal, Number(MONEY_MAX));
  });
});

// ------------------------------------------------------------------------------------------------
// Purchase order receipts
// ------------------------------------------------------------------------------------------------

/** An Open stock order of the seed: location 1, parts on every line. */
const STOCK_PO = 'PO26-000065';
const RECEIPT_TABLES = ['acpinv', 'apivln', 'lgrtrn', 'lgtnln', 'lgrbal', 'invhst', 'jobcst'] as const;
const receipt = () => ({ orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 2 }] });

interface Target {
  table: 'pchord' | 'pcorln';
  column: string;
  id: string;
}

async function orderTargets(): Promise<{ orderId: string; order: Target; line: Target }> {
  const order = await t.knex('pchord').where({ ordnum: STOCK_PO }).first('_idnum');
  const line = await t.knex('pcorln').where({ _idref: order._idnum, linnum: 1 }).first('_idnum');
  return { orderId: String(order._idnum), order: { table: 'pchord', column: 'rcvttl', id: String(order._idnum) }, line: { table: 'pcorln', column: 'rcvdte', id: String(line._idnum) } };
}

/** Every received quantity and total of the order as stored, and its status. */
async function received(): Promise<unknown[]> {
  const order = await t.knex('pchord').where({ ordnum: STOCK_PO }).first('_idnum', 'rcvttl', 'status');
  const lines = await t.knex('pcorln').where({ _idref: order._idnum }).orderBy('linnum').select('rcvdte');
  return [order.rcvttl, order.status, ...lines.map((l: { rcvdte: unknown }) => l.rcvdte)];
}

async function withValue(target: Target, value: string, scale: number, fn: () => Promise<void>): Promise<void> {
  await withPlanted(target.table, { _idnum: target.id }, target.column, value, scale, fn);
}

async function assertReceiptRefused(exceeded: Record<string, string>, field: string): Promise<void> {
  const before = { ...(await bookFootprint(t.knex, RECEIPT_TABLES)), received: await received() };
  const key = `bb-${randomUUID()}`;
  const res = await post(RECEIPTS, receipt(), key);
  assert.equal(res.status, 422, res.text);
  const problem = assertProblem(res, 'BUSINESS_RULE_VIOLATED', RECEIPTS);
  assert.deepEqual(problem.exceededValue, exceeded);
  assert.deepEqual((problem.errors as Array<{ field: string; code: string }>).map((e) => ({ field: e.field, code: e.code })), [{ field, code: 'range' }]);
  assert.equal(res.headers['idempotency-status'], 'applied');
  assert.deepEqual({ ...(await bookFootprint(t.knex, RECEIPT_TABLES)), received: await received() }, before, 'nothing posted, nothing received, no data change');

  const again = await post(RECEIPTS, receipt(), key);
  assert.equal(again.status, 422, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(again.body.exceededValue, problem.exceededValue);

  const dry = await post(RECEIPTS, receipt(), `bb-${randomUUID()}`, '?dryRun=true');
  assert.equal(dry.status, 422, dry.text);
  assert.deepEqual(assertProblem(dry, 'BUSINESS_RULE_VIOLATED', RECEIPTS).exceededValue, problem.exceededValue);
  assert.deepEqual({ ...(await bookFootprint(t.knex, RECEIPT_TABLES)), received: await received() }, before, 'the dry run posted nothing either');
}

test("a receipt that would push the order's received total past decimal(14, 2): 422 naming purchase-orders receivedTotal, nothing posted, replayed, the same dry", async () => {
  const { orderId, order } = await orderTargets();
  await withValue(order, '999999999999.00', 2, async () => {
    await assertReceiptRefused({ entity: 'purchase-orders', field: 'receivedTotal', recordId: orderId.toLowerCase() }, 'lines');
  });
});

test("a receipt that would push a line's received to date past decimal(14, 4): 422 naming the line of the order and its updateQuantity", async () => {
  const { orderId, line } = await orderTargets();
  await withValue(line, '9999999999.0000', 4, async () => {
    await assertReceiptRefused({ entity: 'purchase-orders', field: 'lines.receivedToDate', recordId: line.id.toLowerCase(), parentId: orderId.toLowerCase() }, 'lines[0].updateQuantity');
  });
});

test("a receipt into stock that would push the location's quantity on hand past decimal(14, 4): 422 naming inventory-quantities quantityOnHand and the line", async () => {
  // Stock quantities are computed in the service (ledger/stock.ts), not in SQL: checked there.
  const order = await t.knex('pchord').where({ ordnum: STOCK_PO }).first('_idnum', 'locnum');
  const line = await t.knex('pcorln').where({ _idref: order._idnum, linnum: 1 }).first('prtnum');
  const qty = await t.knex('invqty').where({ prtnum: line.prtnum, locnum: order.locnum }).first('_idnum');
  const where = { _idnum: qty._idnum };
  await withPlanted('invqty', where, 'qtyohn', '9999999999.0000', 4, () =>
    withPlanted('invqty', where, 'qtyavl', '9999999999.0000', 4, async () => {
      await assertReceiptRefused({ entity: 'inventory-quantities', field: 'quantityOnHand', recordId: String(qty._idnum).toLowerCase() }, 'lines[0]');
      const row = await t.knex('invqty').where(where).first('qtyohn', 'qtyavl');
      assert.deepEqual([row.qtyohn, row.qtyavl].map((v) => dialect().decodeDecimal(v, 4)!.toFixed(4)), ['9999999999.0000', '9999999999.0000'], 'the quantities are unchanged');
    }),
  );
});

test("a receipt that brings a line's received to date exactly to 9999999999.9999 posts", async () => {
  const { line } = await orderTargets();
  await withValue(line, '9999999997.9999', 4, async () => {
    const res = await post(RECEIPTS, receipt(), `bb-${randomUUID()}`);
    assert.equal(res.status, 200, res.text);
    const [row] = await queryRows<{ v: unknown }>(t.knex, 'select rcvdte as v from pcorln where _idnum = ?', [line.id]);
    assert.equal(dialectFor(t.engine === 'sqlite' ? 'sqlite' : 'postgres').decodeDecimal(row!.v, 4)!.toFixed(4), QUANTITY_MAX);
  });
});
