/**
 * What the contract validator's load skips (src/http/openapi-validator-patches.ts) is safe to skip:
 * - json-schema-ref-parser's bundle of the v3 and v2 documents changes nothing (every ref is
 *   already local), so such a document is used as it is; a document with an outside ref still
 *   goes through the parser;
 * - the OpenAPI meta-schema is compiled only when `validateApiSpec` is on, and then still
 *   refuses a broken document.
 * - response validators are compiled without ajv's code optimiser (request validators keep it),
 *   and still refuse a response off the contract.
 * And the background compile after readiness (warm) waits while the server has requests in flight.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import $RefParser from '@apidevtools/json-schema-ref-parser';
import { onlyLocalRefs } from '../../src/http/openapi-validator-patches';
import { contractDocument } from '../../src/http/openapi-document';
import { v2Document } from '../../src/v2/document';
import { OPERATIONS } from '../../generated/operations';

const EOV = path.dirname(require.resolve('express-openapi-validator'));

for (const [name, load] of [
  ['v3 (generated/openapi.public.json)', contractDocument],
  ['v2 (generated/openapi-v2.json)', v2Document],
] as const) {
  test(`the ${name} document has only local refs, and bundling it is the identity`, async () => {
    const doc = load();
    assert.equal(onlyLocalRefs(doc), true);
    const bundled = await $RefParser.bundle(structuredClone(doc) as any);
    assert.deepEqual(bundled, doc);
  });
}

test('onlyLocalRefs: an outside ref (file or URL) is not local', () => {
  assert.equal(onlyLocalRefs({ a: [{ $ref: '#/components/schemas/X' }] }), true);
  assert.equal(onlyLocalRefs({ a: [{ b: { $ref: 'other.yaml#/X' } }] }), false);
  assert.equal(onlyLocalRefs({ $ref: 'https://example.com/s.json' }), false);
});

test('the framework uses a self-contained document as it is and sends any other through the ref parser', async () => {
  const { OpenAPIFramework } = require(path.join(EOV, 'framework', 'index.js'));
  // The framework calls the parser through its module object: count the calls there.
  const parser = require('@apidevtools/json-schema-ref-parser') as { bundle: (...a: unknown[]) => unknown };
  const bundle = parser.bundle;
  let calls = 0;
  parser.bundle = function (this: unknown, ...a: unknown[]) {
    calls += 1;
    return bundle.apply(this, a);
  };
  try {
    const local = { openapi: '3.1.0', info: { title: 't', version: '1' }, paths: {}, components: { schemas: { A: { type: 'string' }, B: { $ref: '#/components/schemas/A' } } } };
    assert.equal(await OpenAPIFramework.prototype.loadSpec(local, { mode: 'bundle' }), local, 'the same object');
    assert.equal(calls, 0, 'not bundled');
    const outside = { ...local, components: { schemas: { B: { $ref: 'missing-file.yaml#/A' } } } };
    await assert.rejects(async () => OpenAPIFramework.prototype.loadSpec(outside, { mode: 'bundle' }), 'the parser tried to resolve the outside ref');
    assert.equal(calls, 1, 'bundled');
  } finally {
    parser.bundle = bundle;
  }
});

test('the OpenAPI meta-schema is compiled only when validateApiSpec is on, and then refuses a broken document', () => {
  const { OpenAPISchemaValidator } = require(path.join(EOV, 'framework', 'openapi.schema.validator.js'));
  const broken = { openapi: '3.1.0', info: { title: 't' }, paths: 5 };
  assert.deepEqual(new OpenAPISchemaValidator({ version: '3.1.0', validateApiSpec: false }).validate(broken).errors, []);
  assert.ok(new OpenAPISchemaValidator({ version: '3.1.0', validateApiSpec: true }).validate(broken).errors.length > 0);
});

test('response validators are compiled without ajv\'s code optimiser, request validators with it; a response off the contract is still refused', async () => {
  const { contractValidator } = await import('../../src/http/contract-validator');
  const ajvModule = require(path.join(EOV, 'framework', 'ajv', 'index.js')) as Record<string, (...a: any[]) => { opts: { code: { optimize: number } } }>;
  const seen: Array<[string, number]> = [];
  const spied = ['createRequestAjv', 'createResponseAjv'] as const;
  const originals = spied.map((name) => ajvModule[name]!);
  spied.forEach((name, i) => {
    ajvModule[name] = (...a: any[]) => {
      const ajv = originals[i]!(...a);
      seen.push([name, ajv.opts.code.optimize]);
      return ajv;
    };
  });
  const { default: express } = await import('express');
  const app = express();
  app.use(express.json());
  app.use(...contractValidator({ base: '/api/v3', validateResponses: true }).middleware);
  let answer: unknown;
  app.post('/api/v3/utility/ping', (_req, res) => void res.json(answer));
  app.use(((err, _req, res, _next) => void res.status(err.status ?? 500).json({ message: String(err.message) })) as import('express').ErrorRequestHandler);
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const ping = () => fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3/utility/ping`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    answer = { status: 'ok', serverTime: '2026-11-26T10:00:00Z' };
    assert.equal((await ping()).status, 200, 'a response as declared passes');
    answer = { status: 'fine', serverTime: '2026-11-26T10:00:00Z' };
    const refused = await ping();
    assert.equal(refused.status, 500, 'a response off the contract is refused');
    assert.match(((await refused.json()) as { message: string }).message, /status/);
  } finally {
    await new Promise((resolve) => server.close(resolve));
    spied.forEach((name, i) => (ajvModule[name] = originals[i]!));
  }
  assert.ok(seen.some(([name, optimize]) => name === 'createResponseAjv' && optimize === 0), `the responses' ajv: ${JSON.stringify(seen)}`);
  assert.ok(seen.filter(([name]) => name === 'createRequestAjv').every(([, optimize]) => optimize === 1), `the requests' ajv: ${JSON.stringify(seen)}`);
});

test('the background compile (warm) compiles nothing while the server has requests in flight, and finishes once idle', async () => {
  const { contractValidator } = await import('../../src/http/contract-validator');
  const validator = contractValidator({ base: '/api/v3', validateResponses: false });
  let idle = false;
  let asked = 0;
  let settled: { operations: number } | undefined;
  const warming = validator.warm({ idle: () => (asked++, idle) }).then((r) => (settled = r));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(settled, undefined, 'no progress while busy');
  assert.ok(asked > 1, 'it keeps asking');
  idle = true;
  await warming;
  assert.equal(settled!.operations, OPERATIONS.length, 'every operation compiled once idle');
});

test('prepare works on the document it is given (no deep copy) and builds the request validator\'s two ajv instances only: none for multipart uploads, the preprocessor\'s not until used', async () => {
  const factory = require(path.join(EOV, 'framework', 'ajv', 'factory.js')) as { factoryAjv: (...a: unknown[]) => unknown };
  const preprocessor = require(path.join(EOV, 'middlewares', 'parsers', 'schema.preprocessor.js')) as { SchemaPreprocessor: new (...a: any[]) => object };
  // Both are called through their module objects: count and capture there.
  const factoryAjv = factory.factoryAjv;
  let built = 0;
  factory.factoryAjv = (...a: unknown[]) => ((built += 1), factoryAjv(...a));
  const Preprocessor = preprocessor.SchemaPreprocessor;
  let preprocessed: unknown;
  preprocessor.SchemaPreprocessor = class extends Preprocessor {
    constructor(doc: unknown, ...rest: unknown[]) {
      super(doc, ...rest);
      preprocessed = doc;
    }
  };
  try {
    const { contractValidator } = await import('../../src/http/contract-validator');
    let given: unknown;
    const validator = contractValidator({ base: '/api/v3', validateResponses: false, document: () => (given = contractDocument()) });
    await validator.prepare();
    assert.ok(given !== undefined && preprocessed === given, 'the validator preprocessed the very object the document function returned');
    assert.equal(built, 2, 'two ajv instances: the request validator\'s (parameters, bodies)');
  } finally {
    factory.factoryAjv = factoryAjv;
    preprocessor.SchemaPreprocessor = Preprocessor;
  }
});

test('the schema preprocessor\'s ajv is built on its first use, and then answers as ajv does', () => {
  const factory = require(path.join(EOV, 'framework', 'ajv', 'factory.js')) as { factoryAjv: (...a: unknown[]) => unknown };
  const { SchemaPreprocessor } = require(path.join(EOV, 'middlewares', 'parsers', 'schema.preprocessor.js')) as { SchemaPreprocessor: new (...a: any[]) => { ajv: any } };
  const factoryAjv = factory.factoryAjv;
  let built = 0;
  factory.factoryAjv = (...a: unknown[]) => ((built += 1), factoryAjv(...a));
  try {
    const doc = { openapi: '3.1.0', info: { title: 't', version: '1' }, paths: {}, components: { schemas: { A: { type: 'string', maxLength: 2 } } } };
    const preprocessor = new SchemaPreprocessor(doc, { formats: {} }, undefined);
    assert.equal(built, 0, 'not built by the constructor');
    const validate = preprocessor.ajv.getSchema('#/components/schemas/A');
    assert.equal(built, 1, 'built on first use');
    assert.equal(validate('ab'), true);
    assert.equal(validate('abc'), false);
    assert.equal(preprocessor.ajv.getSchema('#/components/schemas/A'), validate, 'the same instance afterwards');
    assert.equal(built, 1);
  } finally {
    factory.factoryAjv = factoryAjv;
  }
});
