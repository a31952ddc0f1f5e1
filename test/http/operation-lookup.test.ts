/**
 * The contract validator finds the operation of a request from a table built once
 * (src/http/openapi-validator-patches.ts, lookUpOperationsInATable), not by walking and recompiling every
 * route of the document per request, and answers exactly as the validator's own lookup did: the
 * operation and its path parameters, 405 with Allow, 404 for an unknown route or entity, 400 for a
 * path parameter that is not a valid URI escape.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app';
import { assertProblem } from '../support/http';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => {
  await t?.close();
});

/** The path-to-regexp module the validator compiles its routes with. */
function validatorsPathToRegexp(): { pathToRegexp: (...args: unknown[]) => unknown } {
  const dir = path.dirname(require.resolve('express-openapi-validator'));
  return require(require.resolve('path-to-regexp', { paths: [dir] })) as { pathToRegexp: (...args: unknown[]) => unknown };
}

test('a request finds its operation without compiling the routes of the document again', async () => {
  const warm = await t.post('/api/v3/job-costs/query', { page: { pageSize: 1 } });
  assert.equal(warm.status, 200, warm.text);
  const mod = validatorsPathToRegexp();
  const original = mod.pathToRegexp;
  let calls = 0;
  mod.pathToRegexp = (...args: unknown[]) => {
    calls += 1;
    return original(...args);
  };
  try {
    for (const entity of ['job-costs', 'parts', 'vendors']) {
      const res = await t.post(`/api/v3/${entity}/query`, { page: { pageSize: 1 } });
      assert.equal(res.status, 200, res.text);
    }
    const ping = await t.post('/api/v3/utility/ping');
    assert.equal(ping.status, 200, ping.text);
  } finally {
    mod.pathToRegexp = original;
  }
  assert.equal(calls, 0, 'no route compiled (or looked up route by route) per request');
});

test('the lookup answers as the validator did: path parameters, 405 with Allow, 404, 400 for a bad escape', async () => {
  // A route with a parameter: the parameter reaches the handler (an unknown endpoint id is its 404).
  const unknown = await t.post('/api/v3/webhook-endpoints/00000000-0000-4000-8000-000000000000/delete', {}, t.adminKey);
  assertProblem(unknown, 'WEBHOOK_ENDPOINT_NOT_FOUND', '/api/v3/webhook-endpoints/00000000-0000-4000-8000-000000000000/delete');
  const wrongMethod = await t.http.get('/api/v3/webhook-endpoints/00000000-0000-4000-8000-000000000000/delete').set('x-api-key', t.adminKey);
  assertProblem(wrongMethod, 'METHOD_NOT_ALLOWED');
  assert.equal(wrongMethod.headers.allow, 'POST');
  assertProblem(await t.post('/api/v3/no-such-entity/query', {}), 'UNKNOWN_ENTITY');
  assertProblem(await t.post('/api/v3/utility/no-such-thing', {}), 'ROUTE_NOT_FOUND');
  const badEscape = await t.post('/api/v3/webhook-endpoints/%E0%A4%A/delete', {}, t.adminKey);
  assertProblem(badEscape, 'VALIDATION_FAILED');
});
