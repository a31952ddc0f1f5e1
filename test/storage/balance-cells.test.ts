/**
 * Known balance cells (src/storage/balances.ts knownCellsOf): the pre-read of lgrbal is skipped for
 * cells this process has seen in a transaction that COMMITTED, and only for those. Observed through
 * the statements each addToLedgerBalances runs (knex query events) and through the rows written.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import type { TestApp } from '../support/app';
import { usePostingApp } from '../support/posting-app';
import { FX } from '../support/posting-fixture';
import { Dec } from '../../src/storage/decimal';
import { addToLedgerBalances, forgetKnownBalanceCells } from '../../src/storage/balances';
import { decimalLimit } from '../../src/engines/posting/limits';

let t: TestApp;

usePostingApp((app) => (t = app), { invariants: false });

const bounds = { debit: decimalLimit('ledger-balances', 'debitTotal'), credit: decimalLimit('ledger-balances', 'creditTotal') };
const options = () => ({ dialect: t.services.dialect, numbers: t.services.numbers, user: 'api:test', now: new Date(), bounds });
const change = (account: number, period: number, debit: string) => [{ account, year: FX.year, period, debit: new Dec(debit), credit: new Dec(0) }];

/** Runs `fn` and returns the balance pre-reads it sent (SELECT ... FROM lgrbal). */
async function preReads(fn: () => Promise<unknown>): Promise<number> {
  let n = 0;
  const listen = (q: { sql: string }) => {
    if (/^select .* from .lgrbal./i.test(q.sql)) n += 1;
  };
  t.knex.on('query', listen);
  try {
    await fn();
  } finally {
    t.knex.off('query', listen);
  }
  return n;
}

async function cellRow(account: number, period: number): Promise<Record<string, any> | undefined> {
  return t.knex('lgrbal').where({ lgract: account, postyr: FX.year, actprd: period }).first();
}

test('a cell seen in a committed transaction is not read again; the posting still adds to it', async () => {
  forgetKnownBalanceCells(t.services.numbers);
  const account = FX.accounts.overhead;
  const period = 4;
  // Make sure the cell exists (committed), then start from an empty memory.
  await t.knex.transaction((trx) => addToLedgerBalances(trx, change(account, period, '1.00'), options()));
  forgetKnownBalanceCells(t.services.numbers);
  const before = await cellRow(account, period);
  assert.ok(before);

  assert.equal(await preReads(() => t.knex.transaction((trx) => addToLedgerBalances(trx, change(account, period, '2.00'), options()))), 1, 'first sight: read');
  assert.equal(await preReads(() => t.knex.transaction((trx) => addToLedgerBalances(trx, change(account, period, '3.00'), options()))), 0, 'known: not read');
  const afterRow = await cellRow(account, period);
  assert.equal(String(afterRow!.recnum), String(before!.recnum), 'same row, same record number');
  const dialect = t.services.dialect;
  assert.equal(dialect.decodeDecimal(afterRow!.dbttot, 2)!.minus(dialect.decodeDecimal(before!.dbttot, 2)!).toFixed(2), '5.00');
});

test('a cell seen only inside a transaction that rolled back (created there) is read again next time', async () => {
  forgetKnownBalanceCells(t.services.numbers);
  const account = FX.accounts.directExpense;
  const period = 5;
  await t.knex('lgrbal').where({ lgract: account, postyr: FX.year, actprd: period }).del();
  // Created and then seen by a second pre-read in the same transaction, which then rolls back.
  await assert.rejects(
    t.knex.transaction(async (trx: Knex.Transaction) => {
      await addToLedgerBalances(trx, change(account, period, '1.00'), options());
      assert.equal(await preReads(() => addToLedgerBalances(trx, change(account, period, '1.00'), options())), 1);
      throw new Error('roll back');
    }),
    /roll back/,
  );
  assert.equal(await cellRow(account, period), undefined, 'rolled back: no row');
  // Not remembered: the next posting reads, finds nothing and creates the row.
  assert.equal(await preReads(() => t.knex.transaction((trx) => addToLedgerBalances(trx, change(account, period, '4.00'), options()))), 1);
  const row = await cellRow(account, period);
  assert.ok(row, 'created by the committed posting');
  assert.equal(t.services.dialect.decodeDecimal(row.dbttot, 2)!.toFixed(2), '4.00');
});
