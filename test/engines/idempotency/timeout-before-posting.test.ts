/**
 * Spec, Writes rule 6: "A 504 under a key is stored and replayed as unknown." A write whose deadline
 * passes before its posting transaction began (at the key's claim, or allocating numbers) posted
 * nothing: it answers 503 UPSTREAM_TIMEOUT_NOT_APPLIED with Retry-After, no Idempotency-Status,
 * nothing recorded under the key, and a retry with the same key executes (applied, posted once).
 * Every 504 under a key is then one the key stores (test/engines/posting/posting-deadline.test.ts).
 * docs/decisions/0406-a-timeout-before-the-posting-is-503.md.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../../support/app';
import { assertProblem } from '../../support/http';
import { countRows, installPostingFixture, journal } from '../../support/posting-fixture';
import type { IdempotencyStore } from '../../../src/engines/idempotency/store';

let t: TestApp;
const PATH = '/api/v3/ledger-transactions';
// Long enough for a retry to post in time on a busy machine; the forced timeouts wait past it.
const DEADLINE_MS = 1500;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

before(async () => {
  t = await startTestApp({ config: { dbDeadlineMs: DEADLINE_MS } });
  await installPostingFixture(t.knex);
});
after(async () => {
  delete t.services.writes.hooks.afterClaim;
  await t?.close();
});

function keyed(body: unknown, key: string) {
  return t.http.post(PATH).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body as object);
}

function assertNotApplied(res: Awaited<ReturnType<typeof keyed>>): void {
  const problem = assertProblem(res, 'UPSTREAM_TIMEOUT_NOT_APPLIED');
  assert.equal(res.status, 503);
  assert.equal(res.headers['retry-after'], '1');
  assert.equal(res.headers['idempotency-status'], undefined, 'nothing happened, nothing recorded: no Idempotency-Status');
  assert.match(problem.detail, /nothing was applied/);
  assert.doesNotMatch(problem.detail, /unknown/);
}

test('the key claim misses the deadline: 503 UPSTREAM_TIMEOUT_NOT_APPLIED, nothing recorded, the retry with the key posts once', async () => {
  const real = t.services.writes.store;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  setTimeout(() => release(), 30_000).unref();
  // The first claim answers only after its request has answered (then fails, as a store that gave up would).
  let slowOnce = true;
  const slow: IdempotencyStore = {
    ...real,
    claim: async (request) => {
      if (!slowOnce) return real.claim(request);
      slowOnce = false;
      await released;
      throw new Error('claim abandoned');
    },
    complete: real.complete.bind(real),
    completeAlone: real.completeAlone.bind(real),
    markUnknown: real.markUnknown.bind(real),
    release: real.release.bind(real),
    purgeExpired: real.purgeExpired.bind(real),
  };
  t.services.writes.store = slow;
  try {
    const key = `k-${randomUUID()}`;
    const first = await keyed(journal('TB-1'), key);
    release();
    assertNotApplied(first);
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'TB-1' }), 0);
    assert.equal(await countRows(t.knex, 'idmkey', { idem_key: key }), 0);

    const retry = await keyed(journal('TB-1'), key);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.headers['idempotency-status'], 'applied');
    const again = await keyed(journal('TB-1'), key);
    assert.equal(again.headers['idempotency-status'], 'replayed');
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'TB-1' }), 1);
  } finally {
    release();
    t.services.writes.store = real;
  }
});

test('allocating numbers misses the deadline (nothing posted): 503 UPSTREAM_TIMEOUT_NOT_APPLIED, the key given back, the retry posts once', async () => {
  const key = `k-${randomUUID()}`;
  let held = false;
  // After the claim, before numbers: waits until the request's deadline has passed, so the
  // allocation (the next step, under the same deadline) times out before any transaction begins.
  t.services.writes.hooks.afterClaim = async (info) => {
    if (info.key !== key || held) return;
    held = true;
    const until = Date.now() + DEADLINE_MS + 100;
    while (Date.now() < until) await sleep(20);
  };
  try {
    const first = await keyed(journal('TB-2'), key);
    assertNotApplied(first);
    assert.ok(held, 'the hook held the write past its deadline');
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'TB-2' }), 0);
    assert.equal(await countRows(t.knex, 'idmkey', { idem_key: key }), 0, 'the key was given back');

    const retry = await keyed(journal('TB-2'), key);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.headers['idempotency-status'], 'applied');
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'TB-2' }), 1);
  } finally {
    delete t.services.writes.hooks.afterClaim;
  }
});
