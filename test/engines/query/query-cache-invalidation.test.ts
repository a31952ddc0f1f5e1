/**
 * The exact totalCount cache (src/engines/query/count-cache.ts) and the in-memory match index
 * (src/engines/match/index-cache.ts) are reused only under an unchanged change token; a commit
 * made through a second, independent connection (another instance, the desktop system, a DBA)
 * must be seen by the very next read: the data change counter's triggers bump in that commit
 * (test/storage/data-change-counter.test.ts covers the token itself).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from '../../support/app';
import { openDatabase, parseDatabaseUrl } from '../../../src/storage/database';
import { Dec } from '../../../src/storage/decimal';

let t: TestApp;
let other: Knex;

before(async () => {
  t = await startTestApp();
  other = openDatabase(parseDatabaseUrl(t.services.config.databaseUrl, { min: 0, max: 1 }));
});
after(async () => {
  await other?.destroy();
  await t?.close();
});

const QUERY = { filters: { match: { field: 'partCost', operator: '>', value: 5000 } }, page: { pageNumber: 1, pageSize: 1 } };

async function totalCount(): Promise<number> {
  const res = await t.post('/api/v3/parts/query', QUERY);
  assert.equal(res.status, 200, res.text);
  return res.body.page.totalCount as number;
}

test('a count reused across pages is recounted after another connection commits a change', async () => {
  const first = await totalCount();
  assert.equal(await totalCount(), first, 'unchanged data: same count (served from the cache)');
  const cheap = await other('tkfprt').where('prtcst', '<', t.services.dialect.encodeDecimal(new Dec(5000), 4)).orderBy('recnum').first('recnum', 'prtcst');
  assert.ok(cheap, 'a part under the threshold exists');
  await other('tkfprt').where({ recnum: cheap.recnum }).update({ prtcst: t.services.dialect.encodeDecimal(new Dec('9999.5'), 4) });
  try {
    assert.equal(await totalCount(), first + 1, 'the other connection’s commit is counted at once');
  } finally {
    await other('tkfprt').where({ recnum: cheap.recnum }).update({ prtcst: cheap.prtcst });
  }
  assert.equal(await totalCount(), first, 'and its undo too');
});

test('the match index sees a name changed by another connection on the very next match', async () => {
  const name = 'Zyxwv Quokka Flange 7in';
  const match = async () => {
    const res = await t.post('/api/v3/parts/match', { matchString: name, matchFields: ['partName'], select: ['recordNumber', 'partName'], maxDistance: 1 });
    assert.equal(res.status, 200, res.text);
    return res.body.data as Array<{ recordNumber: number; partName: string }>;
  };
  assert.deepEqual(await match(), [], 'no such part yet (the index is built now)');
  const part = await other('tkfprt').orderBy('recnum').first('recnum', 'prtnme');
  await other('tkfprt').where({ recnum: part.recnum }).update({ prtnme: name });
  try {
    const hits = await match();
    assert.deepEqual(hits.map((h) => h.recordNumber), [Number(part.recnum)]);
  } finally {
    await other('tkfprt').where({ recnum: part.recnum }).update({ prtnme: part.prtnme });
  }
  assert.deepEqual(await match(), [], 'renamed back: gone again');
});
