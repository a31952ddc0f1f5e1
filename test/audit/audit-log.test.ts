/**
 * The audit log of administrative actions (src/audit, docs/decisions/0262-0264) through HTTP and
 * the database: a lock, a refused un-lock, an un-lock with override and a key disabled at the keys
 * command are listed by POST /audit-log/query with who, what, which target, when, the correlation
 * id and the outcome; webhook endpoint changes are entries of the same log (the folded whkaud);
 * non-admin keys get 403; entries cannot be changed (no operation, and the database refuses an
 * UPDATE and the DELETE of a young entry); the retention purge (the periodic job) deletes only
 * entries older than the bound; the migration folds an existing webhook change log in.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import type { Knex } from 'knex';
import pino from 'pino';
import { startTestApp, type TestApp } from '../support/app';
import { installEvents } from '../support/events';
import { UUID_RE } from '../support/http';
import { AuditLog, SERVICE_ACTOR } from '../../src/audit';
import { loadConfig } from '../../src/config';
import { MIGRATIONS, migrateLatest } from '../../db/migrate';
import { prepareDatabase } from '../../src/boot';
import { parseDatabaseUrl } from '../../src/storage/database';

const ROOT = path.resolve(__dirname, '..', '..');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');
const Q = '/api/v3/audit-log/query';

let t: TestApp;
let started: Date;

before(async () => {
  t = await startTestApp();
  started = new Date(Date.now() - 1000);
});
after(async () => t.close());

function keysCli(...args: string[]): { code: number; stdout: string; stderr: string } {
  const res = spawnSync(TSX, ['src/cli/keys.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: t.services.config.databaseUrl, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: res.status ?? -1, stdout: res.stdout, stderr: res.stderr };
}

async function query(body: unknown, key = t.adminKey) {
  return t.post(Q, body, key);
}

test('a lock, a refused un-lock, an un-lock with override and a key disabled at the keys command: who, what, which target, when, correlation id, outcome', async () => {
  const lock = await t.post('/api/v3/utility/lock', { userName: 'jsmith' }, t.apiKey);
  assert.equal(lock.status, 200, lock.text);
  // Written while locked? No: the pool is dropped; the entry waits in memory and is in the log line.
  assert.equal(t.services.audit.pending, 1, 'the lock entry waits while the pool is dropped');
  assert.ok(t.logs.some((l) => l.audit?.action === 'lock' && l.audit?.correlation_id === lock.headers['x-correlation-id']), 'and is a log line at once');
  const refused = await t.post('/api/v3/utility/un-lock', { userName: 'mlee' }, t.adminKey);
  assert.equal(refused.status, 409, refused.text);
  // No write was even tried while locked (a try would fail on the dropped pool and log a warning).
  assert.equal(t.services.audit.pending, 2);
  assert.equal(t.services.lock.poolStats().exists, false, 'no pool was made for the audit log while locked');
  assert.ok(!t.logs.some((l) => /audit log: entries not written yet/.test(String(l.msg))), 'no write tried while locked');
  const unlock = await t.post('/api/v3/utility/un-lock', { userName: 'mlee', override: true }, t.adminKey);
  assert.equal(unlock.status, 200, unlock.text);
  assert.equal(t.services.audit.pending, 0, 'written as soon as the pool is back');

  const integration = (await t.services.keys.findByKey(t.apiKey))!;
  const admin = (await t.services.keys.findByKey(t.adminKey))!;
  const cli = keysCli('disable', integration.id, '--reason', 'contract ended');
  assert.equal(cli.code, 0, cli.stderr);

  const res = await query({
    select: ['recordNumber', 'occurredAt', 'actorType', 'actor', 'actorKeyId', 'action', 'targetType', 'target', 'outcome', 'outcomeCode', 'correlationId', 'detail'],
    filters: { match: { field: 'action', operator: 'IN', values: ['lock', 'un-lock', 'api-key.disabled'] } },
    orderBy: ['occurredAt ASC'],
  });
  assert.equal(res.status, 200, res.text);
  assert.ok(res.body.asOf && res.body.page, 'the read envelope');
  assert.equal(res.body.page.totalCount, 4);
  const [l, r, u, d] = res.body.data;
  assert.deepEqual(
    { ...l, recordNumber: undefined, occurredAt: undefined },
    { recordNumber: undefined, occurredAt: undefined, actorType: 'api-key', actor: 'test integration', actorKeyId: integration.id, action: 'lock', targetType: 'maintenance-lock', target: 'jsmith', outcome: 'succeeded', outcomeCode: null, correlationId: lock.headers['x-correlation-id'], detail: '{"already":false}' },
  );
  assert.deepEqual(
    { actor: r.actor, actorKeyId: r.actorKeyId, action: r.action, target: r.target, outcome: r.outcome, outcomeCode: r.outcomeCode, correlationId: r.correlationId },
    { actor: 'test admin', actorKeyId: admin.id, action: 'un-lock', target: 'mlee', outcome: 'refused', outcomeCode: 'LOCK_HELD', correlationId: refused.headers['x-correlation-id'] },
  );
  assert.deepEqual(
    { action: u.action, outcome: u.outcome, correlationId: u.correlationId, detail: JSON.parse(u.detail) },
    { action: 'un-lock', outcome: 'succeeded', correlationId: unlock.headers['x-correlation-id'], detail: { override: true, previousHolder: 'jsmith' } },
  );
  assert.equal(d.actorType, 'operator');
  assert.equal(d.actor, os.userInfo().username, 'the operating-system user at the keys command');
  assert.equal(d.actorKeyId, null);
  assert.deepEqual([d.action, d.targetType, d.target, d.outcome], ['api-key.disabled', 'api-key', integration.id, 'succeeded']);
  assert.match(d.correlationId, UUID_RE);
  assert.deepEqual(JSON.parse(d.detail), { name: 'test integration', reason: 'contract ended' });
  for (const e of res.body.data) {
    const at = Date.parse(e.occurredAt);
    assert.ok(at >= started.getTime() && at <= Date.now(), `${e.action} occurred during the test`);
  }
  // Written together at un-lock, in the order they occurred.
  assert.deepEqual([r.recordNumber - l.recordNumber, u.recordNumber - r.recordNumber], [1, 1]);

  // The same rows in the database.
  const rows = await t.knex('audlog').whereIn('action', ['lock', 'un-lock', 'api-key.disabled']).orderBy('occurred_at');
  assert.deepEqual(rows.map((x: any) => `${x.action} ${x.outcome}`), ['lock succeeded', 'un-lock refused', 'un-lock succeeded', 'api-key.disabled succeeded']);

  // A refusal at the keys command is an entry too; the state change and its entry commit together.
  keysCli('revoke', integration.id);
  const again = keysCli('enable', integration.id);
  assert.equal(again.code, 1);
  const last = await t.knex('audlog').orderBy('seq', 'desc').limit(2);
  assert.deepEqual(last.map((x: any) => `${x.action} ${x.outcome}`), ['api-key.enabled refused', 'api-key.revoked succeeded']);
});

test('a new entry changes the totalCount at once (the table moves the change token; no stale count is reused)', async () => {
  const body = { select: ['action'], filters: { match: { field: 'actor', operator: '=', value: 'service' } } };
  const before = (await query(body)).body.page.totalCount;
  assert.equal((await query(body)).body.page.totalCount, before);
  await t.services.audit.record(SERVICE_ACTOR, { action: 'webhook-endpoint.paused', target: '00000000-0000-4000-8000-000000000001', outcome: 'succeeded', detail: { reason: 'test' } });
  assert.equal((await query(body)).body.page.totalCount, before + 1);
});

test('webhook endpoint changes are entries of the one log, with the key name and the correlation id', async () => {
  const h = installEvents(t);
  h.dns.set('hooks.example.com', ['93.184.215.14']);
  const created = await t.post('/api/v3/webhook-endpoints', { url: 'https://hooks.example.com/a', eventTypes: ['payable_invoice.created'] }, t.adminKey);
  assert.equal(created.status, 200, created.text);
  const res = await query({ filters: { match: { field: 'target', operator: '=', value: created.body.id } } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.length, 1);
  const e = res.body.data[0];
  assert.deepEqual([e.action, e.targetType, e.actor, e.outcome, e.correlationId], ['webhook-endpoint.created', 'webhook-endpoint', 'test admin', 'succeeded', created.headers['x-correlation-id']]);
  assert.ok(!String(e.detail).includes(created.body.secret.slice(6)), 'never the secret');
  assert.equal(await t.knex.schema.hasTable('whkaud'), false, 'the webhook change log is folded into the audit log');
});

test('admin keys only: 403 FORBIDDEN for an integration key; a scoped admin key needs the audit scope', async () => {
  const integration = await t.services.keys.create('reader', 'integration');
  const forbidden = await query({}, integration.key);
  assert.equal(forbidden.status, 403, forbidden.text);
  assert.equal(forbidden.headers['x-error-code'], 'FORBIDDEN');
  const scoped = await t.services.keys.create('scoped admin', 'admin', undefined, ['read']);
  const missing = await query({}, scoped.key);
  assert.equal(missing.status, 403);
  assert.equal(missing.headers['x-error-code'], 'SCOPE_MISSING');
  assert.equal(missing.body.requiredScope, 'audit');
  const auditor = await t.services.keys.create('auditor', 'admin', undefined, ['audit']);
  assert.equal((await query({ page: { pageSize: 1 } }, auditor.key)).status, 200);
  // The books' read rules apply: an unknown field is 400 naming it; lastUpdated is 501.
  assert.equal((await query({ select: ['secret'] })).status, 400);
  assert.equal((await query({ lastUpdated: '2026-01-01' })).headers['x-error-code'], 'CHANGE_STAMP_UNSUPPORTED');
  const since = await query({ createdSince: new Date(Date.now() + 86_400_000).toISOString().slice(0, 10) });
  assert.equal(since.status, 200, since.text);
  assert.equal(since.body.page.totalCount, 0, 'createdSince: entries that occurred since a date');
});

test('entries cannot be changed through the service: no operation, and the database refuses UPDATE and the DELETE of a young entry', async () => {
  const [entry] = await t.knex('audlog').orderBy('seq').limit(1);
  assert.ok(entry);
  for (const p of [`/api/v3/audit-log/${entry.id}/update`, `/api/v3/audit-log/${entry.id}/delete`, '/api/v3/audit-log']) {
    const res = await t.post(p, { outcome: 'refused' }, t.adminKey);
    assert.equal(res.status, 404, `${p}: ${res.text}`);
  }
  const put = await t.http.put(Q).set('x-api-key', t.adminKey).set('Content-Type', 'application/json').send({});
  assert.equal(put.status, 405);
  await assert.rejects(t.knex('audlog').where({ id: entry.id }).update({ outcome: 'refused' }), /append-only/);
  await assert.rejects(t.knex('audlog').where({ id: entry.id }).delete(), /kept at least 399 days/);
  const still = await t.knex('audlog').where({ id: entry.id }).first();
  assert.equal(still.outcome, entry.outcome);
});

test('retention: the periodic job purges only the entries older than AUDIT_RETENTION_DAYS (at least 400)', async () => {
  assert.equal(loadConfig({}).auditRetentionDays, 400);
  assert.equal(loadConfig({ AUDIT_RETENTION_DAYS: '730' }).auditRetentionDays, 730);
  assert.throws(() => loadConfig({ AUDIT_RETENTION_DAYS: '399' }), /AUDIT_RETENTION_DAYS/);

  const day = 86_400_000;
  const now = new Date();
  const mark = (days: number) => `retention ${days}`;
  for (const days of [401, 450, 399, 1]) {
    await t.services.audit.record(SERVICE_ACTOR, { action: 'webhook-endpoint.paused', target: mark(days), outcome: 'succeeded' }, new Date(now.getTime() - days * day - 60_000));
  }
  const left = async () => (await t.knex('audlog').where('target', 'like', 'retention %').orderBy('occurred_at').select('target')).map((r: any) => r.target);
  assert.deepEqual(await left(), [mark(450), mark(401), mark(399), mark(1)]);

  // AUDIT_RETENTION_DAYS=430: the 450-day entry goes, the 401-day one stays.
  assert.equal(await new AuditLog({ knex: t.knex, engine: t.engine, logger: pino({ level: 'silent' }), retentionDays: 430 }).purge(), 1);
  assert.deepEqual(await left(), [mark(401), mark(399), mark(1)]);

  // The default, by the periodic job (its first run purges): only the 401-day entry goes.
  const job = new AuditLog({ knex: t.knex, engine: t.engine, logger: pino({ level: 'silent' }), retentionDays: 400 });
  job.start();
  try {
    const deadline = Date.now() + 20_000;
    while ((await left()).includes(mark(401)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  } finally {
    job.stop();
  }
  assert.deepEqual(await left(), [mark(399), mark(1)]);
  const res = await query({ filters: { match: { field: 'target', operator: 'LIKE', value: 'retention %' } } });
  assert.equal(res.body.page.totalCount, 2);
});

test('a key the service creates by itself (DEMO_API_KEY at start) is an entry by the service', async () => {
  const demo = '3b1f2e4d-5c6a-4b7e-8f90-a1b2c3d4e5f6';
  const config = { ...t.services.config, demoApiKey: demo };
  await prepareDatabase(config, parseDatabaseUrl(config.databaseUrl), t.knex, pino({ level: 'silent' }));
  const record = (await t.services.keys.findByKey(demo))!;
  const res = await query({ select: ['actorType', 'actor', 'action', 'target', 'outcome'], filters: { match: { field: 'target', operator: '=', value: record.id } } });
  assert.deepEqual(res.body.data, [{ actorType: 'service', actor: 'service', action: 'api-key.created', target: record.id, outcome: 'succeeded' }]);
  // A second start finds it active: nothing to record.
  await prepareDatabase(config, parseDatabaseUrl(config.databaseUrl), t.knex, pino({ level: 'silent' }));
  assert.equal((await query({ filters: { match: { field: 'target', operator: '=', value: record.id } } })).body.page.totalCount, 1);
});

test('the migration folds an existing webhook change log (whkaud) into the audit log', async () => {
  const source = {
    getMigrations: async () => [...MIGRATIONS],
    getMigrationName: (m: (typeof MIGRATIONS)[number]) => m[0],
    getMigration: async (m: (typeof MIGRATIONS)[number]) => ({ up: m[1].up, down: m[1].down }),
  };
  const config: Knex.MigratorConfig = { migrationSource: source, tableName: 'knex_migrations' };
  const k = t.knex;
  // Back to before the audit log: whkaud again, as an older version left it (the migrations after
  // it undone first, newest first).
  for (let undone = 0; (await k.schema.hasTable('audlog')) && undone < 10; undone += 1) await k.migrate.down(config);
  assert.equal(await k.schema.hasTable('audlog'), false);
  const admin = (await t.services.keys.findByKey(t.adminKey))!;
  const endpoint = '5b0c3f1e-8d6a-4e0b-9c57-2f1d7a9e4b10';
  await k('whkaud').insert([
    { endpoint_id: endpoint, key_id: admin.id, action: 'created', detail: JSON.stringify({ url: 'https://hooks.example.com/x' }), at: t.engine === 'sqlite' ? '2026-01-05 10:00:00' : new Date('2026-01-05T10:00:00Z') },
    { endpoint_id: endpoint, key_id: null, action: 'paused', detail: JSON.stringify({ reason: 'owner key disabled' }), at: t.engine === 'sqlite' ? '2026-01-06 10:00:00' : new Date('2026-01-06T10:00:00Z') },
  ]);
  await migrateLatest(k);
  assert.equal(await k.schema.hasTable('whkaud'), false);
  const res = await query({ select: ['occurredAt', 'actorType', 'actor', 'actorKeyId', 'action', 'target', 'outcome', 'detail'], filters: { match: { field: 'target', operator: '=', value: endpoint } }, orderBy: ['occurredAt ASC'] });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body.data, [
    { occurredAt: '2026-01-05T10:00:00.000Z', actorType: 'api-key', actor: 'test admin', actorKeyId: admin.id, action: 'webhook-endpoint.created', target: endpoint, outcome: 'succeeded', detail: '{"url":"https://hooks.example.com/x"}' },
    { occurredAt: '2026-01-06T10:00:00.000Z', actorType: 'service', actor: 'service', actorKeyId: null, action: 'webhook-endpoint.paused', target: endpoint, outcome: 'succeeded', detail: '{"reason":"owner key disabled"}' },
  ]);
});
