/**
 * First postings to a balance cell, concurrently: N journals and N AP invoices fired at once into
 * accounts and a period that have no lgrbal rows yet. Under READ COMMITTED (PostgreSQL) the old
 * UPDATE / SELECT / INSERT sequence could see rows another posting had just committed and send
 * an empty INSERT (a 500). Now: no 500, every posting exactly once, and lgrbal equals the sum of
 * the journal lines per account and period, checked in the database.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { FX, apInvoice, countRows, installPostingFixture, journal } from '../../support/posting-fixture';
import { Dec } from '../../../src/storage/decimal';
import { dialectFor, engineOf } from '../../../src/storage/dialect';
import { addToLedgerBalances, ledgerBalanceUpserts } from '../../../src/storage/balances';
import { decimalLimit } from '../../../src/engines/posting/limits';

const bounds = { debit: decimalLimit('ledger-balances', 'debitTotal'), credit: decimalLimit('ledger-balances', 'creditTotal') };

let t: TestApp;
const N = 40;
const A = FX.accounts;
/** Active accounts of the seed the journals spread over (many cells created at the same moment). */
const SEED_ACCOUNTS = [1000, 1010, 1020, 1030, 1110, 1115, 1120, 1210, 1220, 1310, 1400, 1510, 1520, 1590, 2010, 2015, 2050, 2100, 2110, 2120];
const ACCOUNTS = [A.cash, A.apControl, A.retainagePayable, A.wip, A.directExpense, A.overhead, A.equipmentExpense, ...SEED_ACCOUNTS];

useTestApp(async (app) => {
  t = app;
  await installPostingFixture(t.knex);
  // No balance rows yet for the accounts (so lgrbal must come to the sum of this file's journal lines).
  await t.knex('lgrbal').whereIn('lgract', ACCOUNTS).del();
}, { config: { dbPoolMax: 10 } });

function keyed(path: string, key: string, body: unknown) {
  return t.http.post(path).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

/** lgrbal per account/year/period against the sum of the lines of the journals posted here (FB-...), for ACCOUNTS. */
async function balancesAgainstLines(): Promise<{ balances: Map<string, string>; lines: Map<string, string> }> {
  const dialect = dialectFor(engineOf(t.knex));
  const dec = (raw: unknown) => dialect.decodeDecimal(raw, 2) ?? new Dec(0);
  const balances = new Map<string, string>();
  for (const r of await t.knex('lgrbal').whereIn('lgract', ACCOUNTS).select('lgract', 'postyr', 'actprd', 'dbttot', 'crdtot')) {
    balances.set(`${r.lgract}/${r.postyr}/${r.actprd}`, `${dec(r.dbttot).toFixed(2)}/${dec(r.crdtot).toFixed(2)}`);
  }
  const sums = new Map<string, { d: Dec; c: Dec }>();
  const rows = await t
    .knex('lgtnln as l')
    .join('lgrtrn as h', 'h._idnum', 'l._idref')
    .whereIn('l.lgract', ACCOUNTS)
    .where('h.trnnum', 'like', 'FB-%')
    .select('l.lgract', 'h.postyr', 'h.actprd', 'l.dbtamt', 'l.crdamt');
  for (const r of rows) {
    const k = `${r.lgract}/${r.postyr}/${r.actprd}`;
    const s = sums.get(k) ?? { d: new Dec(0), c: new Dec(0) };
    s.d = s.d.plus(dec(r.dbtamt));
    s.c = s.c.plus(dec(r.crdamt));
    sums.set(k, s);
  }
  const lines = new Map<string, string>();
  for (const [k, s] of sums) lines.set(k, `${s.d.toFixed(2)}/${s.c.toFixed(2)}`);
  return { balances, lines };
}

test(`${N} journals and ${N} AP invoices at once into empty balance cells: no 500, each posted once, balances = lines`, async () => {
  const before = await t.knex('lgrbal').whereIn('lgract', ACCOUNTS).count<{ n: number | string }[]>({ n: '*' }).first();
  assert.equal(Number(before?.n), 0, 'no balance rows for the accounts before');

  const journals = Array.from({ length: N }, (_, i) => {
    // Alternate the account sets so that postings create cells in different combinations.
    const cents = (base: number) => Number(new Dec(base).plus(new Dec(i).div(100)).toFixed(2));
    // Every third journal spreads over 7 seed accounts (a rotating window): cells created by several postings at once.
    const spread = Array.from({ length: 7 }, (_, j) => SEED_ACCOUNTS[(i + j * 3) % SEED_ACCOUNTS.length]!);
    const lines =
      i % 3 === 2
        ? [
            ...spread.slice(0, 6).map((account, j) => ({ lineNumber: j + 1, ledgerAccount: account, description: 'Spread', debitAmount: 1 + j })),
            { lineNumber: 7, ledgerAccount: spread[6]!, description: 'Spread', creditAmount: 21 },
          ]
        : i % 3 === 0
        ? [
            { lineNumber: 1, ledgerAccount: A.overhead, description: 'Rent', debitAmount: cents(10) },
            { lineNumber: 2, ledgerAccount: A.cash, description: 'Paid', creditAmount: cents(10) },
          ]
        : [
            { lineNumber: 1, ledgerAccount: A.equipmentExpense, description: 'Fuel', debitAmount: 5 },
            { lineNumber: 2, ledgerAccount: A.wip, description: 'WIP', debitAmount: cents(1) },
            { lineNumber: 3, ledgerAccount: A.cash, description: 'Paid', creditAmount: cents(6) },
          ];
    return keyed('/api/v3/ledger-transactions', `fb-j-${i}`, journal(`FB-J-${i}`, { lines }));
  });
  const invoices = Array.from({ length: N }, (_, i) => keyed('/api/v3/ap-invoices', `fb-i-${i}`, apInvoice(`FB-I-${i}`, 1 + (i % 3))));
  const responses = await Promise.all([...journals, ...invoices]);

  const failures = responses.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.text.slice(0, 300)}`);
  assert.deepEqual(failures, [], 'every posting answered 200');
  assert.ok(responses.every((r) => r.headers['idempotency-status'] === 'applied'));

  for (let i = 0; i < N; i += 1) {
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: `FB-J-${i}` }), 1, `journal FB-J-${i} posted once`);
    assert.equal(await countRows(t.knex, 'acpinv', { invnum: `FB-I-${i}` }), 1, `invoice FB-I-${i} posted once`);
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: `FB-I-${i}` }), 1, `the journal of invoice FB-I-${i} posted once`);
  }

  const { balances, lines } = await balancesAgainstLines();
  assert.ok(balances.size >= 4, `balance cells created: ${balances.size}`);
  assert.deepEqual(Object.fromEntries([...balances].sort()), Object.fromEntries([...lines].sort()), 'lgrbal = sum of the journal lines per account and period');
  // One row per cell (the unique constraint holds it; counted anyway).
  const cells = await t.knex('lgrbal').whereIn('lgract', ACCOUNTS).count<{ n: number | string }[]>({ n: '*' }).first();
  assert.equal(Number(cells?.n), balances.size);

  // A replay of one of them changes nothing.
  const again = await keyed('/api/v3/ledger-transactions', 'fb-j-0', journal('FB-J-0', { lines: [
    { lineNumber: 1, ledgerAccount: A.overhead, description: 'Rent', debitAmount: 10 },
    { lineNumber: 2, ledgerAccount: A.cash, description: 'Paid', creditAmount: 10 },
  ] }));
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  const after = await balancesAgainstLines();
  assert.deepEqual(after.balances, balances);
});

test('a cell predicted missing that another posting creates meanwhile is added to, not duplicated (storage, two transactions)', async () => {
  const { services, knex } = t;
  const options = { dialect: services.dialect, numbers: services.numbers, user: 'api:test', now: new Date(), bounds };
  const cell = { account: A.directExpense, year: FX.year, period: 3 };
  await knex('lgrbal').where({ lgract: cell.account, postyr: cell.year, actprd: cell.period }).del();
  const change = (debit: string, credit: string) => [{ ...cell, debit: new Dec(debit), credit: new Dec(credit) }];
  if (t.engine === 'sqlite') {
    // One writer: the second posting sees the first's row and carries its record number.
    await knex.transaction((trx) => addToLedgerBalances(trx, change('1.10', '0'), options));
    await knex.transaction((trx) => addToLedgerBalances(trx, change('0', '2.25'), options));
  } else {
    // T1 creates the cell and holds its transaction open; T2 predicts the cell missing (T1 has not
    // committed), waits, and must add to T1's row once T1 commits.
    const t1 = await knex.transaction();
    await addToLedgerBalances(t1, change('1.10', '0'), options);
    const t2 = await knex.transaction();
    const second = addToLedgerBalances(t2, change('0', '2.25'), options);
    await new Promise((r) => setTimeout(r, 300));
    await t1.commit();
    await second;
    await t2.commit();
  }
  const rows = await knex('lgrbal').where({ lgract: cell.account, postyr: cell.year, actprd: cell.period });
  assert.equal(rows.length, 1, 'one row for the cell');
  const dialect = dialectFor(engineOf(knex));
  assert.equal(dialect.decodeDecimal(rows[0].dbttot, 2)!.toFixed(2), '1.10');
  assert.equal(dialect.decodeDecimal(rows[0].crdtot, 2)!.toFixed(2), '2.25');
});

test('SQL Server: the balance upsert is a MERGE WITH (HOLDLOCK) per cell, in account order, under 2,100 parameters', () => {
  const mssql = knexFactory({ client: 'mssql' });
  const rows = Array.from({ length: 400 }, (_, i) => ({
    id: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
    recordNumber: 1000 + i,
    account: 100 + i,
    year: 2026,
    period: 11,
    debit: new Dec('12.34'),
    credit: new Dec(0),
  }));
  const statements = ledgerBalanceUpserts(mssql, { dialect: dialectFor('mssql'), user: 'api:test', now: '2026-11-23 10:00:00', bounds }, rows);
  assert.ok(statements.length >= 3, `${statements.length} batches`);
  let accountsSeen: number[] = [];
  for (const s of statements) {
    const native = s.toSQL().toNative();
    assert.ok(native.bindings.length < 2100, `${native.bindings.length} parameters`);
    const merges = native.sql.split('\n');
    for (const m of merges) {
      assert.match(m, /^MERGE INTO \[lgrbal\] WITH \(HOLDLOCK\) AS t USING \(VALUES \(@p\d+, @p\d+, @p\d+, CAST\(@p\d+ AS DECIMAL\(14,2\)\), CAST\(@p\d+ AS DECIMAL\(14,2\)\), @p\d+, @p\d+\)\) AS s/);
      assert.match(m, /ON t\.\[lgract\] = s\.\[lgract\] AND t\.\[postyr\] = s\.\[postyr\] AND t\.\[actprd\] = s\.\[actprd\]/);
      // Past its column the total is NULL (refused by 515, named after the rollback: decision 0441), not 8115.
      const added = (c: string) => `\\[${c}\\] = CASE WHEN \\(1 = 0 and \\[t\\]\\.\\[${c}\\] is null\\) THEN NULL WHEN abs\\(\\[t\\]\\.\\[${c}\\] \\+ \\[s\\]\\.\\[${c}\\]\\) > 999999999999\\.99 THEN NULL ELSE \\[t\\]\\.\\[${c}\\] \\+ \\[s\\]\\.\\[${c}\\] END`;
      assert.match(m, new RegExp(`WHEN MATCHED THEN UPDATE SET ${added('dbttot')}, ${added('crdtot')}, \\[upddte\\] = @p\\d+, \\[updusr\\] = @p\\d+ WHEN NOT MATCHED`));
      assert.match(m, /WHEN NOT MATCHED THEN INSERT \(\[_idnum\], \[recnum\], \[lgract\], \[postyr\], \[actprd\], \[dbttot\], \[crdtot\], \[insusr\], \[updusr\]\)/);
      assert.ok(m.endsWith(';'), 'a MERGE ends with a semicolon');
    }
    // 11 parameters per MERGE, the account first.
    for (let i = 0; i < native.bindings.length; i += 11) accountsSeen.push(Number(native.bindings[i]));
    assert.equal(native.bindings.length, merges.length * 11);
  }
  assert.deepEqual(accountsSeen, rows.map((r) => r.account), 'every cell once, in account order');
  accountsSeen = [];
  void mssql.destroy();
});

test('PostgreSQL / SQLite: the balance upsert is one INSERT ... ON CONFLICT DO UPDATE adding to the row, NULL (refused) where the stored total is no decimal', () => {
  for (const client of ['pg', 'better-sqlite3'] as const) {
    const db = knexFactory({ client, useNullAsDefault: true });
    const engine = client === 'pg' ? 'postgres' : 'sqlite';
    const rows = [
      { id: 'a', recordNumber: 1, account: 10, year: 2026, period: 11, debit: new Dec(1), credit: new Dec(0) },
      { id: 'b', recordNumber: 2, account: 20, year: 2026, period: 11, debit: new Dec(0), credit: new Dec(1) },
    ];
    const [s, ...rest] = ledgerBalanceUpserts(db, { dialect: dialectFor(engine), user: 'u', now: 'now', bounds }, rows);
    assert.equal(rest.length, 0);
    const sql = s!.toSQL().sql.replace(/`/g, '"');
    // The stored total is tested as the dialect tests a stored decimal (docs/decisions/0390).
    const notStored = (column: string) => (engine === 'postgres' ? `cast\\("lgrbal"\\."${column}" as text\\) in \\('NaN', 'Infinity', '-Infinity'\\)` : `typeof\\("lgrbal"\\."${column}"\\) not in \\('integer', 'null'\\)`);
    // ... and where the sum would lie beyond the column (decision 0441), the bound as the engine stores it.
    const bound = engine === 'postgres' ? '999999999999\\.99' : '99999999999999';
    const sum = (column: string) => `"lgrbal"\\."${column}" \\+ "excluded"\\."${column}"`;
    const added = (column: string) => `"${column}" = CASE WHEN ${notStored(column)} THEN NULL WHEN abs\\(${sum(column)}\\) > ${bound} THEN NULL ELSE ${sum(column)} END`;
    assert.match(sql, new RegExp(`^insert into "lgrbal" .* on conflict \\("lgract", "postyr", "actprd"\\) do update set ${added('dbttot')}, ?${added('crdtot')}`));
    void db.destroy();
  }
});
