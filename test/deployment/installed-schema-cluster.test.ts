/**
 * A column the installed build lacks, across processes (issue 25): the real entry point
 * (src/main.ts) with WORKERS=2 on a database of TEST_ENGINE whose parts table lacks the column of
 * manufacturerPartNumber. Every worker learns the installed schema itself at start and logs it
 * once: requests on fresh connections (spread over both workers) that name the field answer 422
 * COLUMN_UNAVAILABLE without any of them running into the database's error first, and those that
 * do not name it answer 200 without the field. /readyz is 200 throughout.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../support/app';
import { spawnCluster, type SpawnedCluster } from '../support/cluster-process';
import { postJson } from '../support/server-process';
import { parseDatabaseUrl } from '../../src/storage/database';
import { ApiKeyRepository } from '../../src/storage/api-keys';

const apiKey = randomUUID();
let db: { url: string; drop: () => Promise<void> };
let knex: Knex;
let cluster: SpawnedCluster | undefined;

before(async () => {
  db = await createTestDatabase();
  knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 1 }).config);
  await new ApiKeyRepository(knex).ensure(apiKey, 'installed schema', 'integration');
  await knex.schema.alterTable('tkfprt', (t) => t.dropColumn('manprt'));
  await knex.destroy();
  cluster = await spawnCluster({ databaseUrl: db.url, workers: 2, env: { LOG_LEVEL: 'info', CONTRACT_PRECOMPILE: 'false' } });
});

after(async () => {
  await cluster?.kill();
  await db?.drop();
});

/** Every JSON log line so far: not parsed from `output()`, which keeps only the last 20,000 characters (a start logs more than that at info). */
function logLines(): Array<Record<string, any>> {
  return cluster!.logLines();
}

test('each worker learns the installed schema at start: 422 naming the field on every worker, 200 without it', async () => {
  const port = cluster!.port;
  const headers = { 'x-api-key': apiKey };
  for (let i = 0; i < 8; i += 1) {
    const named = await postJson(port, '/api/v3/parts/query', { select: ['partCode', 'manufacturerPartNumber'], page: { pageSize: 1 } }, headers);
    assert.equal(named.status, 422, JSON.stringify(named.body));
    assert.equal((named.body as any).errors[0].field, 'select[1]');
    const plain = await postJson(port, '/api/v3/parts/query', { page: { pageSize: 1 } }, headers);
    assert.equal(plain.status, 200, JSON.stringify(plain.body));
    assert.ok(!('manufacturerPartNumber' in (plain.body as any).data[0]));
  }
  const learnt = logLines().filter((l) => /installed build of the accounting database lacks columns/.test(String(l.msg)));
  assert.equal(new Set(learnt.map((l) => l.pid)).size, 2, `one line per worker:\n${JSON.stringify(learnt)}`);
  assert.equal(learnt.length, 2);
  for (const l of learnt) assert.deepEqual(l.missingColumns, ['tkfprt.manprt (parts.manufacturerPartNumber)']);
  assert.equal(logLines().filter((l) => /reported a missing column/.test(String(l.msg))).length, 0, 'no worker ran into the missing column');
});
