/**
 * POST /events/query answers asOf as every read envelope does (decision 0400): the clock before
 * the page's snapshot, never after it. The read is held right after its snapshot was taken
 * (test/support/after-snapshot.ts); asOf must not be later than that moment.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import type { TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';
import { withChangeAfterSnapshot } from '../support/after-snapshot';

let t: TestApp;
useTestApp((app) => (t = app));

test('events/query: asOf is not later than the moment after the page\'s snapshot', async () => {
  const { response: res, stamp } = await withChangeAfterSnapshot(t, async () => new Date(), () => t.post('/api/v3/events/query', {}));
  assert.equal(res.status, 200, res.text);
  assert.ok(Date.parse(res.body.asOf) <= stamp.getTime(), `asOf ${res.body.asOf} is later than ${stamp.toISOString()}, a moment after the snapshot`);
});
