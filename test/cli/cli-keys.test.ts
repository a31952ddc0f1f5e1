/**
 * The keys command line, spawned as an operator runs it (tsx src/cli/keys.ts, which is what
 * `npm run keys --` runs), against a temporary SQLite DATABASE_URL, and checked through the app.
 * Most runs load the TypeScript as the tsx command does but without its wrapper process
 * (node --import tsx: a second Node process per run, a fifth of the file's CPU); the bad
 * DATABASE_URL case runs the tsx command itself.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app';
import { UUID_RE, assertProblem } from '../support/http';

const ROOT = path.resolve(__dirname, '..', '..');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');
let dir: string;
let databaseUrl: string;

function keys(...args: string[]): { code: number; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: res.status ?? -1, stdout: res.stdout, stderr: res.stderr };
}

function lastLine(text: string): string {
  const lines = text.trimEnd().split('\n');
  return lines[lines.length - 1]!;
}

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keys-cli-'));
  databaseUrl = `sqlite://${path.join(dir, 'books.sqlite')}`;
});
after(() => {
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
  const raw = fs.readFileSync(path.join(dir, 'books.sqlite'));
  const wal = fs.existsSync(path.join(dir, 'books.sqlite-wal')) ? fs.readFileSync(path.join(dir, 'books.sqlite-wal')) : Buffer.alloc(0);
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
