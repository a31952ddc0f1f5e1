/**
 * Configuration: LOCK_ADMIN_ONLY (operator opt-in to admin-only maintenance locking) defaults to
 * false, as the spec's guard "any" says, and a bad value stops the start naming the variable.
 */
import os from 'node:os';
import test from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config';
import { workerExecArgv } from '../../src/heap-limit';

test('LOCK_ADMIN_ONLY: off by default, true/false accepted, anything else names the variable', () => {
  assert.equal(loadConfig({}).lockAdminOnly, false);
  assert.equal(loadConfig({ LOCK_ADMIN_ONLY: 'true' }).lockAdminOnly, true);
  assert.equal(loadConfig({ LOCK_ADMIN_ONLY: 'false' }).lockAdminOnly, false);
  assert.throws(() => loadConfig({ LOCK_ADMIN_ONLY: 'admins' }), (err: unknown) => err instanceof ConfigError && /LOCK_ADMIN_ONLY/.test(err.message));
});

test('V2_REJECT_UNKNOWN_FIELDS: off by default (v2 ignored unknown fields), true/false accepted, anything else names the variable', () => {
  assert.equal(loadConfig({}).v2RejectUnknownFields, false);
  assert.equal(loadConfig({ V2_REJECT_UNKNOWN_FIELDS: 'true' }).v2RejectUnknownFields, true);
  assert.equal(loadConfig({ V2_REJECT_UNKNOWN_FIELDS: 'false' }).v2RejectUnknownFields, false);
  assert.throws(() => loadConfig({ V2_REJECT_UNKNOWN_FIELDS: 'strict' }), (err: unknown) => err instanceof ConfigError && /V2_REJECT_UNKNOWN_FIELDS/.test(err.message));
});

test('WORKERS, INSTANCE_ID, LOCK_POLL_MS, HEARTBEAT_MS: defaults, bounds, and a message naming the variable', () => {
  const defaults = loadConfig({});
  assert.ok(defaults.workers >= 1, 'WORKERS defaults to the number of cores');
  assert.equal(defaults.instanceId, `${os.hostname()}:8080`, 'INSTANCE_ID defaults to host name and port');
  assert.equal(loadConfig({ PORT: '9000' }).instanceId, `${os.hostname()}:9000`);
  assert.equal(defaults.lockPollMs, 250);
  assert.equal(defaults.heartbeatMs, 1000);
  assert.equal(loadConfig({ WORKERS: '3' }).workers, 3);
  assert.equal(loadConfig({ INSTANCE_ID: 'api-2.eu' }).instanceId, 'api-2.eu');
  assert.throws(() => loadConfig({ WORKERS: '0' }), /WORKERS/);
  assert.throws(() => loadConfig({ INSTANCE_ID: 'has space' }), /INSTANCE_ID/);
  assert.throws(() => loadConfig({ LOCK_POLL_MS: '1000' }), /LOCK_POLL_MS/, 'a poll of 1 s or more could not keep the 1 s bound');
  assert.throws(() => loadConfig({ HEARTBEAT_MS: '2000' }), /HEARTBEAT_MS/, '3 missed beats must stay within 5 s');
});

test('HEAP_LIMIT_MB: 1024 by default, 0 for V8’s own sizing, under 256 refused; an operator’s own flag wins', () => {
  assert.equal(loadConfig({}).heapLimitMb, 1024);
  assert.equal(loadConfig({ HEAP_LIMIT_MB: '1024' }).heapLimitMb, 1024);
  assert.equal(loadConfig({ HEAP_LIMIT_MB: '0' }).heapLimitMb, 0);
  assert.equal(loadConfig({ HEAP_LIMIT_MB: '2048' }).heapLimitMb, 2048);
  assert.throws(() => loadConfig({ HEAP_LIMIT_MB: '100' }), /HEAP_LIMIT_MB/);
  assert.throws(() => loadConfig({ HEAP_LIMIT_MB: 'lots' }), /HEAP_LIMIT_MB/);
  assert.deepEqual(workerExecArgv(['--enable-source-maps'], undefined, 1024), ['--enable-source-maps', '--max-old-space-size=1024']);
  assert.deepEqual(workerExecArgv([], undefined, 0), [], '0: no flag');
  assert.deepEqual(workerExecArgv(['--max-old-space-size=300'], undefined, 1024), ['--max-old-space-size=300'], 'command line wins');
  assert.deepEqual(workerExecArgv([], '--max-old-space-size=512 --trace-warnings', 1024), [], 'NODE_OPTIONS wins (workers inherit it)');
});

test('EVENT_DETECTION_LAG_SECONDS: 30 by default, 1 to 3600; 0 is refused naming the variable (SQLite stamps whole seconds)', () => {
  assert.equal(loadConfig({}).eventDetectionLagSeconds, 30);
  assert.equal(loadConfig({ EVENT_DETECTION_LAG_SECONDS: '1' }).eventDetectionLagSeconds, 1);
  // Not tied to DB_DEADLINE_MS any more: a transaction still writing holds detection back (decision 0466).
  assert.equal(loadConfig({ EVENT_DETECTION_LAG_SECONDS: '1', DB_DEADLINE_MS: '15000' }).eventDetectionLagSeconds, 1);
  for (const bad of ['0', '3601', '-1', '1.5']) {
    assert.throws(() => loadConfig({ EVENT_DETECTION_LAG_SECONDS: bad }), (err: unknown) => err instanceof ConfigError && /EVENT_DETECTION_LAG_SECONDS/.test(err.message), bad);
  }
});

test('OTEL_EXPORTER_OTLP_ENDPOINT (and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): unset or an http(s) URL; anything else names the variable', () => {
  assert.doesNotThrow(() => loadConfig({}));
  assert.doesNotThrow(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }));
  assert.doesNotThrow(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com/otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }));
  for (const bad of ['not-a-url', 'collector:4318', 'ftp://collector', 'http://']) {
    assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: bad }), (err: unknown) => err instanceof ConfigError && /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http/.test(err.message), bad);
  }
  assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not-a-url' }), (err: unknown) => err instanceof ConfigError && /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT/.test(err.message));
});
