/**
 * Events rule 4 with scoped keys (src/events/visibility.ts): an event carries only what the
 * endpoint's owner may read. An unscoped key gets the whole record; a scoped key without `read`
 * gets no document event; a disabled key gets nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiKeyRecord } from '../../src/storage/api-keys';
import { visibleRecord } from '../../src/events/visibility';

const owner = (over: Partial<ApiKeyRecord>): ApiKeyRecord => ({ id: 'k', name: 'owner', role: 'admin', state: 'active', reason: null, createdAt: '2026-11-23T00:00:00Z', scopes: null, ...over });
const record = { id: '1', invoiceNumber: 'INV-1', vendor: 'Acme', total: 100 };

test('an unscoped active owner receives the whole record', () => {
  assert.deepEqual(visibleRecord(owner({}), 'payable_invoice', record), record);
});

test('a scoped owner with read receives the record; without read, nothing', () => {
  assert.deepEqual(visibleRecord(owner({ scopes: ['read', 'events:manage'] }), 'payable_invoice', record), record);
  assert.equal(visibleRecord(owner({ scopes: ['events:manage'] }), 'payable_invoice', record), undefined);
});

test('a disabled or revoked owner receives nothing', () => {
  assert.equal(visibleRecord(owner({ state: 'disabled' }), 'purchase_order', record), undefined);
  assert.equal(visibleRecord(owner({ state: 'revoked' }), 'purchase_order', record), undefined);
  assert.equal(visibleRecord(undefined, 'purchase_order', record), undefined);
});
