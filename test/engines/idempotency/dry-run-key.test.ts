/**
 * Spec, Writes rule 7: "An Idempotency-Key sent with a dry run is ignored and not consumed." Its
 * form too: a dry run with a malformed key (too long, not printable ASCII, empty) answers as a
 * dry run without a key, on every write; a real write with the same key is still 400
 * IDEMPOTENCY_KEY_INVALID naming the header, on every write, and nothing is recorded under it
 * (docs/decisions/0407-a-dry-run-ignores-the-key-form.md). Bodies: the first request example of
 * each write in the public contract, which runs on the seeded demo company.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { startTestApp, type TestApp } from '../../support/app';
import { assertProblem } from '../../support/http';
import { WRITES } from '../../../src/engines/posting/writes';
import { IDEMPOTENCY_KEY_MAX_LENGTH, IDEMPOTENCY_KEY_PATTERN } from '../../../src/engines/idempotency/key';

type Json = Record<string, any>;
const ROOT = path.join(__dirname, '..', '..', '..');
const DOC: Json = YAML.parse(fs.readFileSync(path.join(ROOT, 'generated', 'openapi.public.yaml'), 'utf8'));
const BASE = '/api/v3';

function deref(node: any): any {
  let n = node;
  while (n && typeof n === 'object' && typeof n.$ref === 'string') {
    n = n.$ref
      .slice(2)
      .split('/')
      .reduce((at: any, part: string) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], DOC);
  }
  return n;
}

/** The first request example of each wired write (route -> body). */
function firstExamples(): Array<{ route: string; body: unknown }> {
  const out: Array<{ route: string; body: unknown }> = [];
  for (const { route, definition } of WRITES) {
    if (!definition) continue;
    const media = deref(DOC.paths[route]?.post?.requestBody)?.content?.['application/json'];
    assert.ok(media, `${route}: a JSON request body in the contract`);
    const named = Object.values<any>(media.examples ?? {}).map((e) => deref(e).value);
    const body = named[0] ?? media.example;
    assert.ok(body !== undefined, `${route}: a request example`);
    out.push({ route, body });
  }
  return out;
}

const MALFORMED = ['x'.repeat(IDEMPOTENCY_KEY_MAX_LENGTH + 1), 'clé-1', '', 'tab\there'];

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t?.close());

function send(route: string, body: unknown, key: string, dryRun: boolean) {
  return t.http
    .post(BASE + route + (dryRun ? '?dryRun=true' : ''))
    .set('x-api-key', t.apiKey)
    .set('Content-Type', 'application/json')
    .set('Idempotency-Key', key)
    .send(body as object);
}

const records = async () => Number((await t.knex('idmkey').count({ n: '*' }))[0]!.n);

test('the key form of the code is the one the contract publishes (IdempotencyKey parameter)', () => {
  for (const name of ['IdempotencyKey', 'IdempotencyKeyRequired']) {
    const schema = DOC.components.parameters[name].schema;
    assert.equal(schema.maxLength, IDEMPOTENCY_KEY_MAX_LENGTH, name);
    assert.equal(schema.minLength, 1, name);
    assert.equal(new RegExp(schema.pattern).source, IDEMPOTENCY_KEY_PATTERN.source, name);
  }
});

test('a dry run ignores a malformed Idempotency-Key on every write: 200 dryRun true, nothing recorded', async () => {
  const examples = firstExamples();
  assert.ok(examples.length >= 7, `every wired write has an example (${examples.length})`);
  const before = await records();
  for (const { route, body } of examples) {
    for (const key of MALFORMED) {
      const res = await send(route, body, key, true);
      assert.equal(res.status, 200, `${route} dry run, key ${JSON.stringify(key.slice(0, 20))}: ${res.status} ${res.text.slice(0, 400)}`);
      assert.equal(res.body.dryRun, true, route);
    }
  }
  assert.equal(await records(), before, 'a dry run records nothing under any key');
});

test('a real write with a malformed Idempotency-Key is 400 IDEMPOTENCY_KEY_INVALID naming the header on every write, nothing recorded', async () => {
  const before = await records();
  for (const { route, body } of firstExamples()) {
    for (const key of MALFORMED) {
      const res = await send(route, body, key, false);
      const problem = assertProblem(res, 'IDEMPOTENCY_KEY_INVALID');
      assert.deepEqual(
        problem.errors.map((e: { field: string }) => e.field),
        ['Idempotency-Key'],
        route,
      );
      assert.equal(res.headers['idempotency-status'], undefined, `${route}: nothing ran, no Idempotency-Status`);
    }
  }
  assert.equal(await records(), before);
});

test('a dry run without a key on /purchase-order-receipts (key required on real writes) is accepted; the real write is not', async () => {
  const receipt = firstExamples().find((e) => e.route === '/purchase-order-receipts')!;
  const dry = await t.http.post(`${BASE}/purchase-order-receipts?dryRun=true`).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').send(receipt.body as object);
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.body.dryRun, true);
  const real = await t.http.post(`${BASE}/purchase-order-receipts`).set('x-api-key', t.apiKey).set('Content-Type', 'application/json').send(receipt.body as object);
  const problem = assertProblem(real, 'IDEMPOTENCY_KEY_INVALID');
  assert.equal(problem.errors[0].field, 'Idempotency-Key');
});
