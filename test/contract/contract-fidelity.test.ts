/**
 * The contract says what the service does (issue 25, "The contract says what the service does"):
 * checks over the public document (generated/openapi.public.yaml, what client generators and /docs
 * read) for the statuses, headers and refusals the spec names. Behaviour behind each declaration is
 * tested where the behaviour lives (match-http, maintenance-lock, events-endpoints, query-http).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { V2_FIELDS } from '../../src/v2/fields';
import { MATCH_RESULT_CAP } from '../../src/engines/match/run';
import { startTestApp, type TestApp } from '../support/app';

type Json = Record<string, any>;
const DOC: Json = YAML.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.public.yaml'), 'utf8'));

function deref<T = Json>(node: any): T {
  let n = node;
  for (let hops = 0; n && typeof n === 'object' && typeof n.$ref === 'string'; hops++) {
    assert.ok(hops < 20, `$ref loop at ${n.$ref}`);
    n = n.$ref
      .slice(2)
      .split('/')
      .reduce((at: any, part: string) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], DOC);
  }
  return n as T;
}

interface Op {
  path: string;
  operationId: string;
  op: Json;
}

const OPS: Op[] = Object.entries<Json>(DOC.paths).flatMap(([p, item]) => Object.values<Json>(item).filter((op) => op && typeof op === 'object' && op.operationId).map((op) => ({ path: p, operationId: op.operationId, op })));
let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());

const isWrite = (o: Op) => (o.op.parameters ?? []).some((x: Json) => deref(x).in === 'query' && deref(x).name === 'dryRun');

test('every response of every operation declares X-Correlation-Id as required (spec: every response carries it)', () => {
  let checked = 0;
  for (const o of OPS) {
    for (const [status, r] of Object.entries<Json>(o.op.responses)) {
      const header = deref(deref(r).headers?.['X-Correlation-Id']);
      assert.ok(header, `${o.operationId} ${status} declares X-Correlation-Id`);
      assert.equal(header.required, true, `${o.operationId} ${status}: X-Correlation-Id is required`);
      checked++;
    }
  }
  assert.ok(checked > 1000, `${checked} responses`);
});

test('every write declares 501 (a posting path not wired up); lock and un-lock declare 504', () => {
  const writes = OPS.filter(isWrite);
  assert.equal(writes.length, 7, 'the seven writes');
  for (const o of writes) assert.ok(o.op.responses['501'], `${o.operationId} declares 501`);
  for (const id of ['lockDatabase', 'unlockDatabase']) {
    const o = OPS.find((x) => x.operationId === id)!;
    assert.ok(o.op.responses['504'], `${id} declares 504`);
  }
});

test('every query and match operation shows V2_FIELD_REJECTED and each rejected v2 field in its 400; the example is what the server answers', async () => {
  const reads = OPS.filter((o) => /\/(query|match)$/.test(o.path));
  assert.ok(reads.length >= 89, `${reads.length} query and match operations`);
  for (const o of reads) {
    const bad = deref(o.op.responses['400']);
    assert.match(bad.description, /V2_FIELD_REJECTED/, `${o.operationId} 400 names V2_FIELD_REJECTED`);
    for (const [v2, v3] of Object.entries(V2_FIELDS)) {
      assert.ok(bad.description.includes(`\`${v2}\` (use \`${v3}\`)`), `${o.operationId} 400 names ${v2} and its replacement ${v3}`);
    }
    const ex = Object.values<Json>(bad.content['application/problem+json'].examples).map((e) => deref(e).value).find((v) => v.type.endsWith('/v2-field-rejected'));
    assert.ok(ex, `${o.operationId} 400 has a V2_FIELD_REJECTED example`);
  }
  for (const schema of ['BaseQueryRequest', 'MatchRequest']) assert.match(DOC.components.schemas[schema].description, /V2_FIELD_REJECTED/, schema);

  // The example is the server's answer to the fields it names.
  const example = Object.values<Json>(deref(reads[0]!.op.responses['400']).content['application/problem+json'].examples)
    .map((e) => deref(e).value)
    .find((v) => v.type.endsWith('/v2-field-rejected'));
  const body = Object.fromEntries(example.errors.map((e: Json) => [e.field, e.field === 'selectFields' ? ['vendorName'] : true]));
  const res = await t.post(example.instance, body);
  assert.equal(res.status, 400, res.text);
  assert.equal(res.headers['x-error-code'], 'V2_FIELD_REJECTED');
  const { correlationId, ...rest } = res.body;
  assert.equal(correlationId, res.headers['x-correlation-id']);
  const { correlationId: _c, ...documented } = example;
  assert.deepEqual(rest, documented);
});

test('un-lock documents who the holder is: the API key that locked and its userName, both', () => {
  const unlock = OPS.find((o) => o.operationId === 'unlockDatabase')!.op.description as string;
  assert.match(unlock, /The holder is the API key that took the lock together with the\s+`userName`/);
  assert.match(unlock, /both must\s+match/);
  assert.match(unlock, /another API key, even with the same `userName`/);
  const lock = OPS.find((o) => o.operationId === 'lockDatabase')!.op.description as string;
  assert.match(lock, /the same API key and `userName`/);
});

test('match declares its cap (MATCH_RESULT_CAP) and the X-Result-Truncated header of a cut answer', () => {
  const matches = OPS.filter((o) => o.path.endsWith('/match'));
  assert.equal(matches.length, 5);
  for (const o of matches) {
    const ok = deref(o.op.responses['200']);
    const header = deref(ok.headers?.['X-Result-Truncated']);
    assert.ok(header, `${o.operationId} 200 declares X-Result-Truncated`);
    assert.equal(header.required, true);
    assert.equal(header.schema.type, 'boolean');
    assert.equal(deref(ok.content['application/json'].schema).properties.data.maxItems, MATCH_RESULT_CAP, `${o.operationId}: data maxItems is the cap`);
    assert.match(o.op.description, new RegExp(`At most ${MATCH_RESULT_CAP} records`));
    assert.match(o.op.description, /X-Result-Truncated: true/);
  }
});
