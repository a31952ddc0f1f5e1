/**
 * A posting adds its debits and credits to the ledger balances (lgrbal) in one upsert
 * (src/storage/balances.ts). A balance total another program wrote that is no decimal as the
 * service stores one (text or a fraction in SQLite's scaled-integer column, NaN in PostgreSQL's
 * numeric) is never added to: SQLite's + would read text as 0 and overwrite it with an
 * invented total, PostgreSQL's NaN would swallow the amounts. The posting answers 502
 * STORED_VALUE_UNREADABLE naming the ledger-balances record and field, posts nothing (no journal,
 * no line, no balance moved) and leaves the bad cell as it was; a journal to clean cells still
 * posts (docs/decisions/0390).
 */
import { randomUUID } from 'node:crypto';
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { queryRows } from '../../support/invariants';
import { FX, apInvoice, bookFootprint, countRows, journal } from '../../support/posting-fixture';

let t: TestApp;
usePostingApp((app) => (t = app));

const PATH = '/api/v3/ledger-transactions';
const A = FX.accounts;
/** The tables a journal writes: none may move when it is refused. */
const POSTED_TABLES = ['lgrtrn', 'lgtnln', 'lgrbal'] as const;

const counts = () => bookFootprint(t.knex, POSTED_TABLES);

function post(body: unknown, key: string, query = '') {
  return t.http.post(`${PATH}${query}`).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

/** A journal of two lines: `debitAccount` debited, `creditAccount` credited, 10.00 each. */
function twoLines(transactionNumber: string, debitAccount: number, creditAccount: number) {
  return journal(transactionNumber, {
    lines: [
      { lineNumber: 1, ledgerAccount: debitAccount, description: 'Debit', debitAmount: 10 },
      { lineNumber: 2, ledgerAccount: creditAccount, description: 'Credit', creditAmount: 10 },
    ],
  });
}

type Column = 'dbttot' | 'crdtot';

/** The cell of `account` in the open period as stored: its id, the raw value of `column` and its stored type. */
async function cell(account: number, column: Column): Promise<{ id: string; raw: unknown; type: string }> {
  const type = t.engine === 'sqlite' ? `typeof(${column})` : `cast(${column} as text)`;
  const [row] = await queryRows<{ _idnum: string; raw: unknown; type: string }>(
    t.knex,
    `select _idnum, ${column} as raw, ${type} as type from lgrbal where lgract = ? and postyr = ? and actprd = ?`,
    [account, FX.year, FX.openPeriod],
  );
  assert.ok(row, `the balance cell of ${account} exists`);
  return { id: String(row._idnum).toLowerCase(), raw: row.raw, type: String(row.type) };
}

/**
 * Plants `bad` (SQL text: another program's value) into `column` of `account`'s cell in the open
 * period (created first by a clean journal), runs `fn`, then restores the cell as it was.
 */
async function withBadCell(account: number, column: Column, bad: string, fn: (before: { id: string; raw: unknown; type: string }) => Promise<void>): Promise<void> {
  // The cell exists (a clean journal posted to it), so the upsert meets it.
  const created = await post(twoLines(`UB-SETUP-${randomUUID().slice(0, 8)}`, account === A.cash ? A.overhead : account, account === A.cash ? A.cash : A.retainagePayable), `ub-${randomUUID()}`);
  assert.equal(created.status, 200, created.text);
  const [original] = await queryRows<{ v: unknown }>(t.knex, `select ${column} as v from lgrbal where lgract = ? and postyr = ? and actprd = ?`, [account, FX.year, FX.openPeriod]);
  await t.knex.raw(`update lgrbal set ${column} = ${bad} where lgract = ? and postyr = ? and actprd = ?`, [account, FX.year, FX.openPeriod]);
  try {
    await fn(await cell(account, column));
  } finally {
    await t.knex('lgrbal').where({ lgract: account, postyr: FX.year, actprd: FX.openPeriod }).update({ [column]: original!.v });
  }
}

/** The refusal, asserted: 502 naming the cell, nothing posted, the cell unchanged, the same answer replayed and on a dry run. */
async function assertRefused(account: number, column: Column, field: string, bad: { id: string; raw: unknown; type: string }, body: Record<string, unknown>): Promise<void> {
  const before = await counts();
  const key = `ub-${randomUUID()}`;
  const res = await post(body, key);
  assert.equal(res.status, 502, res.text);
  const problem = assertProblem(res, 'STORED_VALUE_UNREADABLE', PATH);
  assert.deepEqual(problem.unreadableValue, { entity: 'ledger-balances', field, recordId: bad.id });
  assert.match(problem.detail, new RegExp(`ledger account ${account}`));
  assert.equal(res.headers['idempotency-status'], 'applied');
  // Nothing posted: no journal, no line, no balance row; the bad cell as it was.
  assert.deepEqual(await counts(), before);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: body.transactionNumber }), 0, 'no journal under that number');
  assert.deepEqual(await cell(account, column), bad, 'the bad cell is unchanged');

  // The key replays the refusal, never a success.
  const again = await post(body, key);
  assert.equal(again.status, 502, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(again.body.unreadableValue, problem.unreadableValue);

  // A dry run of it: the same 502.
  const dry = await post(body, `ub-${randomUUID()}`, '?dryRun=true');
  assert.equal(dry.status, 502, dry.text);
  assert.deepEqual(assertProblem(dry, 'STORED_VALUE_UNREADABLE', PATH).unreadableValue, problem.unreadableValue);
  assert.deepEqual(await counts(), before);
  assert.deepEqual(await cell(account, column), bad, 'the bad cell is unchanged');
}

/** A journal to other, clean cells posts while the bad cell stays; the clean cells add up. */
async function assertCleanCellsPost(account: number, column: Column, bad: { id: string; raw: unknown; type: string }): Promise<void> {
  const [wip] = await queryRows<{ d: unknown }>(t.knex, 'select dbttot as d from lgrbal where lgract = ? and postyr = ? and actprd = ?', [A.wip, FX.year, FX.openPeriod]);
  const before = await counts();
  const res = await post(twoLines(`UB-CLEAN-${randomUUID().slice(0, 8)}`, A.wip, A.equipmentExpense), `ub-${randomUUID()}`);
  assert.equal(res.status, 200, res.text);
  const posted = await counts();
  assert.equal(posted.lgrtrn, before.lgrtrn! + 1);
  assert.ok(posted.dataChangeToken! > before.dataChangeToken!, 'a posting moves the data change counter (what the refusal must not)');
  const [after] = await queryRows<{ d: unknown }>(t.knex, 'select dbttot as d from lgrbal where lgract = ? and postyr = ? and actprd = ?', [A.wip, FX.year, FX.openPeriod]);
  const scale = t.engine === 'sqlite' ? 100 : 1;
  assert.equal((Number(after!.d) - Number(wip?.d ?? 0)) / scale, 10, 'the clean cell moved by the debit');
  assert.deepEqual(await cell(account, column), bad, 'the bad cell is unchanged');
}

test('a journal debiting a balance whose debit total holds text (SQLite) or NaN (PostgreSQL): 502 naming ledger-balances debitTotal, nothing posted, the cell unchanged; a journal to clean cells posts', async () => {
  await withBadCell(A.overhead, 'dbttot', t.engine === 'sqlite' ? "'abc'" : "'NaN'", async (bad) => {
    assert.equal(bad.type, t.engine === 'sqlite' ? 'text' : 'NaN', 'the bad value is stored as planted');
    await assertRefused(A.overhead, 'dbttot', 'debitTotal', bad, twoLines(`UB-D-${randomUUID().slice(0, 8)}`, A.overhead, A.cash));
    await assertCleanCellsPost(A.overhead, 'dbttot', bad);
  });
});

test('a journal crediting a balance whose credit total holds a fraction (SQLite REAL 12.5 in its integer column) or NaN (PostgreSQL): 502 naming ledger-balances creditTotal, nothing posted, the cell unchanged; a journal to clean cells posts', async () => {
  // The debit goes to a clean cell: the refusal is the credit side's, and it names that one.
  // (PostgreSQL's numeric(14,2) refuses 'Infinity' at write, "numeric field overflow": NaN is the one value it takes.)
  await withBadCell(A.cash, 'crdtot', t.engine === 'sqlite' ? '12.5' : "'NaN'", async (bad) => {
    assert.equal(bad.type, t.engine === 'sqlite' ? 'real' : 'NaN', 'the bad value is stored as planted');
    await assertRefused(A.cash, 'crdtot', 'creditTotal', bad, twoLines(`UB-C-${randomUUID().slice(0, 8)}`, A.overhead, A.cash));
    await assertCleanCellsPost(A.cash, 'crdtot', bad);
  });
});

test('an AP invoice whose journal meets such a balance is refused the same way, nothing of it posted', async () => {
  // The AP control account's cell (credited by every AP invoice): created by a clean journal first.
  await withBadCell(A.apControl, 'crdtot', t.engine === 'sqlite' ? "'n/a'" : "'NaN'", async (bad) => {
    const before = { ...(await counts()), acpinv: await countRows(t.knex, 'acpinv'), jobcst: await countRows(t.knex, 'jobcst') };
    const res = await t.http
      .post('/api/v3/ap-invoices')
      .set('x-api-key', t.apiKey)
      .set('Content-Type', 'application/json')
      .set('Idempotency-Key', `ub-${randomUUID()}`)
      .send(apInvoice(`UB-I-${randomUUID().slice(0, 8)}`) as object);
    assert.equal(res.status, 502, res.text);
    const problem = assertProblem(res, 'STORED_VALUE_UNREADABLE', '/api/v3/ap-invoices');
    assert.deepEqual(problem.unreadableValue, { entity: 'ledger-balances', field: 'creditTotal', recordId: bad.id });
    assert.deepEqual({ ...(await counts()), acpinv: await countRows(t.knex, 'acpinv'), jobcst: await countRows(t.knex, 'jobcst') }, before, 'nothing posted');
    assert.deepEqual(await cell(A.apControl, 'crdtot'), bad, 'the bad cell is unchanged');
  });
});
