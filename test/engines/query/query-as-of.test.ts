/**
 * The read envelope's asOf (the spec: "server clock when the result set was produced; use it as the
 * next watermark"; decision 0400): the clock taken BEFORE the read's snapshot. A change committed
 * after the snapshot is not in the answer, so its stamp must not be earlier than asOf, or an
 * integrator who reads from asOf next time never sees it.
 *
 * The test holds each read right after its snapshot was taken (its first statement answered, by
 * wrapping the query dialect the routes read through), commits a change to a part on a second
 * connection then, and lets the read finish: asOf must not be later than the change's stamp, and
 * the change must not be in the answer. Through v3 query (with and without children: the two read
 * paths), v3 match, v2 query and v2 match.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { openDatabase, parseDatabaseUrl } from '../../../src/storage/database';
import { withChangeAfterSnapshot } from '../../support/after-snapshot';

let t: TestApp;
let other: Knex;
useTestApp((app) => {
  t = app;
  // A second connection: on SQLite the app's pool has one, which the held read keeps.
  other = openDatabase(parseDatabaseUrl(t.services.config.databaseUrl, { min: 0, max: 1 }));
});
after(async () => {
  await other?.destroy();
});

interface Part {
  id: string;
  partCode: string;
  partName: string;
}

/** A part to change: the first by partCode (stable across the reads of a test). */
async function somePart(): Promise<Part> {
  const res = await t.post('/api/v3/parts/query', { select: ['id', 'partCode', 'partName'], orderBy: ['partCode ASC'], page: { pageSize: 1 } });
  assert.equal(res.status, 200, res.text);
  return res.body.data[0] as Part;
}

let renamed = 0;
/** Renames the part on the other connection, stamping it modified now; answers the stamp. */
function renamePart(part: Part): () => Promise<Date> {
  return async () => {
    const stamp = new Date();
    renamed += 1;
    await other('tkfprt')
      .where({ _idnum: part.id })
      .update({ prtnme: `Renamed after the snapshot ${renamed}`, upddte: t.services.queryDialect.encodeValue('datetime', stamp) as Knex.Value });
    return stamp;
  };
}

function assertWatermark(asOf: string, stamp: Date, what: string): void {
  assert.ok(typeof asOf === 'string' && !Number.isNaN(Date.parse(asOf)), `${what}: asOf is a timestamp (${asOf})`);
  assert.ok(
    Date.parse(asOf) <= stamp.getTime(),
    `${what}: asOf ${asOf} is later than a change committed after the read's snapshot (stamped ${stamp.toISOString()}): used as the next watermark, it would lose that change`,
  );
}

test('query: asOf is not later than a change committed after the snapshot (page read at once, no children)', async () => {
  const part = await somePart();
  const { response: res, stamp } = await withChangeAfterSnapshot(t, renamePart(part), () =>
    t.post('/api/v3/parts/query', { select: ['id', 'partName'], filters: { match: { field: 'id', operator: '=', value: part.id } } }),
  );
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.length, 1);
  assert.equal(res.body.data[0].partName, part.partName, 'the change came after the snapshot');
  assertWatermark(res.body.asOf, stamp, 'parts/query');
  // The integrator's next read, from the watermark, finds the change.
  const next = await t.post('/api/v3/parts/query', { select: ['id', 'partName'], lastUpdated: res.body.asOf.slice(0, 10), filters: { match: { field: 'id', operator: '=', value: part.id } } });
  assert.equal(next.status, 200, next.text);
  assert.notEqual(next.body.data[0]?.partName, part.partName);
});

test('query: asOf is not later than a change committed after the snapshot (read statement by statement, with children)', async () => {
  const part = await somePart();
  const { response: res, stamp } = await withChangeAfterSnapshot(t, renamePart(part), () =>
    t.post('/api/v3/ap-invoices/query', { select: ['id'], children: ['lines'], page: { pageSize: 2 } }),
  );
  assert.equal(res.status, 200, res.text);
  assertWatermark(res.body.asOf, stamp, 'ap-invoices/query with lines');
});

test('match: asOf is not later than a change committed after the snapshot', async () => {
  const part = await somePart();
  const { response: res, stamp } = await withChangeAfterSnapshot(t, renamePart(part), () =>
    t.post('/api/v3/parts/match', { matchString: part.partCode, matchFields: ['partCode'], select: ['id', 'partName'], maxDistance: 1 }),
  );
  assert.equal(res.status, 200, res.text);
  const hit = (res.body.data as Array<{ id: string; partName: string }>).find((d) => d.id === part.id);
  assert.ok(hit, 'the part matches its own code');
  assert.equal(hit.partName, part.partName, 'the change came after the snapshot');
  assertWatermark(res.body.asOf, stamp, 'parts/match');
});

test('v2 query and match: the same asOf rule', async () => {
  const part = await somePart();
  const q = await withChangeAfterSnapshot(t, renamePart(part), () => t.post('/api/v2/query/part', { selectFields: ['id', 'partName'], pageSize: 1 }));
  assert.equal(q.response.status, 200, q.response.text);
  assertWatermark(q.response.body.asOf, q.stamp, 'v2 query/part');
  const m = await withChangeAfterSnapshot(t, renamePart(part), () =>
    t.post('/api/v2/match/part', { matchString: part.partCode, matchFields: ['partCode'], selectFields: ['id'], maxDistance: 1 }),
  );
  assert.equal(m.response.status, 200, m.response.text);
  assertWatermark(m.response.body.asOf, m.stamp, 'v2 match/part');
});
