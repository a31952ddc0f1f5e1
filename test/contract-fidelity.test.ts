/**
 * The contract says what the service does (issue 25, "The contract says what the service does"):
 * checks over the public document (generated/openapi.public.yaml, what client generators and /docs
 * read) for the statuses, headers and refusals the spec names. Behaviour behind each declaration is
 * tested where the behaviour lives (match-http, maintenance-lock, events-endpoints, query-http).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

type Json = Record<string, any>;
const DOC: Json = YAML.parse(fs.readFileSync(path.join(__dirname, '..', 'generated', 'openapi.public.yaml'), 'utf8'));

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
