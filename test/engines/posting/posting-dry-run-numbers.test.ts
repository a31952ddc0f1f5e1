/**
 * Spec, Writes rule 7: a dry run's identifiers are provisional and never exist; reference numbers
 * and identity values are still consumed, leaving permanent gaps. The record numbers a cascade
 * takes inside its transaction (inventory histories under their part locks, payroll job and
 * equipment costs) used to roll back with the dry run, and the next posting was given the very
 * numbers the dry run had shown (storage/numbers.ts DryRunNumbers). Checked over HTTP and in the
 * database, on the seeded demo company.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { assertBooksInvariants } from '../../support/invariants';
import { seedAllocationToJob } from '../../support/posting-fixture';

let t: TestApp;
useTestApp((app) => (t = app));

const ALLOCATIONS = '/api/v3/inventory-allocations';
const PAYROLL = '/api/v3/payroll-records/post';

const allocation = (number: string) => seedAllocationToJob(number, [2, 1], { description: 'Dry-run numbers' });

/** Every record number an answer shows, by entity. */
function shown(body: any): Record<string, number[]> {
  return {
    document: body.document?.recordNumber === undefined ? [] : [body.document.recordNumber],
    ledgerTransaction: body.ledgerTransaction ? [body.ledgerTransaction.recordNumber] : [],
    inventory: (body.inventory ?? []).map((h: any) => h.recordNumber),
    jobCosts: (body.jobCosts ?? []).map((c: any) => c.recordNumber),
  };
}

function assertDisjoint(dry: Record<string, number[]>, other: Record<string, number[]>, what: string): void {
  for (const [entity, numbers] of Object.entries(dry)) {
    const again = numbers.filter((n) => other[entity]!.includes(n));
    assert.deepEqual(again, [], `${what}: ${entity} record numbers ${again.join(', ')} were shown by the dry run`);
  }
}

test('inventory allocation: the numbers a dry run shows are never handed out again, to a dry run or a posting', async () => {
  const first = await t.post(`${ALLOCATIONS}?dryRun=true`, allocation('DRY-NUM-1'));
  assert.equal(first.status, 200, first.text);
  const dry = shown(first.body);
  assert.equal(dry.inventory!.length, 2);
  assert.equal(dry.jobCosts!.length, 2);

  const second = await t.post(`${ALLOCATIONS}?dryRun=true`, allocation('DRY-NUM-1'));
  assert.equal(second.status, 200, second.text);
  assertDisjoint(dry, shown(second.body), 'a second dry run');

  const real = await t.post(ALLOCATIONS, allocation('DRY-NUM-1'));
  assert.equal(real.status, 200, real.text);
  assert.equal(real.body.dryRun, false);
  const posted = shown(real.body);
  assertDisjoint(dry, posted, 'the posting after it');
  assertDisjoint(shown(second.body), posted, 'the posting after the second dry run');

  // In the database: the posting's history rows are there, none under a number a dry run showed.
  const dryHistories = [...dry.inventory!, ...shown(second.body).inventory!];
  assert.equal(Number((await t.knex('invhst').whereIn('recnum', dryHistories).count({ n: '*' }))[0]!.n), 0);
  assert.equal(Number((await t.knex('invhst').whereIn('recnum', posted.inventory!).count({ n: '*' }))[0]!.n), 2);
  // The counter is past every number shown.
  const counter = await t.knex('numseq').where({ name: 'invhst' }).first();
  assert.ok(Number(counter.next_value) > Math.max(...dryHistories, ...posted.inventory!), `numseq invhst ${counter.next_value}`);
  await assertBooksInvariants(t.knex);
});

test('payroll batch: the job cost numbers of a dry run are not those of the posting', async () => {
  const batch = { periodEndDate: '2026-11-22', bankAccountNumber: 2 };
  const dryRun = await t.post(`${PAYROLL}?dryRun=true`, batch);
  assert.equal(dryRun.status, 200, dryRun.text);
  const dry = shown(dryRun.body);
  assert.ok(dry.jobCosts!.length > 0);
  const jobCostsBefore = Number((await t.knex('jobcst').count({ n: '*' }))[0]!.n);

  const real = await t.post(PAYROLL, batch).set('Idempotency-Key', 'dry-run-numbers-payroll');
  assert.equal(real.status, 200, real.text);
  const posted = shown(real.body);
  assert.equal(posted.jobCosts!.length, dry.jobCosts!.length);
  assertDisjoint(dry, posted, 'the payroll posting after its dry run');
  assert.equal(Number((await t.knex('jobcst').whereIn('recnum', dry.jobCosts!).count({ n: '*' }))[0]!.n), 0);
  assert.equal(Number((await t.knex('jobcst').count({ n: '*' }))[0]!.n), jobCostsBefore + posted.jobCosts!.length);
  await assertBooksInvariants(t.knex);
});

test('a posting that takes the numbers a dry run showed, after its rollback and before they are consumed: the dry run is made again on numbers no one else has', async () => {
  const hooks = t.services.writes.hooks;
  const attempts: number[] = [];
  let takenFirst: number[] = [];
  hooks.dryRunRolledBack = async ({ attempt }) => {
    attempts.push(attempt);
    if (attempt > 1) return;
    // Another posting takes the next history numbers (committed).
    await t.knex('numseq').where({ name: 'invhst' }).increment('next_value', 2);
    const next = Number((await t.knex('numseq').where({ name: 'invhst' }).first()).next_value);
    takenFirst = [next - 2, next - 1];
  };
  try {
    const res = await t.post(`${ALLOCATIONS}?dryRun=true`, allocation('DRY-NUM-RACE'));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(attempts, [1, 2], 'made twice');
    const shownNow = shown(res.body).inventory!;
    assert.equal(shownNow.length, 2);
    assert.deepEqual(shownNow.filter((n) => takenFirst.includes(n)), [], `shown ${shownNow}, taken by the other posting ${takenFirst}`);
    const counter = await t.knex('numseq').where({ name: 'invhst' }).first();
    assert.ok(Number(counter.next_value) > Math.max(...shownNow, ...takenFirst));
    // What the dry run shows now is consumed: the next posting takes numbers past it.
    const real = await t.post(ALLOCATIONS, allocation('DRY-NUM-RACE'));
    assert.equal(real.status, 200, real.text);
    assertDisjoint({ inventory: shownNow }, shown(real.body), 'the posting after the dry run made again');
  } finally {
    delete hooks.dryRunRolledBack;
  }
});
