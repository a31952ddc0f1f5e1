/**
 * The keys command line, spawned as an operator runs it (tsx src/cli/keys.ts, which is what
 * `npm run keys --` runs), against a copy of the seeded database of TEST_ENGINE (SQLite file or
 * PostgreSQL), and checked through the app and the database.
 * Most runs load the TypeScript as the tsx command does but without its wrapper process
 * (node --import tsx: a second Node process per run, a fifth of the file's CPU); the bad
 * DATABASE_URL case runs the tsx command itself.
 * It names the database it works on (without the password) and refuses, writing nothing, a
 * database that is not the service's: a SQLite file that does not exist, a database never
 * migrated, one without a company (a mistyped or unset DATABASE_URL); --init accepts a new one.
 * Flags are strict: `--admin=true` and a repeated flag are usage errors.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import knexFactory from 'knex';
import { createTestDatabase, startTestApp, TEST_ENGINE, type TestApp } from '../support/app';
import { createThrowawayDatabase } from '../support/pg-throwaway';
import { UUID_RE, assertProblem } from '../support/http';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';

const ROOT = path.resolve(__dirname, '..', '..');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');
let dir: string;
let databaseUrl: string;
let drops: Array<() => unknown> = [];

function keysOn(url: string, ...args: string[]): { code: number; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: res.status ?? -1, stdout: res.stdout, stderr: res.stderr };
}

function keys(...args: string[]): { code: number; stdout: string; stderr: string } {
  return keysOn(databaseUrl, ...args);
}

function lastLine(text: string): string {
  const lines = text.trimEnd().split('\n');
  return lines[lines.length - 1]!;
}

/** The database as the CLI names it: the URL without its password. */
function displayOf(url: string): string {
  return parseDatabaseUrl(url).display;
}

async function keyNames(url: string): Promise<string[]> {
  const knex = openDatabase(parseDatabaseUrl(url, { min: 0, max: 1 }));
  try {
    return (await knex('apikey').select('name')).map((r: { name: string }) => r.name);
  } finally {
    await knex.destroy();
  }
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keys-cli-'));
  const db = await createTestDatabase();
  databaseUrl = db.url;
  drops.push(db.drop);
});
after(async () => {
  for (const drop of drops) await drop();
  drops = [];
  fs.rmSync(dir, { recursive: true, force: true });
});

test('create prints the new key alone on the last line; list shows it without key or hash', () => {
  const created = keys('create', '--name', 'Nightly sync');
  assert.equal(created.code, 0, created.stderr);
  const key = lastLine(created.stdout);
  assert.match(key, UUID_RE, 'last line is the key alone');
  const admin = keys('create', '--name', 'Ops', '--admin');
  assert.equal(admin.code, 0, admin.stderr);
  const adminKey = lastLine(admin.stdout);
  assert.match(adminKey, UUID_RE);
  assert.notEqual(adminKey, key);

  const list = keys('list');
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^ID\s+NAME\s+ROLE\s+STATE\s+SCOPES\s+CREATED/m);
  assert.match(list.stdout, /Nightly sync\s+integration\s+active\s+all\s/, 'a key created without --scopes is unscoped');
  assert.match(list.stdout, /Ops\s+admin\s+active/);
  assert.ok(!list.stdout.includes(key) && !list.stdout.includes(adminKey), 'list never shows a key');
  assert.doesNotMatch(list.stdout, /[0-9a-f]{64}/, 'list never shows a hash');
});

test('disable / enable / revoke change what the server answers; KEY may be the key or its id', async () => {
  const key = lastLine(keys('create', '--name', 'Switchable').stdout);
  let app: TestApp | undefined;
  try {
    app = await startTestApp({ databaseUrl });
    const ping = () => app!.post('/api/v3/utility/ping', undefined, key);
    assert.equal((await ping()).status, 200);

    const disabled = keys('disable', key, '--reason', 'Contract ended; call sales');
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.match(disabled.stdout, /state=disabled/);
    const off = await ping();
    const body = assertProblem(off, 'SERVICE_DISABLED');
    assert.equal(off.headers['retry-after'], '300');
    assert.equal(body.reason, 'Contract ended; call sales');

    const id = /^([0-9a-f-]{36})\s+Switchable/m.exec(keys('list').stdout)?.[1];
    assert.ok(id, 'list shows the id');
    const enabled = keys('enable', id);
    assert.equal(enabled.code, 0, enabled.stderr);
    assert.equal((await ping()).status, 200);

    assert.equal(keys('revoke', key).code, 0);
    assertProblem(await ping(), 'UNAUTHORIZED');
    const again = keys('enable', key);
    assert.equal(again.code, 1, 'a revoked key stays revoked');
    assert.match(again.stderr, /revoked/);
    assert.match(keys('list').stdout, /Switchable\s+integration\s+revoked/);
  } finally {
    await app?.close();
  }
});

test('clear errors and exit codes: usage 2, unknown key 1, bad DATABASE_URL 2', () => {
  const noName = keys('create');
  assert.equal(noName.code, 2);
  assert.match(noName.stderr, /--name/);
  const noReason = keys('disable', '00000000-0000-4000-8000-000000000000');
  assert.equal(noReason.code, 2);
  assert.match(noReason.stderr, /--reason/);
  const unknown = keys('enable', '00000000-0000-4000-8000-000000000000');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no API key matches/);
  const bogus = keys('frobnicate');
  assert.equal(bogus.code, 2);
  assert.match(bogus.stderr, /unknown command "frobnicate"/);
  assert.match(bogus.stderr, /usage: npm run keys/);
  const res = spawnSync(TSX, ['src/cli/keys.ts', 'list'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: 'mysql://x' }, encoding: 'utf8' });
  assert.equal(res.status, 2);
  assert.match(res.stderr, /DATABASE_URL/);
});

test('the key is stored hashed by the CLI too', async () => {
  const key = lastLine(keys('create', '--name', 'Hash check').stdout);
  const knex = openDatabase(parseDatabaseUrl(databaseUrl, { min: 0, max: 1 }));
  try {
    const rows = await knex('apikey').select('*');
    assert.ok(rows.some((r: { name: string }) => r.name === 'Hash check'));
    assert.ok(!JSON.stringify(rows).includes(key), 'the key is in no column of apikey');
  } finally {
    await knex.destroy();
  }
  if (TEST_ENGINE !== 'sqlite') return;
  const file = databaseUrl.replace(/^sqlite:(\/\/)?/, '');
  const raw = fs.readFileSync(file);
  const wal = fs.existsSync(`${file}-wal`) ? fs.readFileSync(`${file}-wal`) : Buffer.alloc(0);
  assert.ok(!raw.includes(key) && !wal.includes(key), 'the key is nowhere in the database file');
});

test('create --scopes stores the scopes with the hashed key; list shows them; the server enforces them', async () => {
  const created = keys('create', '--name', 'Reader', '--scopes', 'read, pii,read');
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /scopes read,pii/);
  const key = lastLine(created.stdout);
  assert.match(keys('list').stdout, /Reader\s+integration\s+active\s+read,pii\s/);

  const bad = keys('create', '--name', 'Typo', '--scopes', 'read,wrte');
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown scope "wrte"/);
  assert.doesNotMatch(keys('list').stdout, /Typo/, 'nothing is created on a usage error');

  let app: TestApp | undefined;
  try {
    app = await startTestApp({ databaseUrl });
    assert.equal((await app.post('/api/v3/vendors/query', { page: { pageSize: 1 } }, key)).status, 200);
    const refused = await app.post('/api/v3/utility/lock', { userName: 'reader' }, key);
    const body = assertProblem(refused, 'SCOPE_MISSING');
    assert.equal(refused.status, 403);
    assert.equal(body.requiredScope, 'lock');
  } finally {
    await app?.close();
  }
});

test('strict flags: --admin takes no value (--admin=true would have made an integration key) and a flag given twice is refused; nothing is created', async () => {
  for (const [args, pattern] of [
    [['create', '--name', 'adm1', '--admin=true'], /--admin/],
    [['create', '--name', 'adm2', '--admin=false'], /--admin/],
    [['create', '--name', 'first', '--name', 'second'], /--name is given more than once/],
    [['create', '--name', 'twice', '--admin', '--admin'], /--admin is given more than once/],
    [['disable', '00000000-0000-4000-8000-000000000000', '--reason', 'a', '--reason', 'b'], /--reason is given more than once/],
    [['create', '--name', 'frob', '--frobnicate'], /frobnicate/],
    [['list', '--init=yes'], /--init/],
  ] as const) {
    const res = keys(...args);
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stdout}${res.stderr}`);
    assert.match(res.stderr, pattern, args.join(' '));
    assert.match(res.stderr, /usage: npm run keys/);
  }
  const names = await keyNames(databaseUrl);
  for (const name of ['adm1', 'adm2', 'first', 'second', 'twice', 'frob']) assert.ok(!names.includes(name), `no key "${name}" was created`);
  const admin = keys('create', '--name', 'Bare admin flag', '--admin');
  assert.equal(admin.code, 0, admin.stderr);
  assert.match(admin.stdout, /created admin key "Bare admin flag"/);
});

test('every run names the database first, without its password', () => {
  const list = keys('list');
  assert.equal(list.code, 0, list.stderr);
  assert.equal(list.stdout.split('\n')[0], `database ${displayOf(databaseUrl)}`);
  const created = keys('create', '--name', 'Named database');
  assert.equal(created.stdout.split('\n')[0], `database ${displayOf(databaseUrl)}`);
  const password = new URL(databaseUrl.startsWith('sqlite') ? 'sqlite://x' : databaseUrl).password;
  if (password) assert.ok(!created.stdout.includes(`:${password}@`) && !created.stderr.includes(password), 'the password is not printed');
});

test('a database that is not the service\'s (a mistyped or unset DATABASE_URL) is refused with exit 2, named, and nothing is written; --init sets up a new one', async () => {
  const refusedOn = async (url: string, why: RegExp) => {
    const res = keysOn(url, 'create', '--name', 'ops', '--admin');
    assert.equal(res.code, 2, `${url}: ${res.stdout}${res.stderr}`);
    assert.equal(res.stdout, `database ${displayOf(url)}\n`, 'the database is named, and no key is printed');
    assert.match(res.stderr, why);
    assert.match(res.stderr, /nothing was written/);
    return res;
  };
  // SQLite (the default engine of an unset DATABASE_URL): a file that does not exist is not created.
  const typo = path.join(dir, 'typo-books.sqlite');
  await refusedOn(`sqlite://${typo}`, /does not exist/);
  assert.equal(fs.existsSync(typo), false, 'the mistyped file was not created');
  // An empty database, never migrated: no table is created in it.
  let neverMigrated: string;
  if (TEST_ENGINE === 'sqlite') {
    const empty = path.join(dir, 'empty.sqlite');
    new Database(empty).close();
    neverMigrated = `sqlite://${empty}`;
  } else {
    const db = await createThrowawayDatabase(process.env.TEST_POSTGRES_URL!, 'ais_cli');
    drops.push(db.drop);
    neverMigrated = db.url;
  }
  await refusedOn(neverMigrated, /never migrated/);
  const knex = knexFactory(parseDatabaseUrl(neverMigrated, { min: 0, max: 1 }).config);
  try {
    assert.equal(await knex.schema.hasTable('knex_migrations'), false, 'not migrated by the refused run');
    assert.equal(await knex.schema.hasTable('apikey'), false);
  } finally {
    await knex.destroy();
  }
  // Migrated, but no company in it (what a mistyped URL became before: 125 tables, no books).
  const unseeded = await createTestDatabase(false);
  drops.push(unseeded.drop);
  await refusedOn(unseeded.url, /holds no company/);
  assert.deepEqual(await keyNames(unseeded.url), [], 'no key in it');

  // --init: a new database on purpose (first install, docs/sql-server.md): migrated, then the command runs.
  const fresh = keysOn(neverMigrated, 'create', '--name', 'first install', '--admin', '--init');
  assert.equal(fresh.code, 0, fresh.stderr);
  assert.equal(fresh.stdout.split('\n')[0], `database ${displayOf(neverMigrated)}`);
  assert.match(lastLine(fresh.stdout), UUID_RE);
  assert.deepEqual(await keyNames(neverMigrated), ['first install']);
});
