/**
 * Every request example of the public contract (generated/openapi.public.yaml, the document /docs
 * serves) runs on the seeded demo company and answers 200 with a body valid against the
 * operation's 200 response schema. A new user copies these examples first: an example that
 * answers 404 because it names a vendor the demo company does not have is a defect.
 *
 * Generic over the contract: operations and examples are read from the document, so an operation
 * added later is exercised as soon as it has examples.
 *   - examples: `examples` and `example` of the JSON request body and of every parameter
 *     (header / query parameter examples ride along with the body examples of their operation).
 *   - reads run first; writes (operations with a `dryRun` query parameter) run each example as a
 *     dry run (nothing may change in the database), then for real with an Idempotency-Key
 *     (`applied`, something written), then again with the same key (`replayed`, same body);
 *     the books invariants are checked after the real writes.
 *   - path parameter examples are put in the path; the webhook endpoints and delivery the Events
 *     examples name are created first (seedEventExamples: webhooks are not part of the demo company).
 *   - operations that document 403 run with the admin key; the maintenance lock runs last and
 *     un-lock right after it, then the first read example must answer 200 again.
 * Responses are validated twice: by the server (the harness turns response validation on, so
 * a body off the contract answers 500) and here with Ajv against the document.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Knex } from 'knex';
import { CATALOG } from '../../generated/catalog';
import { startTestApp, type TestApp } from '../support/app';
import { assertBooksInvariants } from '../support/invariants';
import { seedEventExamples } from '../support/events';
import { RESPONSE_AJV_CODE } from '../../src/http/openapi-validator-patches';

type Json = Record<string, any>;

const DOC: Json = YAML.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.public.yaml'), 'utf8'));
const BASE: string = DOC.servers?.[0]?.url ?? '/api/v3';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Follows a local `$ref` (`#/components/...`). */
function deref<T = Json>(node: any): T {
  let n = node;
  for (let hops = 0; n && typeof n === 'object' && typeof n.$ref === 'string'; hops++) {
    assert.ok(hops < 20, `$ref loop at ${n.$ref}`);
    assert.ok(n.$ref.startsWith('#/'), `only local $ref are supported: ${n.$ref}`);
    n = n.$ref
      .slice(2)
      .split('/')
      .reduce((at: any, part: string) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], DOC);
    assert.ok(n !== undefined, `unresolved $ref ${node.$ref}`);
  }
  return n as T;
}

/** Named example values of an `examples` map and/or an `example`. */
function examplesOf(holder: Json | undefined, fallbackName: string): Array<{ name: string; value: unknown }> {
  const out: Array<{ name: string; value: unknown }> = [];
  if (!holder) return out;
  for (const [name, ex] of Object.entries<any>(holder.examples ?? {})) {
    const e = deref(ex);
    assert.ok('value' in e, `example ${name} has a value (externalValue is not supported)`);
    out.push({ name, value: e.value });
  }
  if (holder.example !== undefined) out.push({ name: fallbackName, value: holder.example });
  return out;
}

interface Param {
  name: string;
  in: 'header' | 'query' | 'path' | 'cookie';
  values: unknown[];
}

interface Operation {
  operationId: string;
  method: (typeof METHODS)[number];
  path: string;
  write: boolean;
  admin: boolean;
  hasBody: boolean;
  bodies: Array<{ name: string; value: unknown }>;
  params: Param[];
  responseSchema: Json | undefined;
}

function operations(): Operation[] {
  const ops: Operation[] = [];
  for (const [p, item] of Object.entries<Json>(DOC.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((x: any) => deref(x));
      const body = op.requestBody ? deref(op.requestBody) : undefined;
      const json = body?.content?.['application/json'];
      const ok = op.responses?.['200'] ? deref(op.responses['200']) : undefined;
      ops.push({
        operationId: op.operationId,
        method,
        path: p,
        write: params.some((x: Json) => x.in === 'query' && x.name === 'dryRun'),
        admin: Boolean(op.responses?.['403']),
        hasBody: Boolean(body),
        bodies: examplesOf(json, 'example'),
        params: params
          .map((x: Json) => ({ name: x.name, in: x.in, values: [...examplesOf(x, 'example'), ...examplesOf(x.schema, 'schema example')].map((e) => e.value) }))
          .filter((x: Param) => x.values.length > 0),
        responseSchema: ok?.content?.['application/json']?.schema,
      });
    }
  }
  return ops;
}

/** The lock runs after everything else, and un-lock right after it. */
function rank(op: Operation): number {
  if (/\/lock$/.test(op.path)) return 3;
  if (/\/un-lock$/.test(op.path)) return 4;
  return op.write ? 2 : 1;
}

interface Case {
  op: Operation;
  name: string;
  body: unknown;
  headers: Record<string, string>;
  query: Record<string, string>;
  path: Record<string, string>;
}

const OPS = operations();

/** One case per body example; each parameter example is sent with one of them (cycling). */
function cases(): Case[] {
  const out: Case[] = [];
  for (const op of [...OPS].sort((a, b) => rank(a) - rank(b))) {
    const bodies = op.bodies.length > 0 ? op.bodies : op.params.length > 0 ? [{ name: 'parameters', value: undefined }] : [];
    bodies.forEach((b, i) => {
      const c: Case = { op, name: b.name, body: b.value, headers: {}, query: {}, path: {} };
      for (const p of op.params) {
        const v = p.values[i % p.values.length];
        if (p.in === 'header') c.headers[p.name] = String(v);
        else if (p.in === 'query') c.query[p.name] = String(v);
        else if (p.in === 'path') c.path[p.name] = String(v);
        else assert.fail(`${op.operationId}: ${p.in} parameter examples are not supported by this test`);
      }
      out.push(c);
    });
    for (const p of op.params) assert.ok(p.values.length <= bodies.length, `${op.operationId}: parameter ${p.name} has more examples than the operation has body examples`);
  }
  return out;
}

const CASES = cases();

let t: TestApp;
let validate: (schema: Json, body: unknown) => string | null;
const usedKeys = new Set<string>();
let writes = 0;

/** Row counts of every entity and line table of the catalog plus the ledger balances. */
async function fingerprint(knex: Knex): Promise<Record<string, number>> {
  const tables = new Set<string>(['lgrbal', 'invhst']);
  for (const e of Object.values(CATALOG)) {
    tables.add(e.table);
    for (const c of Object.values(e.children)) tables.add(c.table);
  }
  const out: Record<string, number> = {};
  for (const table of [...tables].sort()) {
    const [r] = await knex(table).count<{ n: number | string }[]>({ n: '*' });
    out[table] = Number(r!.n);
  }
  const [b] = await knex('lgrbal').sum<{ d: unknown; c: unknown }[]>({ d: 'dbttot', c: 'crdtot' });
  out['lgrbal.dbttot'] = Number(b?.d ?? 0);
  out['lgrbal.crdtot'] = Number(b?.c ?? 0);
  return out;
}

function send(c: Case, opts: { dryRun?: boolean; idempotencyKey?: string } = {}) {
  const query = new URLSearchParams(c.query);
  if (opts.dryRun) query.set('dryRun', 'true');
  const qs = query.toString();
  const key = c.op.admin ? t.adminKey : t.apiKey;
  const p = c.op.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(c.path[name] ?? assert.fail(`${c.op.operationId}: no example for path parameter ${name}`)));
  let req = t.http[c.op.method](`${BASE}${p}${qs ? `?${qs}` : ''}`).set('x-api-key', key);
  for (const [k, v] of Object.entries(c.headers)) if (k.toLowerCase() !== 'idempotency-key') req = req.set(k, v);
  if (opts.idempotencyKey) req = req.set('Idempotency-Key', opts.idempotencyKey);
  return c.body === undefined ? req : req.set('Content-Type', 'application/json').send(c.body as object);
}

function assertOk(c: Case, res: { status: number; text: string; body: unknown }, what: string): void {
  assert.equal(res.status, 200, `${c.op.operationId} example ${c.name} (${what}): ${res.text}`);
  assert.ok(c.op.responseSchema, `${c.op.operationId} documents a JSON 200 response`);
  const error = validate(c.op.responseSchema!, res.body);
  assert.equal(error, null, `${c.op.operationId} example ${c.name} (${what}): the response does not match the contract: ${error}`);
}

before(async () => {
  t = await startTestApp();
  await seedEventExamples(t);
  assert.equal(t.services.config.validateResponses, true, 'the server validates its responses too');
  // Without ajv's code optimiser (as the server's response validators, RESPONSE_AJV_CODE): the same verdicts, a quarter less compile.
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true, code: RESPONSE_AJV_CODE });
  addFormats(ajv);
  ajv.addSchema({ ...DOC, $id: 'contract' });
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
  validate = (schema, body) => {
    const id = JSON.stringify(schema);
    let fn = compiled.get(id);
    if (!fn) {
      // Schemas of the document refer to #/components/...: resolve them inside the document.
      const rebased = JSON.parse(id.replace(/"\$ref":"#\//g, '"$ref":"contract#/'));
      fn = ajv.compile(rebased);
      compiled.set(id, fn);
    }
    return fn(body) ? null : ajv.errorsText(fn.errors, { dataVar: 'body' });
  };
});

after(async () => {
  await t?.close();
});

test('the contract has request examples: every operation with a request body has at least one', () => {
  const missing = OPS.filter((op) => op.hasBody && op.bodies.length === 0).map((op) => op.operationId);
  assert.deepEqual(missing, []);
  assert.ok(CASES.length >= OPS.filter((op) => op.hasBody).length, 'a case per example');
  assert.ok(CASES.some((c) => c.op.write), 'the contract has write examples');
  assert.ok(CASES.some((c) => /\/lock$/.test(c.op.path)) && CASES.some((c) => /\/un-lock$/.test(c.op.path)), 'lock and un-lock examples');
});

for (const c of CASES) {
  const label = `${c.op.operationId} (${c.op.method.toUpperCase()} ${c.op.path}) example ${c.name}`;
  if (!c.op.write) {
    test(`${label}: 200 on the demo company`, async () => {
      const res = await send(c);
      assertOk(c, res, 'read');
      if (Array.isArray(res.body?.data)) assert.ok(res.body.data.length > 0, `${label}: the example finds records in the demo company`);
      if (/\/lock$/.test(c.op.path)) assert.equal(res.body.status, 'locked');
      if (/\/un-lock$/.test(c.op.path)) {
        assert.equal(res.body.status, 'unlocked');
        // Everything works again after un-lock.
        const first = CASES.find((x) => !x.op.write && rank(x.op) === 1 && x.op.hasBody)!;
        assertOk(first, await send(first), 'after un-lock');
      }
    });
    continue;
  }
  test(`${label}: dry run changes nothing, the real post writes once, the retry replays`, async () => {
    const before = await fingerprint(t.knex);
    const dry = await send(c, { dryRun: true });
    assertOk(c, dry, 'dry run');
    assert.equal(dry.body.dryRun, true);
    assert.deepEqual(await fingerprint(t.knex), before, 'a dry run writes nothing');

    // The parameter's own example key is used once, verbatim; later writes derive unique keys from it.
    const exampleKey = c.headers['Idempotency-Key'] ?? c.headers['idempotency-key'] ?? `contract-example-${c.op.operationId}`;
    const key = usedKeys.has(exampleKey) ? `${exampleKey}-${c.op.operationId}-${c.name}`.slice(0, 128) : exampleKey;
    usedKeys.add(key);
    const real = await send(c, { idempotencyKey: key });
    assertOk(c, real, 'real post');
    assert.equal(real.body.dryRun, false);
    assert.equal(real.headers['idempotency-status'], 'applied', `${label}: posted, not answered from an earlier posting`);
    const afterPost = await fingerprint(t.knex);
    assert.notDeepEqual(afterPost, before, 'the real post wrote to the database');
    if (real.body.ledgerTransaction) {
      const lt = real.body.ledgerTransaction;
      const row = await t.knex('lgrtrn').where({ recnum: lt.recordNumber }).first();
      assert.ok(row, `ledger transaction ${lt.recordNumber} is in lgrtrn`);
      assert.equal(row.trnnum, lt.transactionNumber);
    }
    writes++;

    const again = await send(c, { idempotencyKey: key });
    assertOk(c, again, 'retry');
    assert.equal(again.headers['idempotency-status'], 'replayed');
    assert.deepEqual(again.body, real.body, 'the retry answers the recorded response');
    assert.deepEqual(await fingerprint(t.knex), afterPost, 'the retry writes nothing');
  });
}

test('the 200 response examples of the contract match their schemas', () => {
  let checked = 0;
  for (const [p, item] of Object.entries<Json>(DOC.paths ?? {})) {
    for (const method of METHODS) {
      const ok = item[method]?.responses?.['200'] ? deref(item[method].responses['200']) : undefined;
      const json = ok?.content?.['application/json'];
      for (const ex of examplesOf(json, 'example')) {
        assert.equal(validate(json.schema, ex.value), null, `${method.toUpperCase()} ${p} response example ${ex.name}`);
        checked++;
      }
    }
  }
  assert.ok(checked > 0, 'response examples were checked');
});

test('after the real writes of the examples the books invariants hold', async () => {
  assert.ok(writes > 0, 'write examples ran');
  await assertBooksInvariants(t.knex);
});
