/**
 * A purchase order receipt changes three stored quantities by a computed change in SQL
 * (src/engines/posting/records/query.ts `increment` / `decrementToZero`): the order's received
 * total, each received line's received-to-date and the location's quantity on order. A value
 * another program wrote there that is no decimal as the service stores one (text or a fraction in
 * SQLite's scaled-integer column, NaN in PostgreSQL's numeric) is never added to: SQLite's + would
 * read text as 0 (or its numeric prefix) and overwrite it with an invented quantity, PostgreSQL's
 * NaN would swallow the amount (and `NaN > x` is true there, so decrementToZero kept NaN). The
 * receipt answers 502 STORED_VALUE_UNREADABLE naming the entity, record and published field,
 * posts nothing (no receipt invoice, no journal, no stock movement), leaves the bad value as it
 * was and moves no data change counter; a dry run answers the same; a receipt to a clean order
 * still posts (docs/decisions/0391).
 *
 * The order and its lines are read (every published field) before they are changed, so a bad
 * received total or received-to-date planted before the request is refused by that read (0370);
 * the computed change alone guards what is written between that read and the update, which this
 * file provokes through the posting's hook: another program's write on another connection, as
 * PostgreSQL's READ COMMITTED lets it land (SQLite's BEGIN IMMEDIATE excludes it: there the value
 * is planted in the posting's own transaction, which is the same statement order).
 */
import { randomUUID } from 'node:crypto';
import test from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { queryRows } from '../../support/invariants';
import { bookFootprint, countRows, openSeedJobOrder } from '../../support/posting-fixture';
import { dialectFor } from '../../../src/storage/dialect';
import { computedBindings, computedChange } from '../../../src/engines/posting/records/query';
import { decimalLimit } from '../../../src/engines/posting/limits';

let t: TestApp;
usePostingApp((app) => (t = app));

const PATH = '/api/v3/purchase-order-receipts';
/** An Open stock order of the seed: location 1, parts on every line. */
const STOCK_PO = 'PO26-000065';
/** The tables a receipt writes: none may move when it is refused. */
const POSTED_TABLES = ['acpinv', 'apivln', 'lgrtrn', 'lgtnln', 'lgrbal', 'invhst', 'jobcst'] as const;

const counts = () => bookFootprint(t.knex, POSTED_TABLES);

function receive(body: unknown, key: string, query = '') {
  return t.http.post(`${PATH}${query}`).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

interface Target {
  table: string;
  column: string;
  entity: string;
  field: string;
  /** The row's key (`_idnum`). */
  id: string;
}

async function targets(): Promise<{ order: Target; line: Target; onOrder: Target }> {
  const order = await t.knex('pchord').where({ ordnum: STOCK_PO }).first('_idnum', 'locnum');
  const line = await t.knex('pcorln').where({ _idref: order._idnum, linnum: 1 }).first('_idnum', 'prtnum');
  const qty = await t.knex('invqty').where({ prtnum: line.prtnum, locnum: order.locnum }).first('_idnum');
  assert.ok(qty, 'the part of line 1 has a quantity row at the order location');
  return {
    order: { table: 'pchord', column: 'rcvttl', entity: 'purchase-orders', field: 'receivedTotal', id: String(order._idnum) },
    line: { table: 'pcorln', column: 'rcvdte', entity: 'purchase-orders', field: 'lines.receivedToDate', id: String(line._idnum) },
    onOrder: { table: 'invqty', column: 'qtyord', entity: 'inventory-quantities', field: 'quantityOnOrder', id: String(qty._idnum) },
  };
}

/** The cell as stored: its raw value and its stored type (SQLite) or text (PostgreSQL). */
async function cell(target: Target): Promise<{ raw: unknown; type: string }> {
  const type = t.engine === 'sqlite' ? `typeof(${target.column})` : `cast(${target.column} as text)`;
  const [row] = await queryRows<{ raw: unknown; type: string }>(t.knex, `select ${target.column} as raw, ${type} as type from ${target.table} where _idnum = ?`, [target.id]);
  return { raw: row!.raw, type: String(row!.type) };
}

const body = () => ({ orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 2 }] });

/** Plants `bad` (SQL text) into the target before the request, runs `fn`, restores the cell. */
async function withBad(target: Target, bad: string, fn: () => Promise<void>): Promise<void> {
  const [original] = await queryRows<{ v: unknown }>(t.knex, `select ${target.column} as v from ${target.table} where _idnum = ?`, [target.id]);
  await t.knex.raw(`update ${target.table} set ${target.column} = ${bad} where _idnum = ?`, [target.id]);
  try {
    await fn();
  } finally {
    await t.knex(target.table).where({ _idnum: target.id }).update({ [target.column]: original!.v });
  }
}

/** Every line the receipt changes and the order: as stored, to show nothing was received. */
async function received(): Promise<unknown[]> {
  const order = await t.knex('pchord').where({ ordnum: STOCK_PO }).first('_idnum', 'rcvttl', 'status');
  const lines = await t.knex('pcorln').where({ _idref: order._idnum }).orderBy('linnum').select('rcvdte');
  return [order.rcvttl, order.status, ...lines.map((l: { rcvdte: unknown }) => l.rcvdte)];
}

/**
 * The refusal, asserted: 502 naming `target`, nothing posted (no receipt invoice, journal or stock
 * movement, nothing received), the data change counter unmoved, the bad value unchanged, the key
 * replaying it and a dry run answering the same.
 */
async function assertRefused(target: Target, receipt: Record<string, unknown>, parentId?: string): Promise<void> {
  const bad = await cell(target);
  const before = { ...(await counts()), received: await received() };
  const key = `pu-${randomUUID()}`;
  const res = await receive(receipt, key);
  assert.equal(res.status, 502, res.text);
  const problem = assertProblem(res, 'STORED_VALUE_UNREADABLE', PATH);
  assert.deepEqual(problem.unreadableValue, { entity: target.entity, field: target.field, recordId: target.id.toLowerCase(), ...(parentId ? { parentId: parentId.toLowerCase() } : {}) });
  assert.equal(res.headers['idempotency-status'], 'applied');
  assert.deepEqual({ ...(await counts()), received: await received() }, before, 'nothing posted, nothing received, no data change');
  assert.deepEqual(await cell(target), bad, 'the bad value is unchanged');

  const again = await receive(receipt, key);
  assert.equal(again.status, 502, again.text);
  assert.equal(again.headers['idempotency-status'], 'replayed');
  assert.deepEqual(again.body.unreadableValue, problem.unreadableValue);

  const dry = await receive(receipt, `pu-${randomUUID()}`, '?dryRun=true');
  assert.equal(dry.status, 502, dry.text);
  assert.deepEqual(assertProblem(dry, 'STORED_VALUE_UNREADABLE', PATH).unreadableValue, problem.unreadableValue);
  assert.deepEqual({ ...(await counts()), received: await received() }, before, 'the dry run posted nothing either');
  assert.deepEqual(await cell(target), bad, 'the bad value is unchanged');
}

/** A receipt to a clean order (a job order: no stock, no quantity on order) posts while the bad value stays. */
async function assertCleanOrderPosts(target: Target): Promise<void> {
  const bad = await cell(target);
  const orderNumber = `TPO-UI-${randomUUID().slice(0, 8)}`;
  await openSeedJobOrder(t.knex, orderNumber);
  const before = await counts();
  const res = await receive({ orderNumber, receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 1 }] }, `pu-${randomUUID()}`);
  assert.equal(res.status, 200, res.text);
  const after = await counts();
  assert.equal(after.acpinv, before.acpinv! + 1, 'the receipt invoice');
  assert.ok(after.dataChangeToken! > before.dataChangeToken!, 'a posting moves the data change counter (what the refusal must not)');
  assert.deepEqual(await cell(target), bad, 'the bad value is unchanged');
}

const sqliteOr = (sqlite: string) => (t.engine === 'sqlite' ? sqlite : "'NaN'");

test("a stock receipt whose location's quantity on order holds text (SQLite) or NaN (PostgreSQL): 502 naming inventory-quantities quantityOnOrder, nothing posted; a clean order's receipt posts", async () => {
  const { onOrder } = await targets();
  await withBad(onOrder, sqliteOr("'abc'"), async () => {
    assert.equal((await cell(onOrder)).type, t.engine === 'sqlite' ? 'text' : 'NaN', 'the bad value is stored as planted');
    await assertRefused(onOrder, body());
    await assertCleanOrderPosts(onOrder);
  });
});

test("a stock receipt whose location's quantity on order holds a fraction (SQLite REAL 12.5 in its integer column) or NaN (PostgreSQL): the same 502, nothing posted", async () => {
  const { onOrder } = await targets();
  await withBad(onOrder, sqliteOr('12.5'), async () => {
    assert.equal((await cell(onOrder)).type, t.engine === 'sqlite' ? 'real' : 'NaN', 'the bad value is stored as planted');
    await assertRefused(onOrder, body());
  });
});

test('a receipt to an order whose received total, or a line whose received to date, holds text or a fraction (SQLite) or NaN (PostgreSQL) before the request: 502 naming it (the read of the order refuses it first)', async () => {
  const { order, line } = await targets();
  for (const bad of [sqliteOr("'abc'"), sqliteOr('12.5')]) {
    await withBad(order, bad, () => assertRefused(order, body()));
    const parent = await t.knex('pcorln').where({ _idnum: line.id }).first('_idref');
    await withBad(line, bad, () => assertRefused(line, body(), String(parent._idref)));
  }
});

/**
 * PostgreSQL's READ COMMITTED lets another program's committed write land between the posting's
 * read of the order and its update: the computed change itself must refuse it. The posting is held
 * right after it changed line 1 (a trigger of this test waits for an advisory lock the test holds),
 * the other program writes NaN and commits, the posting goes on. SQLite's BEGIN IMMEDIATE excludes
 * every other writer for the whole posting: no such write can land there.
 */
test('PostgreSQL: NaN written into the received total, or a later line\'s received to date, by another program while the receipt posts: 502 naming it, nothing posted', async () => {
  if (t.engine !== 'postgres') return;
  const { order, line } = await targets();
  const line2 = await t.knex('pcorln').where({ _idref: order.id, linnum: 2 }).first('_idnum');
  const second: Target = { ...line, id: String(line2._idnum) };
  const lock = 7391;
  await t.knex.raw(`create or replace function test_hold_receipt() returns trigger language plpgsql as $$ begin
    if new.linnum = 1 then perform pg_advisory_xact_lock(${lock}); end if; return new; end $$`);
  await t.knex.raw('create trigger test_hold_receipt after update on pcorln for each row execute function test_hold_receipt()');
  try {
    for (const [target, parentId] of [[order, undefined], [second, order.id]] as const) {
      const [original] = await queryRows<{ v: unknown }>(t.knex, `select ${target.column} as v from ${target.table} where _idnum = ?`, [target.id]);
      const receipt = { orderNumber: STOCK_PO, receiptDate: '2026-11-20', lines: [{ lineNumber: 1, updateQuantity: 1 }, { lineNumber: 2, updateQuantity: 1 }] };
      const hold = await t.knex.transaction();
      try {
        await hold.raw(`select pg_advisory_xact_lock(${lock})`);
        const key = `pu-${randomUUID()}`;
        const pending = receive(receipt, key).then((r) => r);
        // Wait (for a condition, not a time) until the posting waits for the lock: it read the order and changed line 1.
        const deadline = Date.now() + 20_000;
        for (;;) {
          const [waiting] = await queryRows<{ n: unknown }>(t.knex, `select count(*) as n from pg_locks where locktype = 'advisory' and objid = ? and not granted`, [lock]);
          if (Number(waiting!.n) > 0) break;
          assert.ok(Date.now() < deadline, 'the posting reached line 1');
          await new Promise((r) => setTimeout(r, 20));
        }
        // The other program's write, committed while the posting is under way.
        await t.knex.raw(`update ${target.table} set ${target.column} = 'NaN' where _idnum = ?`, [target.id]);
        const bad = await cell(target);
        const before = { ...(await counts()), received: await received() };
        await hold.commit();
        const res = await pending;
        assert.equal(res.status, 502, res.text);
        const problem = assertProblem(res, 'STORED_VALUE_UNREADABLE', PATH);
        assert.deepEqual(problem.unreadableValue, { entity: target.entity, field: target.field, recordId: target.id.toLowerCase(), ...(parentId ? { parentId: parentId.toLowerCase() } : {}) });
        assert.deepEqual({ ...(await counts()), received: await received() }, before, 'nothing posted, nothing received, no data change');
        assert.deepEqual(await cell(target), bad, 'the NaN is unchanged');
      } finally {
        if (!hold.isCompleted()) await hold.rollback();
        await t.knex(target.table).where({ _idnum: target.id }).update({ [target.column]: original!.v });
      }
    }
  } finally {
    await t.knex.raw('drop trigger if exists test_hold_receipt on pcorln');
    await t.knex.raw('drop function if exists test_hold_receipt()');
  }
});

test('the computed changes compile on every engine to one UPDATE whose value is NULL where the stored one is no decimal (SQL Server: never) or where the result lies beyond the column (decision 0441)', () => {
  const notStored: Record<string, string> = {
    sqlite: "typeof(`rcvttl`) not in ('integer', 'null')",
    postgres: `cast("rcvttl" as text) in ('NaN', 'Infinity', '-Infinity')`,
    mssql: '(1 = 0 and [rcvttl] is null)',
  };
  // The bound as the engine stores it (SQLite: the scaled integer).
  const limit: Record<string, string> = { sqlite: '99999999999999', postgres: '999999999999.99', mssql: '999999999999.99' };
  const bound = { max: decimalLimit('purchase-orders', 'receivedTotal'), scale: 2 };
  for (const [client, engine] of [['better-sqlite3', 'sqlite'], ['pg', 'postgres'], ['mssql', 'mssql']] as const) {
    const db = knexFactory({ client, useNullAsDefault: true });
    const q = (id: string) => (engine === 'sqlite' ? `\`${id}\`` : engine === 'postgres' ? `"${id}"` : `[${id}]`);
    const dialect = dialectFor(engine);
    const up = db('pchord').where({ _idnum: 'x' }).update({ rcvttl: computedChange(db, dialect, 'rcvttl', 'increment', 5, bound) }).toSQL();
    const plus = `${q('rcvttl')} + ?`;
    assert.ok(up.sql.includes(`set ${q('rcvttl')} = CASE WHEN ${notStored[engine]} THEN NULL WHEN abs(${plus}) > ${limit[engine]} THEN NULL ELSE ${plus} END`), `${engine}: ${up.sql}`);
    assert.deepEqual(up.bindings.slice(0, 2), [5, 5]);
    assert.deepEqual(computedBindings('increment', 5), [5, 5]);
    const down = db('pchord').where({ _idnum: 'x' }).update({ rcvttl: computedChange(db, dialect, 'rcvttl', 'decrementToZero', 5, bound) }).toSQL();
    const minus = `CASE WHEN ${q('rcvttl')} > ? THEN ${q('rcvttl')} - ? ELSE 0 END`;
    assert.ok(down.sql.includes(`set ${q('rcvttl')} = CASE WHEN ${notStored[engine]} THEN NULL WHEN abs(${minus}) > ${limit[engine]} THEN NULL ELSE ${minus} END`), `${engine}: ${down.sql}`);
    assert.deepEqual(down.bindings.slice(0, 4), [5, 5, 5, 5]);
    assert.deepEqual(computedBindings('decrementToZero', 5), [5, 5, 5, 5]);
    void db.destroy();
  }
});
