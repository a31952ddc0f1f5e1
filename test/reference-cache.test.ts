/**
 * The reference cache of the posting engine (ledger setup, fiscal periods, accounts, sources:
 * src/storage/reference-cache.ts) never serves a stale row: a change made by a direct UPDATE
 * through a second, independent connection (as the desktop system or a DBA would) is seen by the
 * very next posting. Also proves the cache is used (no reference reads while nothing changed).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from './support/app';
import { assertProblem } from './support/http';
import { FX, installPostingFixture, journal } from './support/posting-fixture';
import { openDatabase, parseDatabaseUrl } from '../src/storage/database';
import type { ReferenceCache } from '../src/storage/reference-cache';

let t: TestApp;
let other: Knex;
const PATH = '/api/v3/ledger-transactions';
let n = 0;
const next = () => `RC-${++n}`;

before(async () => {
  t = await startTestApp();
  await installPostingFixture(t.knex);
  // Its own pool and connection: nothing shared with the service's knex.
  other = openDatabase(parseDatabaseUrl(t.services.config.databaseUrl, { min: 0, max: 1 }));
});
after(async () => {
  await other?.destroy();
  await t?.close();
});

const cache = () => (t.services.writes as unknown as { deps: { references: ReferenceCache } }).deps.references;

test('postings reuse the cached reference rows while nothing changes (one counter read each)', async () => {
  assert.equal((await t.post(PATH, journal(next()))).status, 200);
  const before = { ...cache().stats };
  for (let i = 0; i < 3; i++) assert.equal((await t.post(PATH, journal(next()))).status, 200);
  const s = cache().stats;
  assert.equal(s.misses - before.misses, 0, 'no reference row read from the database');
  assert.ok(s.hits - before.hits >= 6, 'setup and accounts served from the cache');
});

test('an open period closed by a direct UPDATE from another connection refuses the very next posting', async () => {
  assert.equal((await t.post(PATH, journal(next(), { transactionDate: FX.earlierDate }))).status, 200, 'period 10 takes postings');
  // Lock period 10 of the year (administrator lock, status 3) from the other connection.
  const changed = await other('fscprd').where({ postyr: FX.year, actprd: 10 }).update({ status: 3 });
  assert.equal(changed, 1);
  try {
    const res = await t.post(PATH, journal(next(), { transactionDate: FX.earlierDate }));
    assertProblem(res, 'PERIOD_CLOSED');
  } finally {
    await other('fscprd').where({ postyr: FX.year, actprd: 10 }).update({ status: 1 });
  }
  assert.equal((await t.post(PATH, journal(next(), { transactionDate: FX.earlierDate }))).status, 200, 'open again: posts');
});

test('the open period moved back by another connection makes the next posting PERIOD_CLOSED', async () => {
  const setup = await other('lgrstp').orderBy('recnum').first('recnum', 'curprd');
  assert.equal((await t.post(PATH, journal(next()))).status, 200);
  await other('lgrstp').where({ recnum: setup.recnum }).update({ curprd: FX.openPeriod - 1 });
  try {
    assertProblem(await t.post(PATH, journal(next())), 'PERIOD_CLOSED');
  } finally {
    await other('lgrstp').where({ recnum: setup.recnum }).update({ curprd: setup.curprd });
  }
});

test('an account and a source deactivated by another connection are refused by the next posting', async () => {
  assert.equal((await t.post(PATH, journal(next()))).status, 200);
  await other('lgract').where({ recnum: FX.accounts.overhead }).update({ inactv: true });
  try {
    const res = await t.post(PATH, journal(next()));
    const body = assertProblem(res, 'BUSINESS_RULE_VIOLATED');
    assert.ok(JSON.stringify(body.errors).includes('lines[0].ledgerAccount'), JSON.stringify(body.errors));
  } finally {
    await other('lgract').where({ recnum: FX.accounts.overhead }).update({ inactv: false });
  }
  await other('source').where({ recnum: FX.source.journal }).update({ inactv: true });
  try {
    const body = assertProblem(await t.post(PATH, journal(next())), 'BUSINESS_RULE_VIOLATED');
    assert.ok(JSON.stringify(body.errors).includes('sourceNumber'), JSON.stringify(body.errors));
  } finally {
    await other('source').where({ recnum: FX.source.journal }).update({ inactv: false });
  }
  assert.equal((await t.post(PATH, journal(next()))).status, 200);
});
