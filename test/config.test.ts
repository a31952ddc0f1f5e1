/**
 * Configuration: LOCK_ADMIN_ONLY (operator opt-in to admin-only maintenance locking) defaults to
 * false, as the spec's guard "any" says, and a bad value stops the start naming the variable.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../src/config';

test('LOCK_ADMIN_ONLY: off by default, true/false accepted, anything else names the variable', () => {
  assert.equal(loadConfig({}).lockAdminOnly, false);
  assert.equal(loadConfig({ LOCK_ADMIN_ONLY: 'true' }).lockAdminOnly, true);
  assert.equal(loadConfig({ LOCK_ADMIN_ONLY: 'false' }).lockAdminOnly, false);
  assert.throws(() => loadConfig({ LOCK_ADMIN_ONLY: 'admins' }), (err: unknown) => err instanceof ConfigError && /LOCK_ADMIN_ONLY/.test(err.message));
});
