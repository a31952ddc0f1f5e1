/**
 * POST /payroll-records/post on the seeded demo company: the pay period ending 2026-11-22 is
 * left Computed by the seed (check date 2026-11-27, open period 11 of 2026). Checked over HTTP
 * and in the database: the journal, ledger balances, job and equipment costs, statuses, dry run,
 * Idempotency-Key replay, refusals (400, 404, 409, 422) that write nothing, and that no log line
 * carries an employee's name, pay rate, amount or birth date.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { assertProblem } from '../../support/http';
import { assertBooksInvariants } from '../../support/invariants';
import { Dec } from '../../../src/storage/decimal';

let t: TestApp;
const PATH = '/api/v3/payroll-records/post';
const PERIOD_END = '2026-11-22';
const CHECK_DATE = '2026-11-27';
const PAYROLL_BANK = 2;

const dec = (raw: unknown, scale = 2): Dec => {
  const d = t.services.dialect.decodeDecimal(raw, scale);
  return d ?? new Dec(0);
};

interface Batch {
  records: Array<{ recnum: number; empnum: number; _idnum: string; grspay: Dec; netpay: Dec; dedttl: Dec }>;
}

async function computedBatch(): Promise<Batch> {
  const rows = await t.knex('payrec').where({ prdend: PERIOD_END, status: 2 }).orderBy('recnum').select('recnum', 'empnum', '_idnum', 'grspay', 'netpay', 'dedttl');
  return { records: rows.map((r: any) => ({ recnum: Number(r.recnum), empnum: Number(r.empnum), _idnum: String(r._idnum), grspay: dec(r.grspay), netpay: dec(r.netpay), dedttl: dec(r.dedttl) })) };
}

/** Row counts of everything a payroll posting writes (equal before and after = nothing written). */
async function footprint(): Promise<Record<string, unknown>> {
  const count = async (table: string, where?: (q: any) => any) => {
    const q = t.knex(table);
    if (where) where(q);
    const [r] = await q.count({ n: '*' });
    return Number((r as any).n);
  };
  const statuses = await t.knex('payrec').where({ prdend: PERIOD_END }).orderBy('recnum').select('recnum', 'status', 'lgrrec');
  const [bal] = await t.knex('lgrbal').sum({ d: 'dbttot', c: 'crdtot' });
  return {
    lgrtrn: await count('lgrtrn'),
    lgtnln: await count('lgtnln'),
    jobcst: await count('jobcst'),
    eqpcst: await count('eqpcst'),
    balances: [String(dec((bal as any).d)), String(dec((bal as any).c))],
    statuses: statuses.map((r: any) => [Number(r.recnum), Number(r.status), r.lgrrec === null ? null : Number(r.lgrrec)]),
  };
}

useTestApp((app) => (t = app));

test('the seed leaves a Computed batch in the open period', async () => {
  const batch = await computedBatch();
  assert.ok(batch.records.length >= 5, `computed records: ${batch.records.length}`);
  const dates = await t.knex('payrec').where({ prdend: PERIOD_END }).distinct('chkdte');
  assert.equal(dates.length, 1);
  const setup = await t.knex('lgrstp').first('curyer', 'curprd');
  assert.deepEqual([Number(setup.curyer), Number(setup.curprd)], [2026, 11]);
});

test('bad input is 400 naming the fields, before anything is written', async () => {
  const before = await footprint();
  for (const [body, fields] of [
    [{}, ['periodEndDate', 'recordNumbers']],
    [{ periodEndDate: PERIOD_END, recordNumbers: [1] }, ['periodEndDate', 'recordNumbers']],
    [{ recordNumbers: [5, 5] }, ['recordNumbers[1]']],
  ] as Array<[Record<string, unknown>, string[]]>) {
    const res = await t.post(PATH, body);
    const problem = assertProblem(res, 'VALIDATION_FAILED', PATH);
    const named = (problem.errors ?? []).map((e: any) => e.field);
    for (const f of fields) assert.ok(named.includes(f), `${JSON.stringify(body)} names ${f}: ${JSON.stringify(problem.errors)}`);
  }
  // The contract: unknown field, wrong type, bad date.
  for (const [body, field] of [
    [{ periodEndDate: PERIOD_END, employeeName: 'x' }, 'employeeName'],
    [{ recordNumbers: ['abc'] }, 'recordNumbers'],
    [{ periodEndDate: '2026-13-45' }, 'periodEndDate'],
    [{ recordNumbers: [] }, 'recordNumbers'],
    [{ recordNumbers: [3000000000] }, 'recordNumbers'],
    [{ periodEndDate: PERIOD_END, bankAccountNumber: 0 }, 'bankAccountNumber'],
  ] as Array<[Record<string, unknown>, string]>) {
    const res = await t.post(PATH, body);
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    assert.ok(JSON.stringify(res.body.errors ?? []).includes(field), `${JSON.stringify(body)} names ${field}: ${res.text}`);
  }
  assert.deepEqual(await footprint(), before);
});

test('unknown record numbers and an empty period are 404 naming them', async () => {
  const before = await footprint();
  const batch = await computedBatch();
  const res = await t.post(PATH, { recordNumbers: [batch.records[0]!.recnum, 987654] });
  const problem = assertProblem(res, 'REFERENCE_NOT_FOUND', PATH);
  assert.deepEqual(
    problem.errors.map((e: any) => [e.field, e.code]),
    [['recordNumbers[1]', 'not_found']],
  );
  assert.match(problem.detail, /987654/);
  const empty = await t.post(PATH, { periodEndDate: '2026-11-29' });
  assert.equal(assertProblem(empty, 'REFERENCE_NOT_FOUND').errors[0].field, 'periodEndDate');
  assert.deepEqual(await footprint(), before, 'nothing written');
});

test('a record that is not Computed is 422 naming it; nothing of the batch posts', async () => {
  const batch = await computedBatch();
  const open = batch.records[1]!;
  await t.knex('payrec').where({ recnum: open.recnum }).update({ status: 1 });
  try {
    const before = await footprint();
    const res = await t.post(PATH, { recordNumbers: [batch.records[0]!.recnum, open.recnum] });
    const problem = assertProblem(res, 'DOCUMENT_NOT_POSTABLE', PATH);
    assert.deepEqual(
      problem.errors.map((e: any) => [e.field, e.code]),
      [['recordNumbers[1]', 'not_computed']],
    );
    assert.match(problem.detail, new RegExp(`payroll record ${open.recnum} is Open`));
    assert.deepEqual(problem.recordNumbers, [open.recnum]);
    // By period end date the same record is named through periodEndDate.
    const byDate = await t.post(PATH, { periodEndDate: PERIOD_END, bankAccountNumber: PAYROLL_BANK });
    const p2 = assertProblem(byDate, 'DOCUMENT_NOT_POSTABLE');
    assert.deepEqual(p2.errors.map((e: any) => e.field), ['periodEndDate']);
    assert.match(p2.errors[0].message, new RegExp(`record ${open.recnum}`));
    assert.deepEqual(await footprint(), before, 'nothing written');
  } finally {
    await t.knex('payrec').where({ recnum: open.recnum }).update({ status: 2 });
  }
});

test('deductions that no longer agree with the calculations are 422 (compute again)', async () => {
  const batch = await computedBatch();
  const r = batch.records[2]!;
  const encoded = t.services.dialect.encodeDecimal(r.dedttl.plus('0.01'), 2);
  const net = t.services.dialect.encodeDecimal(r.netpay.minus('0.01'), 2);
  await t.knex('payrec').where({ recnum: r.recnum }).update({ dedttl: encoded, netpay: net });
  try {
    const before = await footprint();
    const res = await t.post(PATH, { recordNumbers: [r.recnum] });
    const problem = assertProblem(res, 'DOCUMENT_NOT_POSTABLE');
    assert.deepEqual(problem.errors.map((e: any) => [e.field, e.code]), [['recordNumbers[0]', 'deductions_disagree']]);
    assert.deepEqual(problem.recordNumbers, [r.recnum]);
    assert.doesNotMatch(problem.detail, new RegExp(r.dedttl.toFixed(2).replace('.', '\\.')), 'no amounts in the detail');
    assert.deepEqual(await footprint(), before);
  } finally {
    await t.knex('payrec').where({ recnum: r.recnum }).update({ dedttl: t.services.dialect.encodeDecimal(r.dedttl, 2), netpay: t.services.dialect.encodeDecimal(r.netpay, 2) });
  }
});

test('wages without job or equipment on a department account that keeps job costs are 422, not guessed', async () => {
  const batch = await computedBatch();
  const overhead = await t
    .knex('tmcdln as l')
    .join('payrec as p', 'p._idnum', 'l._idref')
    .join('employ as e', 'e.recnum', 'p.empnum')
    .whereIn('p.recnum', batch.records.map((r) => r.recnum))
    .whereNull('l.jobnum')
    .whereNull('l.eqpnum')
    .first('p.recnum', 'e.recnum as empnum', 'e.dptmnt', 'l.linnum');
  assert.ok(overhead, 'the batch has an overhead line');
  const jobDepartment = await t.knex('dptmnt as d').join('lgract as a', 'a.recnum', 'd.lgract').where('a.subtyp', 1).first('d.recnum', 'd.lgract');
  await t.knex('employ').where({ recnum: overhead.empnum }).update({ dptmnt: jobDepartment.recnum });
  try {
    const before = await footprint();
    const res = await t.post(PATH, { recordNumbers: [Number(overhead.recnum)] });
    const problem = assertProblem(res, 'DOCUMENT_NOT_POSTABLE');
    assert.ok(problem.errors.some((e: any) => e.field === 'recordNumbers[0]' && e.code === 'not_overhead_account'), res.text);
    assert.match(problem.detail, new RegExp(`account ${jobDepartment.lgract}`));
    assert.deepEqual(await footprint(), before);
  } finally {
    await t.knex('employ').where({ recnum: overhead.empnum }).update({ dptmnt: overhead.dptmnt });
  }
});

test('a check date after the open period is 422 PERIOD_CLOSED naming recordNumbers (checkDate is no request field), an explicit later period too', async () => {
  const batch = await computedBatch();
  const r = batch.records[0]!;
  const before = await footprint();
  const explicit = await t.post(PATH, { recordNumbers: [r.recnum], period: 12, year: 2026 });
  const p1 = assertProblem(explicit, 'PERIOD_CLOSED');
  assert.deepEqual(p1.errors.map((e: any) => e.field).sort(), ['period', 'year']);
  await t.knex('payrec').where({ recnum: r.recnum }).update({ chkdte: '2026-12-04' });
  try {
    const res = await t.post(PATH, { recordNumbers: [r.recnum] });
    const problem = assertProblem(res, 'PERIOD_CLOSED');
    assert.deepEqual(problem.errors.map((e: any) => e.field), ['recordNumbers'], 'the request field that chose the records');
    assert.match(problem.detail, /the records' checkDate 2026-12-04/);
    assert.match(problem.detail, /period 12 of 2026.*period 11 of 2026/);
  } finally {
    await t.knex('payrec').where({ recnum: r.recnum }).update({ chkdte: CHECK_DATE });
  }
  assert.deepEqual(await footprint(), before, 'nothing written');
});

test('a dry run answers the whole result and writes nothing', async () => {
  const before = await footprint();
  const res = await t.post(`${PATH}?dryRun=true`, { periodEndDate: PERIOD_END, bankAccountNumber: PAYROLL_BANK });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.dryRun, true);
  assert.ok(res.body.ledgerTransaction.lines.length > 0);
  assert.equal(res.body.ledgerTransaction.debitTotal, res.body.ledgerTransaction.creditTotal);
  assert.ok(res.body.jobCosts.length > 0);
  assert.deepEqual(await footprint(), before, 'a dry run writes nothing');
});

let posted: any;
let batchAtPost: Batch;

test('posting the batch: balanced journal on source 16, balances, job and equipment costs, statuses Posted', async () => {
  batchAtPost = await computedBatch();
  const records = batchAtPost.records;
  const lines = await t.knex('tmcdln').whereIn('_idref', records.map((r) => r._idnum)).select('_idref', 'linnum', 'jobnum', 'eqpnum', 'amount', 'hrswrk');
  const jobLines = lines.filter((l: any) => l.jobnum !== null);
  const shopLines = lines.filter((l: any) => l.jobnum === null && l.eqpnum !== null);
  assert.ok(jobLines.length > 0 && shopLines.length > 0, 'the seeded batch has job and shop lines');
  const payrollCash = Number((await t.knex('bnkact').where({ recnum: PAYROLL_BANK }).first('lgract')).lgract);
  const cashBefore = await t.knex('lgrbal').where({ lgract: payrollCash, postyr: 2026, actprd: 11 }).first('crdtot');
  const counts = { jobcst: await t.knex('jobcst').count({ n: '*' }), eqpcst: await t.knex('eqpcst').count({ n: '*' }) };

  const res = await t.post(PATH, { periodEndDate: PERIOD_END, bankAccountNumber: PAYROLL_BANK }).set('Idempotency-Key', 'payroll-2026-11-22');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'applied');
  posted = res.body;
  const { document, ledgerTransaction, jobCosts, inventory } = posted;
  assert.equal(posted.dryRun, false);
  assert.deepEqual([posted.period, posted.year], [11, 2026]);
  assert.deepEqual(inventory, []);

  // The batch document.
  const gross = records.reduce((s, r) => s.plus(r.grspay), new Dec(0));
  const net = records.reduce((s, r) => s.plus(r.netpay), new Dec(0));
  assert.equal(document.recordCount, records.length);
  assert.equal(document.periodEndDate, PERIOD_END);
  assert.equal(document.checkDate, CHECK_DATE);
  assert.equal(new Dec(document.grossPay).toFixed(2), gross.toFixed(2));
  assert.equal(new Dec(document.netPay).toFixed(2), net.toFixed(2));
  assert.deepEqual(document.records.map((r: any) => r.recordNumber), records.map((r) => r.recnum));
  assert.ok(document.records.every((r: any) => r.status === 3 && r.ledgerRecordNumber === ledgerTransaction.recordNumber));
  for (const r of document.records) assert.equal(Object.keys(r).some((k) => /name|rate|birth/i.test(k)), false, 'no names or rates in the result');

  // The journal balances; gross = the wage debits; net pay = the credit to the payroll cash account.
  assert.equal(ledgerTransaction.sourceNumber, 16);
  assert.equal(ledgerTransaction.transactionDate, CHECK_DATE);
  const debits = ledgerTransaction.lines.reduce((s: Dec, l: any) => s.plus(l.debitAmount), new Dec(0));
  const credits = ledgerTransaction.lines.reduce((s: Dec, l: any) => s.plus(l.creditAmount), new Dec(0));
  assert.equal(debits.toFixed(2), credits.toFixed(2));
  assert.equal(new Dec(ledgerTransaction.debitTotal).toFixed(2), debits.toFixed(2));
  const cashCredit = ledgerTransaction.lines.filter((l: any) => l.ledgerAccount === payrollCash).reduce((s: Dec, l: any) => s.plus(l.creditAmount), new Dec(0));
  assert.equal(cashCredit.toFixed(2), net.toFixed(2), 'net pay credited to the payroll bank account');
  const burden = new Dec(document.employerBurden);
  assert.ok(burden.greaterThan(0), 'employer burden posted');
  assert.equal(debits.toFixed(2), gross.plus(burden).toFixed(2), 'debits = gross wages + employer burden');
  assert.equal(credits.minus(net).minus(burden).toFixed(2), new Dec(document.deductions).toFixed(2), 'credits = net + withholdings + burden liabilities');

  // Job costs: one per job line, labor cost type, equal to the job-coded ledger debits per job.
  assert.equal(jobCosts.length, jobLines.length);
  assert.ok(jobCosts.every((c: any) => c.costType === 2 && c.sourceNumber === 16 && c.period === 11 && c.year === 2026));
  const perJob = new Map<number, Dec>();
  for (const c of jobCosts) perJob.set(c.jobNumber, (perJob.get(c.jobNumber) ?? new Dec(0)).plus(c.costAmount));
  const ledgerPerJob = new Map<number, Dec>();
  for (const l of ledgerTransaction.lines) if (l.jobNumber !== null) ledgerPerJob.set(l.jobNumber, (ledgerPerJob.get(l.jobNumber) ?? new Dec(0)).plus(l.debitAmount).minus(l.creditAmount));
  assert.deepEqual([...perJob.entries()].map(([j, a]) => [j, a.toFixed(2)]).sort(), [...ledgerPerJob.entries()].map(([j, a]) => [j, a.toFixed(2)]).sort());
  const hours = jobLines.reduce((s: Dec, l: any) => s.plus(dec(l.hrswrk)), new Dec(0));
  assert.equal(jobCosts.reduce((s: Dec, c: any) => s.plus(c.costHours), new Dec(0)).toFixed(2), hours.toFixed(2), 'labor hours');
  // Equipment costs: one per shop line, equal to the equipment-coded debits per unit.
  assert.equal(document.equipmentCosts.length, shopLines.length);
  const perUnit = new Map<number, Dec>();
  for (const c of document.equipmentCosts) perUnit.set(c.equipmentNumber, (perUnit.get(c.equipmentNumber) ?? new Dec(0)).plus(c.costAmount));
  const ledgerPerUnit = new Map<number, Dec>();
  for (const l of ledgerTransaction.lines) if (l.equipmentNumber !== null) ledgerPerUnit.set(l.equipmentNumber, (ledgerPerUnit.get(l.equipmentNumber) ?? new Dec(0)).plus(l.debitAmount));
  assert.deepEqual([...perUnit.entries()].map(([j, a]) => [j, a.toFixed(2)]).sort(), [...ledgerPerUnit.entries()].map(([j, a]) => [j, a.toFixed(2)]).sort());

  // In the database.
  const journal = await t.knex('lgrtrn').where({ recnum: ledgerTransaction.recordNumber }).first();
  assert.equal(Number(journal.srcnum), 16);
  assert.deepEqual([Number(journal.actprd), Number(journal.postyr)], [11, 2026]);
  const dbLines = await t.knex('lgtnln').where({ _idref: journal._idnum });
  assert.equal(dbLines.length, ledgerTransaction.lines.length);
  const dbDebit = dbLines.reduce((s: Dec, l: any) => s.plus(dec(l.dbtamt)), new Dec(0));
  const dbCredit = dbLines.reduce((s: Dec, l: any) => s.plus(dec(l.crdamt)), new Dec(0));
  assert.equal(dbDebit.toFixed(2), dbCredit.toFixed(2), 'the stored journal balances');
  const after = await t.knex('payrec').where({ prdend: PERIOD_END }).select('status', 'lgrrec', 'actprd', 'postyr');
  assert.ok(after.every((r: any) => Number(r.status) === 3 && Number(r.lgrrec) === ledgerTransaction.recordNumber && Number(r.actprd) === 11), 'every record Posted with its journal');
  const dbCosts = await t.knex('jobcst').where({ srcnum: 16 }).whereIn('srcrec', records.map((r) => r.recnum));
  assert.equal(dbCosts.length, jobLines.length);
  assert.equal(dbCosts.reduce((s: Dec, c: any) => s.plus(dec(c.cstamt)), new Dec(0)).toFixed(2), jobLines.reduce((s: Dec, l: any) => s.plus(dec(l.amount)), new Dec(0)).toFixed(2));
  const dbEq = await t.knex('eqpcst').where({ srcnum: 16 }).whereIn('srcrec', records.map((r) => r.recnum));
  assert.equal(dbEq.length, shopLines.length);
  assert.equal(Number((await t.knex('jobcst').count({ n: '*' }))[0]!.n), Number(counts.jobcst[0]!.n) + jobLines.length);
  assert.equal(Number((await t.knex('eqpcst').count({ n: '*' }))[0]!.n), Number(counts.eqpcst[0]!.n) + shopLines.length);
  const cashAfter = await t.knex('lgrbal').where({ lgract: payrollCash, postyr: 2026, actprd: 11 }).first('crdtot');
  assert.equal(dec(cashAfter.crdtot).minus(dec(cashBefore?.crdtot ?? 0)).toFixed(2), net.toFixed(2), 'lgrbal moved by the net pay');

  // The books: journals balance, lgrbal = lines, job and equipment costs = their ledger lines.
  await assertBooksInvariants(t.knex);
});

test('the same Idempotency-Key replays the posting; nothing is written twice', async () => {
  const before = await footprint();
  const res = await t.post(PATH, { periodEndDate: PERIOD_END, bankAccountNumber: PAYROLL_BANK }).set('Idempotency-Key', 'payroll-2026-11-22');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['idempotency-status'], 'replayed');
  assert.deepEqual(res.body, posted);
  assert.deepEqual(await footprint(), before);
});

test('posting the same batch again is 409 DOCUMENT_ALREADY_POSTED naming the records', async () => {
  const before = await footprint();
  const again = await t.post(PATH, { periodEndDate: PERIOD_END, bankAccountNumber: PAYROLL_BANK });
  const problem = assertProblem(again, 'DOCUMENT_ALREADY_POSTED', PATH);
  assert.deepEqual(problem.recordNumbers, batchAtPost.records.map((r) => r.recnum));
  assert.deepEqual(problem.ledgerRecordNumbers, [posted.ledgerTransaction.recordNumber]);
  const byNumber = await t.post(PATH, { recordNumbers: [batchAtPost.records[3]!.recnum] });
  assert.deepEqual(assertProblem(byNumber, 'DOCUMENT_ALREADY_POSTED').errors.map((e: any) => [e.field, e.code]), [['recordNumbers[0]', 'already_posted']]);
  assert.deepEqual(await footprint(), before, 'nothing written');
  await assertBooksInvariants(t.knex);
});

test('no log line carries a name, pay rate, amount or birth date of the batch (success and refusals)', async () => {
  const employees = await t.knex('employ').whereIn('recnum', batchAtPost.records.map((r) => r.empnum)).select('fstnme', 'lstnme', 'dtebth', 'payrt1', 'salary');
  const lines = await t.knex('tmcdln').whereIn('_idref', batchAtPost.records.map((r) => r._idnum)).select('payrte', 'amount');
  const secrets = new Set<string>();
  for (const e of employees) {
    for (const n of [e.fstnme, e.lstnme]) if (n && String(n).length >= 3) secrets.add(String(n));
    if (e.dtebth) secrets.add(String(e.dtebth instanceof Date ? e.dtebth.toISOString().slice(0, 10) : e.dtebth).slice(0, 10));
    for (const v of [dec(e.payrt1, 4), dec(e.salary)]) if (!v.isZero()) secrets.add(v.toFixed());
  }
  for (const l of lines) {
    secrets.add(dec(l.payrte, 4).toFixed());
    secrets.add(dec(l.amount).toFixed());
  }
  for (const r of batchAtPost.records) for (const v of [r.grspay, r.netpay, r.dedttl]) secrets.add(v.toFixed());
  for (const v of [posted.document.grossPay, posted.document.netPay, posted.document.employerBurden]) secrets.add(String(v));
  // Short numbers (a rate of 45) would match anything: amounts with cents or 3+ digits only.
  const needles = [...secrets].filter((s) => /[A-Za-z]/.test(s) || s.replace(/\D/g, '').length >= 3);
  assert.ok(needles.length > 20, `enough to look for: ${needles.length}`);
  assert.ok(t.logs.some((l) => l.route === PATH && l.status === 200), 'the success was logged');
  assert.ok(t.logs.some((l) => l.route === PATH && l.status === 409), 'a refusal was logged');
  assert.ok(t.logs.some((l) => l.route === PATH && l.status === 422), 'a 422 refusal was logged');
  // Timing fields are numbers of the server, not of the payroll: left out of the search.
  const text = JSON.stringify(t.logs.map(({ time, durationMs, pid, hostname, ...rest }) => rest));
  const found = needles.filter((s) => new RegExp(`(^|[^0-9A-Za-z.])${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^0-9A-Za-z])`).test(text));
  assert.deepEqual(found, [], 'PII in the logs');
});

test('two concurrent postings of the same records: one posts, the other is 409; one journal', async () => {
  const other = await startTestApp();
  try {
    const records = (await other.knex('payrec').where({ prdend: PERIOD_END, status: 2 }).orderBy('recnum').limit(3).select('recnum')).map((r: any) => Number(r.recnum));
    const journalsBefore = Number((await other.knex('lgrtrn').count({ n: '*' }))[0]!.n);
    const [a, b] = await Promise.all([other.post(PATH, { recordNumbers: records }), other.post(PATH, { recordNumbers: [...records].reverse() })]);
    const statuses = [a.status, b.status].sort();
    assert.deepEqual(statuses, [200, 409], `${a.text} / ${b.text}`);
    assertProblem(a.status === 409 ? a : b, 'DOCUMENT_ALREADY_POSTED');
    assert.equal(Number((await other.knex('lgrtrn').count({ n: '*' }))[0]!.n), journalsBefore + 1, 'one journal');
    const costs = await other.knex('jobcst').where({ srcnum: 16 }).whereIn('srcrec', records).count({ n: '*' });
    const jobLines = await other.knex('tmcdln as l').join('payrec as p', 'p._idnum', 'l._idref').whereIn('p.recnum', records).whereNotNull('l.jobnum').count({ n: '*' });
    assert.equal(Number(costs[0]!.n), Number(jobLines[0]!.n), 'job costs written once');
    await assertBooksInvariants(other.knex);
  } finally {
    await other.close();
  }
});
