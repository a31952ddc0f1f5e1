/**
 * A `date` column's value as each driver returns it, decoded to the same YYYY-MM-DD whatever the
 * process's time zone (storage/db-time.ts toIsoDate, decision 0420): tedious returns DATE as UTC
 * midnight, node-postgres as local midnight, SQLite as text. The zone is set before any Date is
 * made here (Node re-reads TZ when it is assigned); behind UTC (Chicago) a UTC midnight read with
 * local getters is the day before, ahead of UTC (Tokyo) a local midnight read in UTC is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toIsoDate } from '../../src/storage/db-time';

function inZone<T>(zone: string, fn: () => T): T {
  const before = process.env.TZ;
  process.env.TZ = zone;
  try {
    return fn();
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
}

/** What tedious (useUTC: true, its default) returns for DATE '2026-11-30'. */
const tediousDate = (y: number, m: number, d: number) => new Date(Date.UTC(y, m - 1, d));
/** What node-postgres's default parser returns for DATE '2026-11-30': local midnight. */
const pgDate = (y: number, m: number, d: number) => new Date(y, m - 1, d);

for (const zone of ['America/Chicago', 'Asia/Tokyo', 'UTC', 'Pacific/Kiritimati', 'Pacific/Pago_Pago']) {
  test(`${zone}: SQL Server's DATE (UTC midnight) is its own calendar date, the last day of a period included`, () => {
    inZone(zone, () => {
      assert.equal(new Date(2026, 0, 1).getTimezoneOffset() === 0, zone === 'UTC', 'the zone took effect');
      assert.equal(toIsoDate(tediousDate(2026, 11, 30), 'mssql'), '2026-11-30');
      assert.equal(toIsoDate(tediousDate(2026, 12, 1), 'mssql'), '2026-12-01');
      assert.equal(toIsoDate(tediousDate(2027, 1, 1), 'mssql'), '2027-01-01');
      assert.equal(toIsoDate(tediousDate(2024, 2, 29), 'mssql'), '2024-02-29');
    });
  });

  test(`${zone}: PostgreSQL's DATE (local midnight) and SQLite's text are unchanged`, () => {
    inZone(zone, () => {
      assert.equal(toIsoDate(pgDate(2026, 11, 30), 'postgres'), '2026-11-30');
      assert.equal(toIsoDate(pgDate(2026, 3, 8), 'postgres'), '2026-03-08'); // a DST change in Chicago
      assert.equal(toIsoDate('2026-11-30', 'postgres'), '2026-11-30');
      assert.equal(toIsoDate('2026-11-30', 'sqlite'), '2026-11-30');
      assert.equal(toIsoDate('2026-11-30 00:00:00', 'sqlite'), '2026-11-30');
      assert.equal(toIsoDate(null, 'mssql'), null);
      assert.equal(toIsoDate(undefined, 'sqlite'), null);
    });
  });
}

test('a child process started with TZ=America/Chicago decodes SQL Server\'s 30 November as 30 November', async () => {
  const { spawnSync } = await import('node:child_process');
  const script = `const { toIsoDate } = require(${JSON.stringify(require.resolve('../../src/storage/db-time'))});` +
    `process.stdout.write(String(new Date().getTimezoneOffset() !== 0) + ' ' + toIsoDate(new Date(Date.UTC(2026, 10, 30)), 'mssql'));`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { env: { ...process.env, TZ: 'America/Chicago' }, encoding: 'utf8', timeout: 60_000 });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout, 'true 2026-11-30');
});
