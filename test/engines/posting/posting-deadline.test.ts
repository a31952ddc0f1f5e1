/**
 * The on-premise boundary deadline (config.dbDeadlineMs): a write that misses it answers 504
 * UPSTREAM_TIMEOUT and its key is stored as unknown; retries are answered as unknown until the
 * late posting finishes, then the real recorded result is returned. A late failure is recorded too.
 * The same boundary for a payroll posting (a Computed record of the seed): posted exactly once.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../../support/app';
import { assertProblem } from '../../support/http';
import { FX, countRows, installPostingFixture, journal } from '../../support/posting-fixture';

let t: TestApp;
const PATH = '/api/v3/ledger-transactions';
const DEADLINE_MS = 800;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

before(async () => {
  t = await startTestApp({ config: { dbDeadlineMs: DEADLINE_MS } });
  await installPostingFixture(t.knex);
});
after(async () => {
  delete t.services.writes.hooks.beforeCommit;
  await t?.close();
});

function keyed(body: unknown, key: string, path = PATH) {
  return t.http.post(path).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

/**
 * Holds the next posting inside its transaction, right before COMMIT, until `release()` (then
 * fails it with `fail`, if given): released once its request has answered 504, it is late by
 * construction, however slow the machine. `ended` resolves when its transaction has ended
 * (committed or rolled back).
 */
function holdNextPosting(fail?: Error): { release: () => void; ended: Promise<void> } {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  // A test that fails before its release() must not leave the posting (and the file) hanging.
  setTimeout(() => release(), 30_000).unref();
  let ended!: () => void;
  const hasEnded = new Promise<void>((r) => (ended = r));
  let used = false;
  t.services.writes.hooks.beforeCommit = async ({ trx }) => {
    if (used) return;
    used = true;
    trx.executionPromise.then(ended, ended);
    await released;
    if (fail) throw fail;
  };
  return { release, ended: hasEnded };
}

/**
 * A retry once the late outcome has been settled: the late posting's transaction has ended, and
 * its process replaces the unknown outcome right after that (recording a failure, giving the key
 * back); until then a retry is answered 504 (replayed) and changes nothing, so it is sent again.
 */
async function retryOnceSettled(send: () => Promise<Response>): Promise<Response> {
  const until = Date.now() + 10_000;
  for (;;) {
    const res = await send();
    if (!(res.status === 504 && res.headers['idempotency-status'] === 'replayed') || Date.now() > until) return res;
    await sleep(20);
  }
}
type Response = Awaited<ReturnType<typeof keyed>>;

test('a posting that misses the deadline answers 504; retries see unknown until it commits, then the real result', async () => {
  const key = `k-${randomUUID()}`;
  const hold = holdNextPosting();
  const first = await keyed(journal('DL-1'), key);
  const problem = assertProblem(first, 'UPSTREAM_TIMEOUT');
  assert.equal(first.headers['idempotency-status'], 'applied');
  assert.match(problem.detail, /unknown/);

  if (t.engine === 'postgres') {
    // The record says unknown while the late posting runs (another connection of the pool).
    const unknown = async () => (await t.knex('idmkey').where({ idem_key: key }).first())?.state === 'unknown';
    for (let i = 0; i < 100 && !(await unknown()); i += 1) await sleep(20);
    const record = await t.knex('idmkey').where({ idem_key: key }).first();
    assert.equal(record.state, 'unknown');
    assert.equal(Number(record.status_code), 504);
  }
  const retried = keyed(journal('DL-1'), key).then((r) => r);
  // SQLite: one connection, so the retry's key lookup waits for the late commit: let it commit.
  if (t.engine === 'sqlite') hold.release();
  const during = await retried;
  if (during.status === 504) {
    assert.equal(during.headers['idempotency-status'], 'replayed', 'answered as unknown');
    assertProblem(during, 'UPSTREAM_TIMEOUT');
  } else {
    // SQLite: one connection, so the retry's key lookup waits for the late commit.
    assert.equal(during.status, 200, during.text);
    assert.equal(during.headers['idempotency-status'], 'replayed');
  }
  // Another body under the same key is still refused.
  assertProblem(await keyed(journal('DL-1', { description: 'other' }), key), 'IDEMPOTENCY_KEY_REUSED');

  hold.release();
  await hold.ended;
  const afterwards = await retryOnceSettled(() => keyed(journal('DL-1'), key));
  assert.equal(afterwards.status, 200, afterwards.text);
  assert.equal(afterwards.headers['idempotency-status'], 'replayed');
  assert.equal(afterwards.body.document.transactionNumber, 'DL-1');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'DL-1' }), 1);
  const record = await t.knex('idmkey').where({ idem_key: key }).first();
  assert.equal(record.state, 'completed');
  assert.equal(Number(record.status_code), 200);
});

test('a late posting that fails is recorded: the retry gets the 502, nothing was posted', async () => {
  const key = `k-${randomUUID()}`;
  const refusal = Object.assign(new Error('simulated deadlock'), { code: t.engine === 'postgres' ? '40P01' : 'SQLITE_BUSY' });
  const hold = holdNextPosting(refusal);
  assertProblem(await keyed(journal('DL-2'), key), 'UPSTREAM_TIMEOUT');
  hold.release();
  await hold.ended;
  const retry = await retryOnceSettled(() => keyed(journal('DL-2'), key));
  assertProblem(retry, 'DATABASE_REFUSED');
  assert.equal(retry.headers['idempotency-status'], 'replayed');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'DL-2' }), 0);
});

test('without a key a late posting still commits (its outcome was unknown to the client); a dry run that misses the deadline leaves nothing', async () => {
  let hold = holdNextPosting();
  assertProblem(await t.post(PATH, journal('DL-3')), 'UPSTREAM_TIMEOUT');
  hold.release();
  await hold.ended;
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'DL-3' }), 1);

  hold = holdNextPosting();
  const dry = await t.post(`${PATH}?dryRun=true`, journal('DL-4'));
  const body = assertProblem(dry, 'UPSTREAM_TIMEOUT');
  assert.doesNotMatch(body.detail, /Idempotency-Key/);
  hold.release();
  await hold.ended;
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'DL-4' }), 0);
});

test('a late posting that loses its connection before COMMIT gives the key back: the retry posts once', async () => {
  const key = `k-${randomUUID()}`;
  const lost = new Error('Connection terminated unexpectedly');
  const hold = holdNextPosting(lost);
  assertProblem(await keyed(journal('DL-5'), key), 'UPSTREAM_TIMEOUT');
  hold.release();
  await hold.ended;
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'DL-5' }), 0, 'nothing committed');
  // The key is given back right after the rollback.
  for (let i = 0; i < 100 && (await countRows(t.knex, 'idmkey', { idem_key: key })) > 0; i += 1) await sleep(20);
  assert.equal(await countRows(t.knex, 'idmkey', { idem_key: key }), 0, 'the key was released, not stored as a 502');
  const retry = await retryOnceSettled(() => keyed(journal('DL-5'), key));
  assert.equal(retry.status, 200, retry.text);
  assert.equal(retry.headers['idempotency-status'], 'applied');
  assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'DL-5' }), 1);
});

test(
  'a late posting refused because it would push a ledger balance past its column is recorded as that 422, not as the bare refusal\'s 502',
  { skip: process.env.TEST_ENGINE !== 'postgres' && 'SQLite: a held write lock keeps the posting from beginning (503, nothing applied), so no refusal comes late' },
  async () => {
    const A = FX.accounts;
    const cell = { lgract: A.overhead, postyr: FX.year, actprd: FX.openPeriod };
    const pair = (amount: number) => [
      { lineNumber: 1, ledgerAccount: A.overhead, description: 'Debit', debitAmount: amount },
      { lineNumber: 2, ledgerAccount: A.cash, description: 'Credit', creditAmount: amount },
    ];
    const setup = await keyed(journal(`DL-BB-SETUP-${randomUUID().slice(0, 8)}`, { lines: pair(1) }), `k-${randomUUID()}`);
    assert.equal(setup.status, 200, setup.text);
    const { dbttot: original } = await t.knex('lgrbal').where(cell).first('dbttot');
    const key = `k-${randomUUID()}`;
    const body = journal('DL-BB', { lines: pair(10) });
    // Another program holds the balance row, about to leave it 5.00 short of decimal(14, 2)'s bound:
    // the posting waits for it in its balance upsert, past the deadline (504), then meets that value.
    const other = await t.knex.transaction();
    try {
      await other('lgrbal').where(cell).update({ dbttot: '999999999995.00' });
      assertProblem(await keyed(body, key), 'UPSTREAM_TIMEOUT');
      await other.commit();
    } catch (err) {
      await other.rollback();
      throw err;
    }
    try {
      const retry = await retryOnceSettled(() => keyed(body, key));
      const problem = assertProblem(retry, 'BUSINESS_RULE_VIOLATED');
      assert.equal(retry.headers['idempotency-status'], 'replayed');
      assert.deepEqual(problem.ledgerBalance, { ledgerAccount: A.overhead, year: FX.year, period: FX.openPeriod, field: 'debitTotal' });
      assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'DL-BB' }), 0, 'nothing posted');
      const record = await t.knex('idmkey').where({ idem_key: key }).first();
      assert.equal(Number(record.status_code), 422, 'the key holds the 422');
    } finally {
      await t.knex('lgrbal').where(cell).update({ dbttot: original });
    }
  },
);

test('a payroll posting that misses the deadline: 504, then the key replays the late result; the record posts once', async () => {
  const PAYROLL = '/api/v3/payroll-records/post';
  const record = await t.knex('payrec').where({ prdend: '2026-11-22', status: 2 }).orderBy('recnum', 'desc').first('recnum');
  assert.ok(record, 'the seed leaves a Computed payroll record');
  const recnum = Number(record.recnum);
  const body = { recordNumbers: [recnum] };
  const key = `k-${randomUUID()}`;
  const hold = holdNextPosting();
  const first = await keyed(body, key, PAYROLL);
  assertProblem(first, 'UPSTREAM_TIMEOUT');
  assert.equal(first.headers['idempotency-status'], 'applied');
  // A retry while the late posting runs must not post it again (504 unknown, or on SQLite the replay).
  const retried = keyed(body, key, PAYROLL).then((r) => r);
  // SQLite: one connection, so the retry's key lookup waits for the late commit: let it commit.
  if (t.engine === 'sqlite') hold.release();
  const during = await retried;
  assert.ok(during.status === 504 || during.status === 200, during.text);
  assert.equal(during.headers['idempotency-status'], 'replayed');

  hold.release();
  await hold.ended;
  const afterwards = await retryOnceSettled(() => keyed(body, key, PAYROLL));
  assert.equal(afterwards.status, 200, afterwards.text);
  assert.equal(afterwards.headers['idempotency-status'], 'replayed');
  assert.deepEqual(afterwards.body.document.records.map((r: any) => [r.recordNumber, r.status]), [[recnum, 3]]);
  const posted = await t.knex('payrec').where({ recnum }).first('status', 'lgrrec');
  assert.equal(Number(posted.status), 3);
  assert.equal(Number(posted.lgrrec), afterwards.body.ledgerTransaction.recordNumber);
  assert.equal(await countRows(t.knex, 'lgrtrn', { srcnum: 16, recnum: posted.lgrrec }), 1);
  const stored = await t.knex('idmkey').where({ idem_key: key }).first();
  assert.equal(stored.state, 'completed');
  assert.equal(Number(stored.status_code), 200);
});
