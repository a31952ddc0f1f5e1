/**
 * An unexpected database error in the middle of a payroll posting (a trigger on the job cost table
 * calls a function that does not exist) answers 500, and neither its log line nor the exported
 * trace spans carry the values of the failed statement: knex writes the statement into the
 * error's message, and with the bound values filled in (its default `compileSqlOnError`) that
 * put one person's labour amount, hours and employee number into the JSON log and the spans on
 * SQLite (PostgreSQL's `$n` placeholders stayed as they were). Payroll is a PII surface
 * (openapi.yaml `postPayrollBatch`: "no log line carries any of them"). Every engine.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';
import { spanRecorder } from '../support/spans';

const PATH = '/api/v3/payroll-records/post';
const PERIOD_END = '2026-11-22';
const recorder = spanRecorder();
let t: TestApp;

before(async () => {
  recorder.install();
  t = await startTestApp();
});
after(async () => {
  await t?.close();
  await recorder.uninstall();
});

/** A job cost written by a payroll posting (source 16) fails in the database, as an unexpected error. */
async function breakPayrollJobCosts(): Promise<void> {
  if (t.engine === 'sqlite') {
    await t.knex.raw('create trigger redaction_fail before insert on jobcst when new.srcnum = 16 begin select redaction_test_no_such_function(); end');
    return;
  }
  await t.knex.raw('create function redaction_fail() returns trigger language plpgsql as $$ begin perform redaction_test_no_such_function(); return new; end $$');
  await t.knex.raw('create trigger redaction_fail before insert on jobcst for each row when (new.srcnum = 16) execute function redaction_fail()');
}

/** Literal values (a number or a quoted string) where a statement has a placeholder: `40320 as cstamt`, `values (105, ...`. */
const INLINED = /(?:\b\d+(?:\.\d+)?|'[^']*')\s+as\s+[`"]?[a-z_]+[`"]?|values\s*\(\s*(?:\d|')/i;

test('a database error during a payroll posting: 500, and the log line and the spans name the statement with placeholders, not one value of it', async () => {
  await breakPayrollJobCosts();
  const batch = await t.knex('payrec').where({ prdend: PERIOD_END, status: 2 }).orderBy('recnum').select('recnum', 'empnum');
  assert.ok(batch.length > 0, 'the seed leaves a Computed batch');
  const res = await t.post(PATH, { periodEndDate: PERIOD_END, bankAccountNumber: 2 });
  assert.equal(res.status, 500, res.text);
  assert.equal(res.headers['x-error-code'], 'INTERNAL_ERROR', JSON.stringify(res.body));
  await new Promise((r) => setImmediate(r));

  const logged = t.logs.filter((l) => l.msg === 'unexpected error');
  assert.equal(logged.length, 1, 'the error is logged once');
  const message = String(logged[0]!.err?.message ?? '');
  // The message still says what failed (the statement and the database's reason), so the test sees the statement.
  assert.ok(/insert into [`"]?jobcst/i.test(message), `the failed statement is named: ${message.slice(0, 300)}`);
  assert.ok(/redaction_test_no_such_function/.test(message), `and the database's reason: ${message.slice(-300)}`);
  assert.ok(/\?|\$\d/.test(message), `with its placeholders: ${message.slice(0, 300)}`);

  const spans = recorder.exporter.getFinishedSpans();
  const failedSpans = spans.filter((s) => /jobcst/i.test(s.status.message ?? ''));
  assert.ok(failedSpans.length > 0, `a span records the failure: ${spans.map((s) => `${s.name}:${s.status.message ?? ''}`).join(' | ').slice(0, 500)}`);

  const texts: Array<[string, string]> = [
    ['log line', JSON.stringify(logged[0])],
    ...spans.map((s): [string, string] => [`span ${s.name}`, JSON.stringify({ status: s.status, attributes: s.attributes, events: s.events })]),
  ];
  const empnums = [...new Set(batch.map((r: any) => Number(r.empnum)))];
  for (const [where, text] of texts) {
    const inlined = INLINED.exec(text);
    assert.equal(inlined, null, `${where} carries a value of the statement: ...${inlined ? text.slice(Math.max(0, inlined.index - 80), inlined.index + 80) : ''}...`);
    for (const n of empnums) assert.doesNotMatch(text, new RegExp(`\\b${n}\\s+as\\s+[\`"]?empnum`), `${where} carries employee number ${n}`);
  }
});
