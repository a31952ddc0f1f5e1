/**
 * Record numbers taken by rows the accounting system inserted itself. The service checks a
 * counter against max(recnum) of its table once per process (src/storage/numbers.ts); rows
 * inserted afterwards by another program do not advance it, so the next number handed out (from
 * the process's reserved block, or the counter) may already be in the table. Before, every such
 * posting answered 502 DATABASE_REFUSED (a unique violation of `<table>_recnum_uq`) until the
 * process restarted; now the posting re-checks that counter and is retried once with fresh
 * numbers: 200, posted once, the foreign rows untouched, the books balanced. Both engines.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { FX, apInvoice, countRows, journal } from '../../support/posting-fixture';

let t: TestApp;

usePostingApp((app) => (t = app));

/** Rows the accounting system inserts with the next `count` record numbers after `from`. */
async function foreignInvoices(from: number, count: number): Promise<number[]> {
  const numbers = Array.from({ length: count }, (_, i) => from + 1 + i);
  for (const recnum of numbers) {
    await t.knex('acpinv').insert({ _idnum: randomUUID(), recnum, vndnum: FX.vendor.withDefaults, invnum: `DESKTOP-${recnum}`, invdte: FX.openDate, duedte: FX.openDate, dscrpt: 'entered in the accounting system', status: 1, actprd: FX.openPeriod, postyr: FX.year });
  }
  return numbers;
}

test('an AP invoice whose next record number the accounting system took meanwhile posts (200, once) with a number past it', async () => {
  const first = await t.post('/api/v3/ap-invoices', apInvoice(`COLL-${randomUUID().slice(0, 8)}`, 2));
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const taken = await foreignInvoices(first.body.document.recordNumber, 5);
  const number = `COLL-${randomUUID().slice(0, 8)}`;
  const second = await t.post('/api/v3/ap-invoices', apInvoice(number, 2));
  assert.equal(second.status, 200, JSON.stringify(second.body));
  assert.ok(second.body.document.recordNumber > taken[taken.length - 1]!, `record number ${second.body.document.recordNumber} is past the foreign rows (${taken.join(', ')})`);
  assert.equal(await countRows(t.knex, 'acpinv', { invnum: number }), 1, 'posted once');
  for (const recnum of taken) assert.equal((await t.knex('acpinv').where({ recnum }).first())?.invnum, `DESKTOP-${recnum}`, 'the foreign row is untouched');
  assert.ok(
    t.logs.some((l) => l.msg === 'record number already taken by a row inserted outside the service: counter re-checked, posting retried' && l.counter === 'acpinv'),
    'the retry is logged with its counter',
  );
  const third = await t.post('/api/v3/ap-invoices', apInvoice(`COLL-${randomUUID().slice(0, 8)}`, 2));
  assert.equal(third.status, 200, 'and the postings after it');
});

test('a journal whose record number was taken meanwhile: same recovery, and with an Idempotency-Key the replay answers the one posting', async () => {
  const first = await t.post('/api/v3/ledger-transactions', journal(`COLL-J-${randomUUID().slice(0, 8)}`));
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const next = Number(first.body.document.recordNumber) + 1;
  await t.knex('lgrtrn').insert({ _idnum: randomUUID(), recnum: next, trnnum: `DESKTOP-${next}`, trndte: FX.openDate, dscrpt: 'entered in the accounting system', srcnum: FX.source.journal, status: 1, dbttot: 0, crdtot: 0, entdte: FX.openDate, usrnme: 'desktop', actprd: FX.openPeriod, postyr: FX.year });
  const key = randomUUID();
  const number = `COLL-J-${randomUUID().slice(0, 8)}`;
  const posted = await t.post('/api/v3/ledger-transactions', journal(number)).set('Idempotency-Key', key);
  assert.equal(posted.status, 200, JSON.stringify(posted.body));
  assert.ok(posted.body.document.recordNumber > next);
  const replay = await t.post('/api/v3/ledger-transactions', journal(number)).set('Idempotency-Key', key);
  assert.equal(replay.status, 200);
  assert.equal(replay.headers['idempotency-status'], 'replayed');
  assert.deepEqual(replay.body, posted.body);
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: number }), 1, 'posted once');
  assert.equal((await t.knex('lgrtrn').where({ recnum: next }).first())?.trnnum, `DESKTOP-${next}`, 'the foreign row is untouched');
  // The stand-in for the accounting system's journal has no lines (the books' invariants after each test want them).
  await t.knex('lgrtrn').where({ recnum: next }).delete();
});

test('the counter is read from each engine’s unique violation, and from nothing else', async () => {
  const { collidedCounter } = await import('../../../src/storage/numbers');
  // PostgreSQL (pg's error fields), SQLite (better-sqlite3's message), SQL Server (2601, the index in the message).
  assert.equal(collidedCounter(Object.assign(new Error('duplicate key value violates unique constraint "acpinv_recnum_uq"'), { code: '23505', constraint: 'acpinv_recnum_uq' })), 'acpinv');
  assert.equal(collidedCounter(Object.assign(new Error('UNIQUE constraint failed: lgrtrn.recnum'), { code: 'SQLITE_CONSTRAINT_UNIQUE' })), 'lgrtrn');
  assert.equal(collidedCounter(Object.assign(new Error("Cannot insert duplicate key row in object 'dbo.jobcst' with unique index 'jobcst_recnum_uq'. The duplicate key value is (5)."), { number: 2601 })), 'jobcst');
  // Wrapped as the boundary wraps it (the problem's cause).
  assert.equal(collidedCounter(new Error('refused', { cause: Object.assign(new Error('x'), { constraint: 'invhst_recnum_uq' }) })), 'invhst');
  assert.equal(collidedCounter(Object.assign(new Error('UNIQUE constraint failed: acpinv.vndnum, acpinv.invnum'), { code: 'SQLITE_CONSTRAINT_UNIQUE' })), undefined, 'another unique index');
  assert.equal(collidedCounter(new Error('FOREIGN KEY constraint failed')), undefined);
});
