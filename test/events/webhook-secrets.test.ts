/**
 * Webhook signing secrets are encrypted at rest (src/storage/secret-box.ts, src/storage/secrets-key.ts;
 * docs/decisions/0260 and 0261): after registering and rotating through HTTP, no `whsec_` value and
 * no base64 part of a secret is anywhere in the database (every text column of every table); the
 * deliveries still verify with the secret returned at registration (standardwebhooks); a secret
 * stored under the previous key still signs after SECRETS_KEY changes, and the next start
 * re-encrypts it; plain-text secrets of an older version are encrypted by the start; a start
 * without SECRETS_KEY on PostgreSQL or SQL Server is refused naming the variable; on SQLite the
 * key file is made once (mode 0600), whichever of several processes comes first.
 */
import test, { after, before, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { startTestApp, type TestApp } from '../support/app';
import { installEvents, type EventsHarness } from '../support/events';
import type { LoopbackServer } from '../support/net';
import { startWebhookReceiver, type ReceivedWebhook as Received } from '../support/webhook-receiver';
import { Events } from '../../src/events';
import { ConfigError, loadConfig } from '../../src/config';
import { prepareDatabase } from '../../src/boot';
import { parseDatabaseUrl } from '../../src/storage/database';
import { keyIdOf, SecretBox } from '../../src/storage/secret-box';
import { openSecretBox, secretsKeyFileOf } from '../../src/storage/secrets-key';

const ROOT = path.resolve(__dirname, '..', '..');

let t: TestApp;
let h: EventsHarness;
let receiver: LoopbackServer;
let base: string;
const received: Received[] = [];

before(async () => {
  t = await startTestApp();
  receiver = await startWebhookReceiver(received);
  base = receiver.url;
});
after(async () => {
  await receiver.close();
  await t.close();
});
beforeEach(async () => {
  received.length = 0;
  await t.knex('whkatt').delete();
  await t.knex('whkdlv').delete();
  await t.knex('whkept').delete();
  h = installEvents(t, { allowPrivate: true });
});

function verify(secret: string, r: Received): unknown {
  return new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });
}

async function register(): Promise<{ id: string; secret: string }> {
  const res = await t.post('/api/v3/webhook-endpoints', { url: `${base}/hook`, eventTypes: ['payable_invoice.created'] }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  assert.match(res.body.secret, /^whsec_/);
  return res.body;
}

/** Queues a test event through HTTP and delivers it with `events`; the request the receiver got. */
async function deliverTest(id: string, events: Events = h.events): Promise<Received> {
  const sent = await t.post(`/api/v3/webhook-endpoints/${id}/test`, {}, t.adminKey);
  assert.equal(sent.status, 200, sent.text);
  received.length = 0;
  const cycle = await events.deliverNow();
  assert.equal(cycle.succeeded, 1, JSON.stringify(cycle));
  assert.equal(received.length, 1);
  return received[0]!;
}

/** Every text column of every table of the database: [table, column]. */
async function textColumns(): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  if (t.engine === 'sqlite') {
    const tables = (await t.knex('sqlite_master').where({ type: 'table' }).select('name')) as Array<{ name: string }>;
    for (const { name } of tables) {
      const cols = (await t.knex.raw(`pragma table_info("${name}")`)) as Array<{ name: string; type: string }>;
      // SQLite stores text in any column whose value is text: check every column but the numeric ones.
      for (const c of cols) if (!/INT|REAL|NUM|DEC|BOOL|FLOAT|DOUBLE/i.test(c.type)) out.push([name, c.name]);
    }
  } else {
    const rows = (
      await t.knex.raw(
        `select table_name, column_name from information_schema.columns where table_schema = current_schema() and data_type in ('text', 'character varying', 'character', 'json', 'jsonb')`,
      )
    ).rows as Array<{ table_name: string; column_name: string }>;
    for (const r of rows) out.push([r.table_name, r.column_name]);
  }
  return out;
}

/** [table, column] of every stored value that contains `needle` (exact substring, not a LIKE pattern). */
async function findAnywhere(needle: string): Promise<string[]> {
  const contains = (column: string) => (t.engine === 'sqlite' ? t.knex.raw('instr(cast(?? as text), ?) > 0', [column, needle]) : t.knex.raw('strpos(??::text, ?) > 0', [column, needle]));
  const byTable = new Map<string, string[]>();
  for (const [table, column] of await textColumns()) byTable.set(table, [...(byTable.get(table) ?? []), column]);
  const hits: string[] = [];
  for (const [table, columns] of byTable) {
    // One scan per table; the columns of a table that has a hit are named one by one.
    const q = t.knex(table).where((w) => {
      for (const column of columns) w.orWhere(contains(column));
    });
    const [any] = await q.count<{ n: number }[]>({ n: '*' });
    if (Number(any!.n) === 0) continue;
    for (const column of columns) {
      const [one] = await t.knex(table).where(contains(column)).count<{ n: number }[]>({ n: '*' });
      if (Number(one!.n) > 0) hits.push(`${table}.${column}`);
    }
  }
  return hits;
}

test('after registering and rotating, no whsec_ value nor the base64 of a secret is anywhere in the database', async () => {
  const e = await register();
  const rot = await t.post(`/api/v3/webhook-endpoints/${e.id}/rotate-secret`, {}, t.adminKey);
  assert.equal(rot.status, 200, rot.text);
  // A test delivery too: its payload and attempt are in the database as well.
  await deliverTest(e.id);

  const columns = await textColumns();
  assert.ok(columns.some(([table, column]) => table === 'whkept' && column === 'secret'), 'the scan covers whkept.secret');
  assert.ok(columns.length > 200, `every table is scanned (${columns.length} text columns)`);
  assert.deepEqual(await findAnywhere('whsec_'), [], 'no whsec_ value stored anywhere');
  for (const secret of [e.secret, rot.body.secret]) {
    assert.deepEqual(await findAnywhere(secret.slice('whsec_'.length)), [], 'the base64 secret is stored nowhere');
  }
  // What is stored: enc1:<key id of this database's key>:<base64url>, current and previous.
  const row = await t.knex('whkept').where({ id: e.id }).first();
  const keyId = t.services.secrets.currentKeyId;
  assert.match(row.secret, new RegExp(`^enc1:${keyId}:[A-Za-z0-9_-]{88}$`));
  assert.match(row.previous_secret, new RegExp(`^enc1:${keyId}:[A-Za-z0-9_-]{88}$`));
  // Nor in the log lines.
  const log = JSON.stringify(t.logs);
  assert.ok(!log.includes(e.secret.slice(6)) && !log.includes(rot.body.secret.slice(6)), 'no secret in the log');
});

test('deliveries verify with the secret returned at registration (standardwebhooks)', async () => {
  const e = await register();
  const r = await deliverTest(e.id);
  const body = verify(e.secret, r) as { type: string };
  assert.equal(body.type, 'webhook.test');
  // A stored value moved to another row does not open there (it is authenticated with its row's id).
  const other = await register();
  const stored = (await t.knex('whkept').where({ id: e.id }).first()).secret;
  await t.knex('whkept').where({ id: other.id }).update({ secret: stored });
  await t.post(`/api/v3/webhook-endpoints/${other.id}/test`, {}, t.adminKey);
  received.length = 0;
  const cycle = await h.events.deliverNow();
  assert.equal(cycle.succeeded, 0);
  assert.equal(received.length, 0, 'nothing is sent with a secret that does not authenticate');
  const attempt = await t.knex('whkatt').whereNotNull('error').orderBy('attempted_at', 'desc').first();
  assert.match(attempt.error, /does not authenticate/);
});

test('rotation of SECRETS_KEY: a secret stored under the previous key still signs; the next start re-encrypts it', async () => {
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);
  const config = { ...t.services.config, secretsKey: oldKey, secretsKeyPrevious: [] };
  // A service running on the old key registers the endpoint (through HTTP).
  const withBox = (box: SecretBox) =>
    new Events({
      knex: t.knex,
      engine: t.engine,
      keys: t.services.keys,
      secrets: box,
      audit: t.services.audit,
      logger: t.services.logger,
      config: { eventDetectionIntervalSeconds: 300, eventDetectionLagSeconds: 0, webhookAllowPrivateTargets: true, webhookTimeoutMs: 2000 },
      clock: h.events.clock,
      resolver: h.events.policy.resolver,
    });
  t.services.events = withBox(new SecretBox(oldKey));
  const e = await register();
  assert.match((await t.knex('whkept').where({ id: e.id }).first()).secret, new RegExp(`^enc1:${keyIdOf(oldKey)}:`));

  // The key changes: SECRETS_KEY=new, SECRETS_KEY_PREVIOUS=old. Still signs with the registration secret.
  const rotated = withBox(new SecretBox(newKey, [oldKey]));
  t.services.events = rotated;
  verify(e.secret, await deliverTest(e.id, rotated));

  // Without the old key the attempt fails, naming the missing key id; nothing is sent.
  const newOnly = withBox(new SecretBox(newKey));
  t.services.events = newOnly;
  await t.post(`/api/v3/webhook-endpoints/${e.id}/test`, {}, t.adminKey);
  received.length = 0;
  assert.equal((await newOnly.deliverNow()).succeeded, 0);
  assert.equal(received.length, 0);
  assert.match((await t.knex('whkatt').whereNotNull('error').orderBy('attempted_at', 'desc').first()).error, new RegExp(`key id ${keyIdOf(oldKey)}`));
  // ... and a start with the new key only is refused, naming SECRETS_KEY_PREVIOUS.
  const target = parseDatabaseUrl(config.databaseUrl);
  const logger = pino({ level: 'silent' });
  await assert.rejects(prepareDatabase({ ...config, secretsKey: newKey }, target, t.knex, logger), (err: Error) => err instanceof ConfigError && /SECRETS_KEY_PREVIOUS/.test(err.message) && err.message.includes(keyIdOf(oldKey)));

  // The start with both keys re-encrypts under the new key (idempotent); then the new key alone signs.
  await prepareDatabase({ ...config, secretsKey: newKey, secretsKeyPrevious: [oldKey] }, target, t.knex, logger);
  assert.match((await t.knex('whkept').where({ id: e.id }).first()).secret, new RegExp(`^enc1:${keyIdOf(newKey)}:`));
  const before = await t.knex('whkept').where({ id: e.id }).first();
  await prepareDatabase({ ...config, secretsKey: newKey, secretsKeyPrevious: [oldKey] }, target, t.knex, logger);
  assert.deepEqual(await t.knex('whkept').where({ id: e.id }).first(), before, 'a second start changes nothing');
  await t.knex('whkdlv').delete();
  verify(e.secret, await deliverTest(e.id, newOnly));
});

test('a secret stored in plain text (before encryption) is encrypted by the next start and still signs', async () => {
  const e = await register();
  // As an older version stored it.
  await t.knex('whkept').where({ id: e.id }).update({ secret: e.secret });
  verify(e.secret, await deliverTest(e.id));
  await prepareDatabase(t.services.config, parseDatabaseUrl(t.services.config.databaseUrl), t.knex, pino({ level: 'silent' }));
  const row = await t.knex('whkept').where({ id: e.id }).first();
  assert.match(row.secret, new RegExp(`^enc1:${t.services.secrets.currentKeyId}:`));
  assert.deepEqual(await findAnywhere('whsec_'), []);
  await t.knex('whkdlv').delete();
  verify(e.secret, await deliverTest(e.id));
});

test('PostgreSQL and SQL Server without SECRETS_KEY: the start is refused naming the variable', async () => {
  for (const url of ['postgres://ais@127.0.0.1:1/books', 'mssql://ais:x@127.0.0.1:1/books']) {
    assert.throws(() => openSecretBox(loadConfig({ DATABASE_URL: url })), (err: Error) => err instanceof ConfigError && /SECRETS_KEY must be set/.test(err.message));
  }
  assert.throws(() => loadConfig({ SECRETS_KEY: 'too-short' }), /SECRETS_KEY must be 32 random bytes/);
  assert.throws(() => loadConfig({ SECRETS_KEY_PREVIOUS: randomBytes(32).toString('base64') }), /SECRETS_KEY_PREVIOUS needs SECRETS_KEY/);
  assert.equal(loadConfig({ SECRETS_KEY: randomBytes(32).toString('base64') }).secretsKey?.length, 32);

  // The real start (a cluster primary, WORKERS=2), on this engine's database when it is PostgreSQL.
  const url = t.engine === 'postgres' ? t.services.config.databaseUrl : 'postgres://ais@127.0.0.1:1/books';
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: url, PORT: '0', WORKERS: '2', LOG_LEVEL: 'fatal' };
  delete env.SECRETS_KEY;
  delete env.SECRETS_KEY_PREVIOUS;
  const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'main.ts')], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 1, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stderr, /start failed: SECRETS_KEY must be set with PostgreSQL or SQL Server/);
});

test('SQLite: the key file next to the database, mode 0600, made once by whichever of several processes comes first', async () => {
  if (t.engine === 'sqlite') {
    const file = secretsKeyFileOf(parseDatabaseUrl(t.services.config.databaseUrl).file!);
    assert.ok(fs.existsSync(file), 'the service made the key file next to its database');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(keyIdOf(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64')), t.services.secrets.currentKeyId);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-keyfile-'));
  try {
    const db = path.join(dir, 'books.sqlite');
    const script = `const { openSecretBox } = require(${JSON.stringify(path.join(ROOT, 'src', 'storage', 'secrets-key.ts'))});
      const at = Number(process.argv[1]); while (Date.now() < at) {}
      process.stdout.write(openSecretBox({ databaseUrl: ${JSON.stringify(`sqlite://${db}`)}, secretsKeyPrevious: [] }).currentKeyId);`;
    // Eight processes released at the same instant.
    const at = String(Date.now() + 3000);
    const ids = await Promise.all(
      Array.from({ length: 8 }, () =>
        new Promise<string>((resolve, reject) => {
          const child = spawn(process.execPath, ['--import', 'tsx', '-e', script, at], { cwd: ROOT });
          let out = '';
          let err = '';
          child.stdout.on('data', (d) => (out += d));
          child.stderr.on('data', (d) => (err += d));
          child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(err))));
        }),
      ),
    );
    assert.equal(new Set(ids).size, 1, `one key for every process: ${ids.join(' ')}`);
    assert.deepEqual(fs.readdirSync(dir), ['books.sqlite.secrets-key'], 'no temporary file left behind');
    assert.equal(fs.statSync(path.join(dir, 'books.sqlite.secrets-key')).mode & 0o777, 0o600);
    // SECRETS_KEY set later (a managed key): the file's key still opens what it encrypted.
    const fileBox = openSecretBox({ databaseUrl: `sqlite://${db}`, secretsKeyPrevious: [] });
    const sealed = fileBox.seal('whsec_x', 'ctx');
    const managed = openSecretBox({ databaseUrl: `sqlite://${db}`, secretsKey: randomBytes(32), secretsKeyPrevious: [] });
    assert.equal(managed.open(sealed, 'ctx'), 'whsec_x');
    assert.ok(!managed.isCurrent(sealed), 'and the next start re-encrypts it under SECRETS_KEY');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
