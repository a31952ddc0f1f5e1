/**
 * openapi-v2.yaml is FROZEN (spec, Versioning 2): any byte change fails here. If this test fails,
 * revert the document; v2 does not evolve (new behaviour goes into v3, openapi.yaml).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import YAML from 'yaml';
import { startTestApp, type TestApp } from '../support/app';
import { V2_WRITES } from '../../src/v2/routes';
import { WRITES } from '../../src/engines/posting/writes';
import { CATALOG } from '../../generated/catalog';

// Changed once after the freeze, by decision 0405: the write inputs had been frozen with v3's
// refusal of unknown fields (`additionalProperties: false`), which v2 never had (spec, Versioning 3).
const FROZEN_SHA256 = '7bf3bd09b5f460dd3c4b693fa0aa4eb44c4246e9fe0bd2bc79c1adf2b94dcf46';
const file = path.join(__dirname, '..', '..', 'openapi-v2.yaml');

let t: TestApp;
before(async () => {
  t = await startTestApp({ seeded: false });
});
after(async () => t.close());

test('openapi-v2.yaml has the frozen bytes', () => {
  const sha = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  assert.equal(sha, FROZEN_SHA256, 'openapi-v2.yaml changed: the v2 document is frozen; revert the change');
});

test('the frozen document publishes every v2 path the adapter serves, and nothing else', () => {
  const doc = YAML.parse(fs.readFileSync(file, 'utf8'));
  const expected = ['/query/{entity}', '/match/{entity}', ...Object.keys(V2_WRITES), '/utility/ping', '/utility/lock', '/utility/un-lock'].sort();
  assert.deepEqual(Object.keys(doc.paths).sort(), expected);
  assert.equal(doc.servers[0].url, '/api/v2');
  // Every v2 write maps to a v3 write of the table, every v3 entity has a v2 name.
  assert.deepEqual(Object.values(V2_WRITES).sort(), WRITES.map((w) => w.route).sort());
  const names = doc.components.schemas.V2EntityName['x-v3-entities'] as Record<string, string>;
  assert.deepEqual(Object.values(names).sort(), Object.keys(CATALOG).sort());
  assert.equal(names.part, 'parts');
  assert.equal(names.vendor, 'vendors');
});

test('GET /v2/openapi.yaml serves the frozen document beside /openapi.yaml, without a key', async () => {
  const res = await t.http.get('/v2/openapi.yaml');
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /application\/yaml/);
  assert.equal(res.text, fs.readFileSync(file, 'utf8'));
  const v3 = await t.http.get('/openapi.yaml');
  assert.equal(v3.status, 200);
  assert.notEqual(v3.text, res.text);
  const post = await t.http.post('/v2/openapi.yaml');
  assert.equal(post.status, 405);
});
