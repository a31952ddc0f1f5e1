/**
 * The match index's row keys (src/engines/match/row-keys.ts): packed to 16 bytes only when every
 * key is a canonical lower-case uuid, and always given back as the exact value read.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { rowKeys } from '../../../src/engines/match/row-keys';

test('uuid keys come back exactly, in order', () => {
  fc.assert(
    fc.property(fc.array(fc.uuid(), { maxLength: 50 }), (uuids) => {
      const keys = uuids.map((u) => u.toLowerCase());
      const packed = rowKeys(keys);
      assert.equal(packed.length, keys.length);
      keys.forEach((k, i) => assert.equal(packed.at(i), k));
    }),
  );
  const many = Array.from({ length: 1000 }, () => randomUUID());
  const packed = rowKeys(many);
  assert.equal(packed.at(999), many[999]);
  assert.equal(packed.constructor.name, 'PackedUuids', '1,000 canonical uuids are packed');
});

test('anything else is kept as read: upper-case uuids, integers, mixed', () => {
  for (const keys of [[randomUUID().toUpperCase(), randomUUID()], [1, 2, 30], ['A-1', 'B-2'], [randomUUID(), 7]]) {
    const kept = rowKeys(keys);
    assert.equal(kept.constructor.name, 'PlainKeys');
    keys.forEach((k, i) => assert.equal(kept.at(i), k));
  }
  assert.equal(rowKeys([]).length, 0);
});
