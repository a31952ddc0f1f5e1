/**
 * The reference cache of the posting engine (ledger setup, fiscal periods, accounts, sources,
 * vendors, jobs, cost types, equipment: src/storage/reference-cache.ts) never serves a stale row: a change made by a direct UPDATE
 * through a second, independent connection (as the desktop system or a DBA would) is seen by the
 * very next posting. Also proves the cache is used (no reference reads while nothing changed).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from '../support/app';
import { assertProblem } from '../support/http';
import { FX, apInvoice, installPostingFixture, journal } from '../support/posting-fixture';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';
import { Dec } from '../../src/storage/decimal';
import { dialectFor, engineOf } from '../../src/storage/dialect';
import { CACHED_COLUMNS, type ReferenceCache } from '../../src/storage/reference-cache';

let t: TestApp;
let other: Knex;
const PATH = '/api/v3/ledger-transactions';
const AP = '/api/v3/ap-invoices';
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

test('the counter rides in the lock fence, which the transaction\'s BEGIN reads: no statement of its own, read by every posting', async () => {
  assert.equal((await t.post(PATH, journal(next()))).status, 200);
  const statements: string[] = [];
  const listen = (q: { sql?: string }) => statements.push(String(q.sql ?? '').replace(/["`[\]]/g, ''));
  t.knex.on('query', listen);
  const reads = cache().stats.versionReads;
  try {
    for (let i = 0; i < 3; i++) assert.equal((await t.post(PATH, journal(next()))).status, 200);
  } finally {
    t.knex.off('query', listen);
  }
  assert.equal(cache().stats.versionReads - reads, 3, 'the counter read by every posting');
  // The fence's lock row read (the lock store's periodic re-read, `select *`, is not a posting's).
  const fences = statements.filter((sql) => /user_name, locked_at from mntlck/i.test(sql));
  if (t.engine === 'postgres') {
    // In BEGIN's round trip, the counter in the same statement.
    assert.equal(fences.length, 3, `one fence a posting: ${JSON.stringify(fences)}`);
    for (const sql of fences) assert.match(sql, /^BEGIN; select \(select n from refchg where id = 1\) as rider, .* from mntlck where id = 1 for share/i);
  } else {
    // SQLite: read on the connection right after BEGIN IMMEDIATE, no knex statement.
    assert.deepEqual(fences, []);
  }
  assert.deepEqual(
    statements.filter((sql) => /from refchg/i.test(sql) && !/from mntlck/i.test(sql)),
    [],
    'no statement of its own for the counter',
  );
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

/** A one-line AP invoice whose line names equipment (the equipment is read as a reference). */
function withEquipment(): Record<string, unknown> {
  const body = apInvoice(next(), 1);
  (body.lines as Array<Record<string, unknown>>)[0]!.equipmentNumber = FX.equipment;
  return body;
}

test('AP invoices reuse the cached vendor, job, cost type and equipment rows while nothing changes', async () => {
  const first = await t.post(AP, withEquipment());
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const before = { ...cache().stats };
  for (let i = 0; i < 3; i++) assert.equal((await t.post(AP, withEquipment())).status, 200);
  const s = cache().stats;
  assert.equal(s.misses - before.misses, 0, 'no vendor, job, cost type, equipment, account or setup row read from the database');
  assert.ok(s.hits - before.hits >= 3 * 5, `served from the cache (${s.hits - before.hits} hits)`);
});

test('a vendor deactivated, a job closed, a phase closed, a cost code and a cost type deactivated by another connection are refused by the next AP invoice', async () => {
  assert.equal((await t.post(AP, apInvoice(next()))).status, 200);
  const refusedOn = async (field: string) => {
    const body = assertProblem(await t.post(AP, apInvoice(next())), 'BUSINESS_RULE_VIOLATED');
    assert.ok(JSON.stringify(body.errors).includes(`"${field}"`), `${field} named: ${JSON.stringify(body.errors)}`);
  };
  await other('actpay').where({ recnum: FX.vendor.withDefaults }).update({ inactv: true });
  try {
    await refusedOn('vendorNumber');
  } finally {
    await other('actpay').where({ recnum: FX.vendor.withDefaults }).update({ inactv: false });
  }
  const job = await other('actrec').where({ recnum: FX.job.open }).first('status');
  await other('actrec').where({ recnum: FX.job.open }).update({ status: 6 });
  try {
    await refusedOn('jobNumber');
  } finally {
    await other('actrec').where({ recnum: FX.job.open }).update({ status: job.status });
  }
  const phase = await other('jobphs').where({ jobnum: FX.job.open, phsnum: FX.phase }).first('status');
  await other('jobphs').where({ jobnum: FX.job.open, phsnum: FX.phase }).update({ status: 3 });
  try {
    await refusedOn('phaseNumber');
  } finally {
    await other('jobphs').where({ jobnum: FX.job.open, phsnum: FX.phase }).update({ status: phase.status });
  }
  const code = dialectFor(engineOf(other)).encodeDecimal(new Dec(FX.costCode), 3);
  assert.equal(await other('cstcde').where({ cstcde: code }).update({ inactv: true }), 1, 'the fixture cost code is there');
  try {
    await refusedOn('lines[0].costCode');
  } finally {
    await other('cstcde').where({ cstcde: code }).update({ inactv: false });
  }
  await other('csttyp').where({ recnum: FX.costType.material }).update({ inactv: true });
  try {
    await refusedOn('lines[0].costType');
  } finally {
    await other('csttyp').where({ recnum: FX.costType.material }).update({ inactv: false });
  }
  assert.equal((await t.post(AP, apInvoice(next()))).status, 200, 'all active again: posts');
});

test('equipment deleted by another connection is not found by the next AP invoice', async () => {
  assert.equal((await t.post(AP, withEquipment())).status, 200);
  const row = await other('eqpmnt').where({ recnum: FX.equipment }).first();
  await other('eqpmnt').where({ recnum: FX.equipment }).delete();
  try {
    const body = assertProblem(await t.post(AP, withEquipment()), 'REFERENCE_NOT_FOUND');
    assert.ok(JSON.stringify(body.errors).includes('lines[0].equipmentNumber'), JSON.stringify(body.errors));
  } finally {
    await other('eqpmnt').insert(row);
  }
  assert.equal((await t.post(AP, withEquipment())).status, 200);
});

test('every table the cache holds bumps the counter when another connection changes it (the cache and the triggers agree)', async () => {
  const tables = ['lgrstp', 'fscprd', ...Object.keys(CACHED_COLUMNS), 'cstcde', 'jobphs'] as const;
  for (const table of tables) {
    const before = Number((await other('refchg').where({ id: 1 }).first('n')).n);
    const row = await other(table).first('_idnum');
    assert.ok(row, `${table} has a row to touch`);
    await other(table).where({ _idnum: row._idnum }).update({ _idnum: row._idnum });
    const afterwards = Number((await other('refchg').where({ id: 1 }).first('n')).n);
    assert.ok(afterwards > before, `an UPDATE of ${table} moved the reference counter (${before} -> ${afterwards})`);
  }
});
