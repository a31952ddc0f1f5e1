/**
 * POST /payroll-records/post with corrections (decision 0425), on the seeded demo company's
 * Computed pay period ending 2026-11-22:
 * - a timecard line with a negative amount (a correction moving wages off a job) posts: the
 *   journal carries the job's negative wages as a CREDIT on the job account with the job (never a
 *   negative debit), the job cost carries the negative amount, the books' invariants hold;
 * - lines on one job that cancel out post no journal line for that job (never a 0/0 line);
 * - a record whose net pay (or gross pay) is negative cannot be paid by a check: 422
 *   DOCUMENT_NOT_POSTABLE naming the record, alone or inside a batch, dry run or not; nothing posts.
 * Checked over HTTP and in the database.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { assertProblem } from '../../support/http';
import { assertBooksInvariants } from '../../support/invariants';
import { bookFootprint } from '../../support/posting-fixture';
import { Dec } from '../../../src/storage/decimal';

let t: TestApp;
const PATH = '/api/v3/payroll-records/post';
const PERIOD_END = '2026-11-22';
/** Records of the seeded batch: 356 (employee 101, overhead lines only, a fixed health deduction) and 357. */
const CORRECTED = 356;
const OTHER = 357;
const WRITTEN = ['lgrtrn', 'lgtnln', 'lgrbal', 'jobcst', 'eqpcst', 'payrec'];

useTestApp((app) => (t = app));

// First in the file: on the seeded pay period, before the tests below post or change its records.
test("credits owed on one liability account under different names (an employee's deduction and the employer's share of a plan) are lines of their own, each under its own name", async () => {
  const res = await t.post(`${PATH}?dryRun=true`, { periodEndDate: '2026-11-22', bankAccountNumber: 2 });
  assert.equal(res.status, 200, res.text);
  const credits = (res.body.ledgerTransaction.lines as Array<{ ledgerAccount: number; description: string; creditAmount: number }>).filter((l) => Number(l.creditAmount) > 0);
  const byAccount = new Map<number, string[]>();
  for (const l of credits) byAccount.set(l.ledgerAccount, [...(byAccount.get(l.ledgerAccount) ?? []), l.description]);
  const shared = [...byAccount].filter(([, names]) => names.length > 1);
  assert.ok(shared.length > 0, `an account owed under two names on the demo company: ${JSON.stringify([...byAccount])}`);
  for (const [account, names] of shared) assert.equal(new Set(names).size, names.length, `account ${account}: one line per name (${names.join(' | ')})`);
  // The employee's health deduction and the employer's share: two lines, neither named after the other.
  const health = credits.filter((l) => /health plan/i.test(l.description));
  assert.ok(health.some((l) => /employer/i.test(l.description)) && health.some((l) => !/employer/i.test(l.description)), JSON.stringify(health));
  // The journal still balances.
  const lines = res.body.ledgerTransaction.lines as Array<{ debitAmount: number; creditAmount: number }>;
  const sum = (k: 'debitAmount' | 'creditAmount') => lines.reduce((s, l) => s.plus(new Dec(l[k])), new Dec(0)).toFixed(2);
  assert.equal(sum('debitAmount'), sum('creditAmount'));
});

const dec = (raw: unknown, scale = 2): Dec => t.services.dialect.decodeDecimal(raw, scale) ?? new Dec(0);
const enc = (v: Dec | string | number, scale = 2) => t.services.dialect.encodeDecimal(new Dec(v), scale);
const r2 = (v: Dec) => v.toDecimalPlaces(2, Dec.ROUND_HALF_UP);

interface RecordState {
  row: Record<string, any>;
  lines: Array<Record<string, any>>;
}

async function recordState(recnum: number): Promise<RecordState> {
  const row = await t.knex('payrec').where({ recnum }).first();
  const lines = await t.knex('tmcdln').where({ _idref: row._idnum }).orderBy('linnum');
  return { row, lines };
}

/** Puts a record and its lines back as they were (lines added by a test deleted). */
async function restore(state: RecordState): Promise<void> {
  const { row, lines } = state;
  await t.knex('tmcdln').where({ _idref: row._idnum }).whereNotIn('_idnum', lines.map((l) => l._idnum)).delete();
  for (const l of lines) await t.knex('tmcdln').where({ _idnum: l._idnum }).update({ amount: l.amount, hrswrk: l.hrswrk });
  await t.knex('payrec').where({ recnum: row.recnum }).update({ grspay: row.grspay, dedttl: row.dedttl, netpay: row.netpay, status: row.status });
}

/** A new timecard line of `state`'s record: a copy of its line 1 with `changes` (raw column values). */
async function addLine(state: RecordState, changes: Record<string, unknown>): Promise<number> {
  const linnum = Math.max(...(await t.knex('tmcdln').where({ _idref: state.row._idnum }).pluck('linnum')).map(Number)) + 1;
  await t.knex('tmcdln').insert({ ...state.lines[0], _idnum: randomUUID(), linnum, ...changes });
  return linnum;
}

/**
 * What the engine withholds from `gross` for employee `empnum` (taxes of types 1-3 as a percent of
 * gross, the employee's deductions active on the check date), so a test record agrees with the
 * payroll calculations and is refused for nothing but what the test means.
 */
async function withholdingOf(empnum: number, gross: Dec, checkDate: string): Promise<Dec> {
  let total = new Dec(0);
  for (const c of await t.knex('paycal').whereIn('caltyp', [1, 2, 3]).where({ inactv: 0 }).select('calrte')) total = total.plus(r2(gross.times(dec(c.calrte, 4)).div(100)));
  for (const d of await t.knex('payded').where({ empnum, inactv: 0 }).select('dedamt', 'dedrte', 'sttdte', 'enddte')) {
    if ((d.sttdte ?? '0000') > checkDate || (d.enddte ?? '9999') < checkDate) continue;
    const amount = dec(d.dedamt);
    total = total.plus(amount.isZero() ? r2(gross.times(dec(d.dedrte, 4)).div(100)) : amount);
  }
  return total;
}

/** Sets the record's lines to add up to `gross` (a correction line of the difference) and its totals to agree. */
async function makeGross(state: RecordState, gross: Dec): Promise<void> {
  const current = state.lines.reduce((s: Dec, l) => s.plus(dec(l.amount)), new Dec(0));
  await addLine(state, { amount: enc(gross.minus(current)), hrswrk: enc(0) });
  const checkDate = state.row.chkdte instanceof Date ? state.row.chkdte.toISOString().slice(0, 10) : String(state.row.chkdte).slice(0, 10);
  const deductions = await withholdingOf(Number(state.row.empnum), gross, checkDate);
  await t.knex('payrec').where({ recnum: state.row.recnum }).update({ grspay: enc(gross), dedttl: enc(deductions), netpay: enc(gross.minus(deductions)) });
}

/** A job line of the seeded batch on a job that neither `recnums` record has a line on (its job, phase and cost code). */
async function otherJobLine(recnums: number[]): Promise<Record<string, any>> {
  const ids = await t.knex('payrec').whereIn('recnum', recnums).pluck('_idnum');
  const taken = new Set((await t.knex('tmcdln').whereIn('_idref', ids).whereNotNull('jobnum').pluck('jobnum')).map(Number));
  const lines = await t.knex('tmcdln as l').join('payrec as p', 'p._idnum', 'l._idref').where('p.prdend', PERIOD_END).whereNotNull('l.jobnum').orderBy(['p.recnum', 'l.linnum']).select('l.jobnum', 'l.phsnum', 'l.cstcde');
  const line = lines.find((l: any) => !taken.has(Number(l.jobnum)));
  assert.ok(line, 'the seeded batch has a job line on another job');
  return line;
}

function assertNoNegativeLine(lines: any[]): void {
  for (const l of lines) {
    assert.ok(!new Dec(l.debitAmount).isNegative() && !new Dec(l.creditAmount).isNegative(), `line ${l.lineNumber} is not negative`);
    assert.notEqual(new Dec(l.debitAmount).isZero(), new Dec(l.creditAmount).isZero(), `line ${l.lineNumber} is a debit or a credit`);
  }
}

test('a record whose net pay is negative is 422 naming it, alone or in a batch, dry run or not; nothing posts', async () => {
  const state = await recordState(CORRECTED);
  // A correction brings the period's gross to 10.00, less than the employee's fixed deductions.
  await makeGross(state, new Dec('10.00'));
  try {
    const net = dec((await t.knex('payrec').where({ recnum: CORRECTED }).first('netpay')).netpay);
    assert.ok(net.isNegative(), `net pay ${net.toFixed(2)} is negative`);
    const before = await bookFootprint(t.knex, WRITTEN);
    for (const [url, body, field] of [
      [PATH, { recordNumbers: [CORRECTED] }, 'recordNumbers[0]'],
      [`${PATH}?dryRun=true`, { recordNumbers: [CORRECTED] }, 'recordNumbers[0]'],
      // Inside a batch: never netted into the other records' cash credit.
      [PATH, { recordNumbers: [OTHER, CORRECTED] }, 'recordNumbers[1]'],
      [`${PATH}?dryRun=true`, { recordNumbers: [OTHER, CORRECTED] }, 'recordNumbers[1]'],
      [PATH, { periodEndDate: PERIOD_END, bankAccountNumber: 2 }, 'periodEndDate'],
    ] as Array<[string, Record<string, unknown>, string]>) {
      const res = await t.post(url, body);
      const problem = assertProblem(res, 'DOCUMENT_NOT_POSTABLE', PATH);
      assert.deepEqual(problem.errors.map((e: any) => [e.field, e.code]), [[field, 'negative_net_pay']], `${url} ${JSON.stringify(body)}: ${res.text}`);
      assert.deepEqual(problem.recordNumbers, [CORRECTED]);
      assert.match(problem.detail, new RegExp(`payroll record ${CORRECTED}: its net pay is negative`));
      assert.doesNotMatch(problem.detail, new RegExp(net.abs().toFixed(2).replace('.', '\\.')), 'no amounts in the detail');
    }
    assert.deepEqual(await bookFootprint(t.knex, WRITTEN), before, 'nothing written');
    const statuses = await t.knex('payrec').whereIn('recnum', [CORRECTED, OTHER]).pluck('status');
    assert.deepEqual(statuses.map(Number), [2, 2], 'the records stay Computed');
  } finally {
    await restore(state);
  }
});

test('a record whose gross pay is negative is 422 naming it (negative gross and net); nothing posts', async () => {
  const state = await recordState(CORRECTED);
  await makeGross(state, new Dec('-10.00'));
  try {
    const before = await bookFootprint(t.knex, WRITTEN);
    const res = await t.post(PATH, { recordNumbers: [OTHER, CORRECTED] });
    const problem = assertProblem(res, 'DOCUMENT_NOT_POSTABLE', PATH);
    assert.deepEqual(
      problem.errors.map((e: any) => [e.field, e.code]),
      [
        ['recordNumbers[1]', 'negative_gross_pay'],
        ['recordNumbers[1]', 'negative_net_pay'],
      ],
      res.text,
    );
    assert.deepEqual(problem.recordNumbers, [CORRECTED]);
    assert.deepEqual(await bookFootprint(t.knex, WRITTEN), before, 'nothing written');
  } finally {
    await restore(state);
  }
});

test('a negative job line (a correction) posts as a credit on the job account with the job; its job cost is negative; the books hold', async () => {
  const state = await recordState(CORRECTED);
  const job = await otherJobLine([CORRECTED]);
  // Gross unchanged: line 1 raised by 100.00, a new line on a job for -100.00 (and its hours moved too).
  await t.knex('tmcdln').where({ _idnum: state.lines[0]!._idnum }).update({ amount: enc(dec(state.lines[0]!.amount).plus(100)), hrswrk: enc(dec(state.lines[0]!.hrswrk).plus(2)) });
  const correction = await addLine(state, { jobnum: job.jobnum, phsnum: job.phsnum, cstcde: job.cstcde, eqpnum: null, amount: enc(-100), hrswrk: enc(-2) });
  const jobNumber = Number(job.jobnum);

  const before = await bookFootprint(t.knex, WRITTEN);
  const dry = await t.post(`${PATH}?dryRun=true`, { recordNumbers: [CORRECTED] });
  assert.equal(dry.status, 200, dry.text);
  assert.deepEqual(await bookFootprint(t.knex, WRITTEN), before, 'a dry run writes nothing');

  const res = await t.post(PATH, { recordNumbers: [CORRECTED] });
  assert.equal(res.status, 200, res.text);
  for (const body of [dry.body, res.body]) {
    const { ledgerTransaction, jobCosts, document } = body;
    assertNoNegativeLine(ledgerTransaction.lines);
    assert.equal(ledgerTransaction.debitTotal, ledgerTransaction.creditTotal, 'the journal balances');
    const onJob = ledgerTransaction.lines.filter((l: any) => l.jobNumber === jobNumber);
    assert.deepEqual(
      onJob.map((l: any) => [new Dec(l.debitAmount).toFixed(2), new Dec(l.creditAmount).toFixed(2)]),
      [['0.00', '100.00']],
      'the job line is a credit of 100.00',
    );
    assert.deepEqual(
      jobCosts.map((c: any) => [c.jobNumber, c.sourceLineNumber, new Dec(c.costAmount).toFixed(2), new Dec(c.costHours).toFixed(2), c.costType]),
      [[jobNumber, correction, '-100.00', '-2.00', 2]],
      'the job cost carries the correction',
    );
    assert.equal(new Dec(document.grossPay).toFixed(2), dec(state.row.grspay).toFixed(2), 'gross pay unchanged');
    // Wages: the overhead debit carries the raised line, the job credit the correction.
    const wages = ledgerTransaction.lines.filter((l: any) => l.description === 'Wages');
    assert.equal(wages.reduce((s: Dec, l: any) => s.plus(l.debitAmount), new Dec(0)).toFixed(2), dec(state.row.grspay).plus(100).toFixed(2));
  }

  // In the database.
  const journal = await t.knex('lgrtrn').where({ recnum: res.body.ledgerTransaction.recordNumber }).first();
  const lines = await t.knex('lgtnln').where({ _idref: journal._idnum });
  const dbJob = lines.filter((l: any) => Number(l.jobnum) === jobNumber);
  assert.deepEqual(dbJob.map((l: any) => [dec(l.dbtamt).toFixed(2), dec(l.crdamt).toFixed(2)]), [['0.00', '100.00']], 'stored: a credit on the job');
  assert.equal(Number(dbJob[0].lgract), res.body.ledgerTransaction.lines.find((l: any) => l.jobNumber === jobNumber).ledgerAccount);
  const debit = lines.reduce((s: Dec, l: any) => s.plus(dec(l.dbtamt)), new Dec(0));
  const credit = lines.reduce((s: Dec, l: any) => s.plus(dec(l.crdamt)), new Dec(0));
  assert.equal(debit.toFixed(2), credit.toFixed(2), 'the stored journal balances');
  assert.ok(lines.every((l: any) => !dec(l.dbtamt).isNegative() && !dec(l.crdamt).isNegative()), 'no negative amount stored');
  const costs = await t.knex('jobcst').where({ srcnum: 16, srcrec: CORRECTED });
  assert.deepEqual(costs.map((c: any) => [Number(c.jobnum), Number(c.srclin), dec(c.cstamt).toFixed(2)]), [[jobNumber, correction, '-100.00']]);
  assert.equal(Number((await t.knex('payrec').where({ recnum: CORRECTED }).first('status')).status), 3);
  await assertBooksInvariants(t.knex);
});

test('lines on one job that cancel out post no journal line for the job (never a 0/0 line); two job costs that sum to zero', async () => {
  const state = await recordState(OTHER);
  const job = await otherJobLine([OTHER, CORRECTED]);
  const jobNumber = Number(job.jobnum);
  const plus = await addLine(state, { jobnum: job.jobnum, phsnum: job.phsnum, cstcde: job.cstcde, eqpnum: null, amount: enc(100), hrswrk: enc(2) });
  const minus = await addLine(state, { jobnum: job.jobnum, phsnum: job.phsnum, cstcde: job.cstcde, eqpnum: null, amount: enc(-100), hrswrk: enc(-2) });
  const res = await t.post(PATH, { recordNumbers: [OTHER] });
  assert.equal(res.status, 200, res.text);
  const { ledgerTransaction, jobCosts } = res.body;
  assertNoNegativeLine(ledgerTransaction.lines);
  assert.equal(ledgerTransaction.debitTotal, ledgerTransaction.creditTotal);
  assert.deepEqual(ledgerTransaction.lines.filter((l: any) => l.jobNumber === jobNumber), [], 'no journal line for a job whose lines cancel out');
  assert.deepEqual(
    jobCosts.filter((c: any) => c.jobNumber === jobNumber).map((c: any) => [c.sourceLineNumber, new Dec(c.costAmount).toFixed(2)]),
    [
      [plus, '100.00'],
      [minus, '-100.00'],
    ],
  );
  const costs = await t.knex('jobcst').where({ srcnum: 16, srcrec: OTHER, jobnum: jobNumber });
  assert.equal(costs.reduce((s: Dec, c: any) => s.plus(dec(c.cstamt)), new Dec(0)).toFixed(2), '0.00');
  await assertBooksInvariants(t.knex);
});
