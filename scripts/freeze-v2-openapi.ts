/**
 * ONE-OFF: wrote openapi-v2.yaml, the frozen v2 compatibility document, on 2026-11-23. It is kept
 * as the record of how the document was made, not as a generator: the document is frozen and
 * test/v2/v2-openapi-golden.test.ts fails when its bytes change. Do not re-run it to "refresh" v2.
 *
 * Write bodies are the v3 input documents as published that day (generated/openapi.public.yaml,
 * value bounds included), copied with every schema they reference.
 *
 * Edited by hand once since (decision 0405): those inputs carried v3's `additionalProperties: false`,
 * which v2 never had; the document now says `true` on them and that their unlisted fields are ignored.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { CATALOG } from '../generated/catalog';

const ROOT = path.resolve(__dirname, '..');
const v3 = YAML.parse(fs.readFileSync(path.join(ROOT, 'generated', 'openapi.public.yaml'), 'utf8'));

/** v3 plural path segment -> v2 singular one. */
function singular(plural: string): string {
  if (plural === 'equipment' || plural === 'inventory-consumed') return plural;
  if (plural.endsWith('ies')) return plural.slice(0, -3) + 'y';
  if (plural.endsWith('sses') || plural.endsWith('xes')) return plural.slice(0, -2);
  if (plural.endsWith('s')) return plural.slice(0, -1);
  return plural;
}

const WRITES: Array<[string, string, string]> = [
  ['/post/ledger-transaction', '/ledger-transactions', 'Post a journal'],
  ['/post/ap-invoice', '/ap-invoices', 'Post an AP invoice'],
  ['/post/inventory-allocation', '/inventory-allocations', 'Record an inventory allocation'],
  ['/post/purchase-order-receipt', '/purchase-order-receipts', 'Receive against a purchase order'],
  ['/post/payroll-record', '/payroll-records/post', 'Post a computed payroll batch'],
  ['/post/service-invoice', '/service-invoices/post', 'Post a service work order'],
  ['/post/service-inventory', '/service-inventories', 'Record service inventory'],
];

const schemas: Record<string, unknown> = {};
function copySchema(name: string): void {
  if (schemas[name]) return;
  const s = v3.components.schemas[name];
  if (!s) throw new Error(`no schema ${name}`);
  schemas[name] = s;
  JSON.stringify(s, (_k, v) => {
    if (v && typeof v === 'object' && typeof v.$ref === 'string' && v.$ref.startsWith('#/components/schemas/')) copySchema(v.$ref.slice(21));
    return v;
  });
}

const entities: Record<string, string> = {};
for (const plural of Object.keys(CATALOG).sort()) entities[singular(plural)] = plural;
const matchable = Object.entries(entities).filter(([, p]) => CATALOG[p]!.matchFields.length > 0).map(([s]) => s);

const failures = (extra: string[] = []) => {
  const out: Record<string, unknown> = {};
  for (const status of ['400', '401', ...extra, '413', '415', '423', '429', '500', '502', '503', '504']) out[status] = { $ref: `#/components/responses/Legacy${status}` };
  return out;
};
const headerParams = [{ $ref: '#/components/parameters/XContextId' }, { $ref: '#/components/parameters/XIntegrationId' }];
const ok = (schema: string, description: string) => ({
  description,
  headers: {
    Deprecation: { $ref: '#/components/headers/Deprecation' },
    Link: { $ref: '#/components/headers/Link' },
    'X-Correlation-Id': { $ref: '#/components/headers/XCorrelationId' },
  },
  content: { 'application/json': { schema: { oneOf: [{ $ref: `#/components/schemas/${schema}` }, { $ref: '#/components/schemas/V2Failure' }] } } },
});

const paths: Record<string, unknown> = {
  '/query/{entity}': {
    post: {
      operationId: 'v2Query',
      tags: ['Read'],
      summary: 'Read records of one entity (v2 shape)',
      description:
        'Same records, filter grammar and ordering as v3 `POST /{entities}/query`. `entity` is the singular name ' +
        '(see V2EntityName). An unknown entity answers 200 with responseType Error (v2 has no 404). ' +
        'Request fields not listed are ignored.',
      parameters: [{ name: 'entity', in: 'path', required: true, description: 'Singular entity name (V2EntityName).', schema: { type: 'string' } }, ...headerParams],
      requestBody: { required: false, content: { 'application/json': { schema: { $ref: '#/components/schemas/V2QueryRequest' } } } },
      responses: { '200': ok('V2ReadResponse', 'Success, or a business failure (responseType Error).'), ...failures() },
    },
  },
  '/match/{entity}': {
    post: {
      operationId: 'v2Match',
      tags: ['Read'],
      summary: 'Fuzzy match (v2 shape)',
      description: `Levenshtein match as v3 \`POST /{entities}/match\`, on ${matchable.join(', ')}. Other entities answer 200 with responseType Error.`,
      parameters: [{ name: 'entity', in: 'path', required: true, schema: { type: 'string' } }, ...headerParams],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/V2MatchRequest' } } } },
      responses: { '200': ok('V2MatchResponse', 'Success, or a business failure (responseType Error).'), ...failures() },
    },
  },
};
for (const [v2Path, v3Path, summary] of WRITES) {
  const ref = v3.paths[v3Path].post.requestBody.content['application/json'].schema.$ref as string;
  copySchema(ref.slice(21));
  paths[v2Path] = {
    post: {
      operationId: `v2${ref.slice(21).replace(/Input$/, '')}`,
      tags: ['Write'],
      summary,
      description:
        `The input document of v3 \`POST ${v3Path}\` as frozen here. No Idempotency-Key, no dry run. Business ` +
        'failures (closed period, unbalanced journal, conflicts, missing references) answer 200 with responseType Error.',
      parameters: headerParams,
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref.slice(21)}` } } } },
      responses: { '200': ok('V2WriteResponse', 'Posted, or a business failure (responseType Error).'), ...failures() },
    },
  };
}
for (const [p, id, summary, schema] of [
  ['/utility/ping', 'v2Ping', 'Round trip to the accounting database', 'V2PingRequest'],
  ['/utility/lock', 'v2Lock', 'Lock the accounting database for maintenance', 'V2LockRequest'],
  ['/utility/un-lock', 'v2Unlock', 'Release the maintenance lock', 'V2UnlockRequest'],
] as const) {
  paths[p] = {
    post: {
      operationId: id,
      tags: ['Utility'],
      summary,
      description: 'The original v2 utility path with the legacy body: the v3 utility behaviour, wrapped in responseType.',
      parameters: headerParams,
      requestBody: { required: p !== '/utility/ping', content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } } },
      responses: { '200': ok('V2UtilityResponse', 'Done, or refused (responseType Error, e.g. the lock is held by another user).'), ...failures(p === '/utility/ping' ? [] : ['403']) },
    },
  };
}

const legacyResponses: Record<string, unknown> = {};
for (const [status, description] of Object.entries({
  '400': 'Malformed JSON or a body that does not match this document.',
  '401': 'Missing, malformed or unknown x-api-key.',
  '403': 'The operation needs an admin key (when the operator restricts the lock to admins).',
  '413': 'Body over the size limit.',
  '415': 'Content-Type is not application/json.',
  '423': 'The accounting database is locked for maintenance.',
  '429': 'Rate limit reached; see Retry-After.',
  '500': 'Unexpected error; quote correlationId.',
  '502': 'The accounting database failed.',
  '503': 'The service is switched off for the key or unavailable; see Retry-After.',
  '504': 'The accounting database did not answer in time.',
})) {
  legacyResponses[`Legacy${status}`] = {
    description,
    headers: { 'X-Error-Code': { $ref: '#/components/headers/XErrorCode' }, 'X-Correlation-Id': { $ref: '#/components/headers/XCorrelationId' } },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/V2LegacyError' } } },
  };
}

const doc = {
  openapi: '3.1.0',
  info: {
    title: 'Accounting Integration API v2 (frozen compatibility surface)',
    version: '2.0.0-frozen',
    description:
      'The v2 surface kept beside v3 for integrators that have not migrated. It is frozen: this document does not ' +
      'change. Every response carries Deprecation and a Link to the v3 document (/openapi.yaml). Migrate with ' +
      'docs/migrating-from-v2.md.',
    license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
  },
  servers: [{ url: '/api/v2', description: 'v2 base path (frozen)' }],
  security: [{ ApiKey: [] }],
  tags: [
    { name: 'Read', description: 'Query and match, singular verb-first paths.' },
    { name: 'Write', description: 'The seven postings, verb-first paths.' },
    { name: 'Utility', description: 'Ping, lock and un-lock.' },
  ],
  paths,
  components: {
    securitySchemes: v3.components.securitySchemes,
    parameters: {
      XContextId: { name: 'x-context-id', in: 'header', required: false, description: 'Caller context; accepted and logged.', schema: { type: 'string', maxLength: 200 } },
      XIntegrationId: { name: 'x-integration-id', in: 'header', required: false, description: 'Caller integration; accepted and logged.', schema: { type: 'string', maxLength: 200 } },
    },
    headers: {
      Deprecation: { description: 'RFC 9745: v2 is deprecated since this date (@epoch-seconds).', schema: { type: 'string' } },
      Link: { description: 'rel="successor-version": the v3 document; rel="deprecation": the migration guide.', schema: { type: 'string' } },
      XCorrelationId: { description: 'Correlation id of the request; quote it when reporting a problem.', schema: { type: 'string' } },
      XErrorCode: { description: 'Stable error code (the v3 registry code).', schema: { type: 'string' } },
    },
    responses: legacyResponses,
    schemas: {
      V2EntityName: {
        description: 'Singular v2 entity names. x-v3-entities maps each to its v3 path segment.',
        type: 'string',
        enum: Object.keys(entities),
        'x-v3-entities': entities,
      },
      V2Filter: {
        description: 'One filter node: {and: [nodes]}, {or: [nodes]} or {match: {field, operator, value | values | fields + pairs}} (the v3 grammar).',
        type: 'object',
      },
      V2QueryRequest: {
        type: 'object',
        description: 'Fields not listed are ignored (v2 never rejected unknown fields).',
        properties: {
          selectFields: { type: 'array', items: { type: 'string' }, description: 'Fields to return; omitted returns all.' },
          withChildren: { type: 'boolean', description: 'true includes every child collection of the entity.' },
          filter: { $ref: '#/components/schemas/V2Filter' },
          orderBy: { type: 'array', items: { type: 'string' }, description: '"field ASC|DESC"; the key is always appended as tiebreak.' },
          offset: { type: 'integer', minimum: 0, description: 'Rows to skip, from 0.' },
          pageSize: { type: 'integer', minimum: 1, maximum: 1000, description: 'Rows per page (default 100).' },
        },
      },
      V2MatchRequest: {
        type: 'object',
        required: ['matchString', 'matchFields', 'selectFields', 'maxDistance'],
        properties: {
          matchString: { type: 'string' },
          matchFields: { type: 'array', items: { type: 'string' } },
          selectFields: { type: 'array', items: { type: 'string' } },
          maxDistance: { type: 'integer', minimum: 1 },
          filter: { $ref: '#/components/schemas/V2Filter' },
        },
      },
      V2PingRequest: { type: 'object' },
      V2LockRequest: { type: 'object', required: ['userName'], properties: { userName: { type: 'string', minLength: 1, maxLength: 50 } } },
      V2UnlockRequest: {
        type: 'object',
        required: ['userName'],
        properties: { userName: { type: 'string', minLength: 1, maxLength: 50 }, override: { type: 'boolean' } },
      },
      V2ReadResponse: {
        type: 'object',
        required: ['responseType', 'data', 'page'],
        properties: {
          responseType: { const: 'Success' },
          entity: { $ref: '#/components/schemas/V2EntityName' },
          asOf: { type: 'string', format: 'date-time' },
          page: {
            type: 'object',
            required: ['offset', 'pageSize', 'count', 'returnedCount'],
            properties: { offset: { type: 'integer' }, pageSize: { type: 'integer' }, count: { type: 'integer', description: 'Rows matching the filter (v3 page.totalCount).' }, returnedCount: { type: 'integer' } },
          },
          data: { type: 'array', items: { type: 'object' } },
        },
      },
      V2MatchResponse: {
        type: 'object',
        required: ['responseType', 'data'],
        properties: { responseType: { const: 'Success' }, asOf: { type: 'string', format: 'date-time' }, data: { type: 'array', items: { type: 'object' } } },
      },
      V2WriteResponse: {
        type: 'object',
        required: ['responseType', 'response'],
        properties: { responseType: { const: 'Success' }, message: { type: 'string' }, response: { type: 'object', description: 'The posted document (v3 write result without dryRun).' } },
      },
      V2UtilityResponse: {
        type: 'object',
        required: ['responseType', 'status'],
        properties: { responseType: { const: 'Success' }, status: { type: 'string' }, response: { type: 'object' } },
        additionalProperties: true,
      },
      V2Failure: {
        type: 'object',
        description: 'A business failure, answered with HTTP 200.',
        required: ['responseType', 'message', 'errorCode'],
        properties: {
          responseType: { const: 'Error' },
          message: { type: 'string' },
          errorCode: { type: 'string', description: 'The v3 registry code (docs/errors.md).' },
          correlationId: { type: 'string' },
        },
      },
      V2LegacyError: {
        type: 'object',
        description: 'Transport and validation failures keep their HTTP status and this body (no responseType).',
        required: ['message', 'errorCode'],
        properties: {
          message: { type: 'string' },
          errorCode: { type: 'string' },
          correlationId: { type: 'string' },
          errors: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } } } },
        },
      },
      ...schemas,
    },
  },
};

fs.writeFileSync(path.join(ROOT, 'openapi-v2.yaml'), '# FROZEN. Do not edit: test/v2-openapi-golden.test.ts holds its hash.\n' + YAML.stringify(doc, { lineWidth: 0 }));
console.log(`openapi-v2.yaml: ${Object.keys(paths).length} paths, ${Object.keys(entities).length} entities`);
