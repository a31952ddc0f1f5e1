/**
 * The breaking-change gate (scripts/check-breaking.ts, Optic) on temporary copies of the public
 * document: an additive change passes and prints its report; a removed operation or a removed
 * response field fails; the same removal passes once info.version has a new major version.
 * (`make test` runs the gate on the real document against docs/contract/openapi-3.0.0.yaml.)
 *
 * The copies keep a handful of operations so that each Optic run stays short; the rules are the
 * same for the whole document.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';

const ROOT = path.resolve(__dirname, '..');
const KEEP = ['/utility/ping', '/utility/lock', '/ledger-transactions', '/vendors/query'];
let dir: string;
let baseline: string;
let base: any;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'breaking-'));
  const doc = parse(fs.readFileSync(path.join(ROOT, 'docs', 'contract', 'openapi-3.0.0.yaml'), 'utf8'));
  assert.equal(doc.openapi.slice(0, 3), '3.1', 'the baseline is OpenAPI 3.1');
  assert.equal(doc.info.version, '3.0.0');
  doc.paths = Object.fromEntries(KEEP.map((p) => [p, doc.paths[p]]));
  assert.ok(KEEP.every((p) => doc.paths[p]), 'the kept operations exist in the baseline');
  base = doc;
  baseline = path.join(dir, 'baseline.yaml');
  fs.writeFileSync(baseline, stringify(doc));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function gate(change: (doc: any) => void): { status: number | null; out: string } {
  const doc = structuredClone(base);
  change(doc);
  const file = path.join(dir, `current-${Math.random().toString(36).slice(2)}.yaml`);
  fs.writeFileSync(file, stringify(doc));
  const run = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['scripts/check-breaking.ts', baseline, file], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 600_000,
  });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

test('an additive change passes, and the report is printed', () => {
  const r = gate((doc) => {
    doc.components.schemas.PingResult.properties.serverVersion = { type: 'string', description: 'Build of the server.' };
    doc.paths['/parts/query'] = structuredClone(doc.paths['/vendors/query']);
    doc.paths['/parts/query'].post.operationId = 'queryPartsAgain';
  });
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /added/i);
  assert.match(r.out, /no breaking change/);
});

test('a removed operation fails', () => {
  const r = gate((doc) => {
    delete doc.paths['/utility/lock'];
  });
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /breaking/i);
});

test('a removed response field fails', () => {
  const r = gate((doc) => {
    delete doc.components.schemas.PingResult.properties.serverTime;
    doc.components.schemas.PingResult.required = (doc.components.schemas.PingResult.required ?? []).filter((n: string) => n !== 'serverTime');
  });
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /serverTime/);
});

test('the same removal passes with a new major info.version', () => {
  const r = gate((doc) => {
    delete doc.paths['/utility/lock'];
    doc.info.version = '4.0.0';
  });
  assert.equal(r.status, 0, r.out);
});
