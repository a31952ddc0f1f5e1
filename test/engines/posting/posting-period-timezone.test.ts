/**
 * The posting period of a journal dated the first or the last day of the open period, with the
 * process in a zone ahead of UTC (Asia/Tokyo, set before the app starts, so every DATE the driver
 * parses is parsed in it): the fiscal periods' dates are decoded to their own calendar dates
 * whatever the zone (storage/db-time.ts toIsoDate, decision 0420), so the journal lands in the open
 * period instead of a neighbour (refused 422 PERIOD_CLOSED). node-postgres returns DATE as local
 * midnight (read in UTC, it is the day before here), SQLite as text. SQL Server's UTC midnight, the
 * day before in a zone behind UTC (America/Chicago), is covered by test/storage/date-decoding-mssql.test.ts.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../../support/app';
import { usePostingApp } from '../../support/posting-app';
import { assertProblem } from '../../support/http';
import { FX, journal } from '../../support/posting-fixture';

// Before the app (and its pool) starts: Node re-reads the zone when TZ is assigned.
process.env.TZ = 'Asia/Tokyo';

let t: TestApp;
const PATH = '/api/v3/ledger-transactions';
usePostingApp((app) => (t = app));

test('Asia/Tokyo: journals dated the first and the last day of the open period (November 2026) post to it', async () => {
  assert.equal(new Date(2026, 10, 30).getTimezoneOffset(), -540, 'the zone took effect');
  let n = 0;
  for (const date of ['2026-11-01', '2026-11-30']) {
    const res = await t.post(PATH, journal(`TZ-${(n += 1)}`, { transactionDate: date, enteredDate: date }));
    assert.equal(res.status, 200, `${date}: ${res.text}`);
    assert.equal(res.body.period, FX.openPeriod, date);
    assert.equal(res.body.year, FX.year, date);
    const header = await t.knex('lgrtrn').where({ recnum: res.body.document.recordNumber }).first();
    assert.equal(Number(header.actprd), FX.openPeriod, `${date}: stored period`);
  }
  // The day after the open period is still the next (closed) period.
  const next = await t.post(PATH, journal(`TZ-${(n += 1)}`, { transactionDate: '2026-12-01', enteredDate: '2026-12-01' }));
  assert.equal(assertProblem(next, 'PERIOD_CLOSED').resolvedPeriod, 12);
});
