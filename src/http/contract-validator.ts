import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import * as expressOpenApiValidator from 'express-openapi-validator';
import { OPERATIONS } from '../../generated/operations';
import { contractDocument } from './openapi-document';
import { isStorableDate, isStorableDateTime } from '../catalog/bounds';

/**
 * express-openapi-validator (5.6.2) finds the operation of each request by compiling every route
 * of the document with path-to-regexp, on every request: with ~90 operations that was a quarter of
 * the CPU of a ping. pathToRegexp is a pure function of (path, options), so it is memoised here,
 * on the module instance the validator calls through (bounded; strings only).
 */
function memoisePathToRegexp(): void {
  const modulePath = require.resolve('path-to-regexp', { paths: [path.dirname(require.resolve('express-openapi-validator'))] });
  const mod = require(modulePath) as { pathToRegexp?: (...args: unknown[]) => unknown; __memoised?: boolean };
  const original = mod.pathToRegexp;
  if (typeof original !== 'function' || mod.__memoised) return;
  const cache = new Map<string, unknown>();
  const memoised = (route: unknown, options?: unknown, ...rest: unknown[]) => {
    if (typeof route !== 'string' || rest.length > 0) return original(route, options, ...rest);
    const o = (options ?? {}) as Record<string, unknown>;
    const simple = Object.keys(o).every((k) => k === 'sensitive' || k === 'strict');
    const flags = simple ? `${o.sensitive ? 's' : ''}${o.strict ? 't' : ''}` : JSON.stringify(o);
    const key = `${flags}\u0000${route}`;
    let hit = cache.get(key);
    if (hit === undefined) {
      hit = original(route, options);
      if (cache.size < 2_000) cache.set(key, hit);
    }
    return hit;
  };
  try {
    mod.pathToRegexp = memoised;
    mod.__memoised = true;
  } catch {
    /* read-only exports: run unmemoised */
  }
}
memoisePathToRegexp();

/**
 * express-openapi-validator (5.6.2) finds the operation of a request (middlewares/openapi.metadata.js,
 * lookupRoute) by walking every route of the document in order, per request, and rebuilding as it
 * walks each route's pair, path key, schemas, routing options and regexp: with 112 operations,
 * about 4 % of the CPU of a read through HTTP (bench/README.md, "Issue 27"; decision 0350). What
 * that walk depends on (the document, the two routing settings) is fixed once the app serves, so
 * the routes and their regexps are a table built at the first request (per settings), walked in
 * the same order with the same test. The middleware is the module's own otherwise: the same
 * ignored and managed routes, 405 with Allow, 404, 400 for a malformed URI, `req.openapi`.
 */
function lookUpOperationsInATable(): void {
  const dir = path.dirname(require.resolve('express-openapi-validator'));
  const mod = require(path.join(dir, 'middlewares', 'openapi.metadata.js')) as { applyOpenApiMetadata?: unknown; __tabled?: boolean };
  if (typeof mod.applyOpenApiMetadata !== 'function' || mod.__tabled) return;
  const { zipObject } = require(path.join(dir, 'middlewares', 'util.js')) as { zipObject: (keys: string[], values: string[]) => Record<string, string> };
  const types = require(path.join(dir, 'framework', 'types.js')) as Record<'MethodNotAllowed' | 'NotFound' | 'BadRequest', new (o: Record<string, unknown>) => Error>;
  const { httpMethods } = require(path.join(dir, 'middlewares', 'parsers', 'schema.preprocessor.js')) as { httpMethods: Set<string> };
  const { pathToRegexp } = require(require.resolve('path-to-regexp', { paths: [dir] })) as {
    pathToRegexp: (route: string, options: { sensitive: boolean; strict: boolean }) => { regexp: RegExp; keys: Array<{ name: string }> };
  };
  interface Context {
    expressRouteMap: Record<string, { basePath: string }>;
    openApiRouteMap: Record<string, Record<string, unknown>>;
    apiDoc: { paths: Record<string, Record<string, unknown>> };
    serial: unknown;
    useRequestUrl?: boolean;
    ignoreUndocumented?: boolean;
    routePair(route: string): { expressRoute: string; openApiRoute: string };
    shouldIgnoreRoute(path: string): boolean;
    isManagedRoute(path: string): boolean;
  }
  interface Route {
    expressRoute: string;
    openApiRoute: string;
    pathKey: string;
    regexp: RegExp;
    keys: string[];
  }
  type Req = express.Request & { openapi?: unknown };
  const applyOpenApiMetadata = (ctx: Context, responseApiDoc?: { paths: Record<string, Record<string, unknown>> }): RequestHandler => {
    const tables = new Map<string, Route[]>();
    const tableFor = (req: Req): Route[] => {
      const options = { sensitive: !!req.app.enabled('case sensitive routing'), strict: !!req.app.enabled('strict routing') };
      const key = `${options.sensitive}${options.strict}`;
      let table = tables.get(key);
      if (!table) {
        table = Object.entries(ctx.expressRouteMap).map(([expressRoute, methods]) => {
          const { openApiRoute } = ctx.routePair(expressRoute);
          const { regexp, keys } = pathToRegexp(expressRoute, options);
          return { expressRoute, openApiRoute, pathKey: openApiRoute.substring(methods.basePath.length), regexp, keys: keys.map((k) => k.name) };
        });
        tables.set(key, table);
      }
      return table;
    };
    const lookupRoute = (req: Req) => {
      const url = (ctx.useRequestUrl ? req.url : req.originalUrl).split('?')[0]!;
      const method = req.method.toLowerCase();
      for (const route of tableFor(req)) {
        const matched = route.regexp.exec(url);
        if (!matched) continue;
        try {
          const pathParams = zipObject(route.keys, matched.slice(1).map(decodeURIComponent));
          return {
            schema: ctx.apiDoc.paths[route.pathKey]![method],
            expressRoute: route.expressRoute,
            openApiRoute: route.openApiRoute,
            pathParams,
            _responseSchema: responseApiDoc?.paths[route.pathKey]![method],
          };
        } catch {
          throw new types.BadRequest({ path: req.path, message: `malformed uri'` });
        }
      }
      return null;
    };
    return (req: Req, _res, next) => {
      const requestPath = req.path.startsWith(req.baseUrl) ? req.path : `${req.baseUrl}/${req.path}`;
      if (ctx.shouldIgnoreRoute(requestPath)) return next();
      const matched = lookupRoute(req);
      if (matched) {
        const { expressRoute, openApiRoute, pathParams, schema } = matched;
        if (!schema) {
          if (ctx.ignoreUndocumented) return next();
          throw new types.MethodNotAllowed({
            path: req.path,
            message: `${req.method} method not allowed`,
            headers: { Allow: Object.keys(ctx.openApiRouteMap[openApiRoute]!).filter((k) => httpMethods.has(k.toLowerCase())).join(', ') },
          });
        }
        req.openapi = { expressRoute, openApiRoute, pathParams, schema, serial: ctx.serial, ...(responseApiDoc ? { _responseSchema: matched._responseSchema } : {}) };
        req.params = pathParams;
      } else if (ctx.isManagedRoute(requestPath) && !ctx.ignoreUndocumented) {
        throw new types.NotFound({ path: req.path, message: 'not found' });
      }
      next();
    };
  };
  try {
    mod.applyOpenApiMetadata = applyOpenApiMetadata;
    mod.__tabled = true;
  } catch {
    /* read-only exports: run as shipped */
  }
}
lookUpOperationsInATable();

/**
 * express-openapi-validator (5.6.2) builds each operation's request schema as
 * `{ paths: <whole document paths>, components: <all components>, properties: {...} }` and adds it
 * to ajv (util.useAjvCache), twice per operation (parameters, body). ajv then walks the whole
 * document for every operation (getSchemaRefs over ~20,000 lines: 85 % of the boot-time compile,
 * about 4 s, and most of the ~100 MB of transient heap that kept the process at 240 MB resident).
 * Nothing in those schemas points into `paths`, and every `#/components/schemas/X` is already
 * registered in the same ajv under that very id (framework/ajv createAjv), so the refs resolve to
 * the shared, once-compiled component schemas without the copies. The wrapper drops the two
 * keys before ajv sees the schema; the validator calls useAjvCache through the module's exports
 * object, so replacing the export takes effect.
 */
function shareComponentSchemas(): void {
  const utilPath = path.join(path.dirname(require.resolve('express-openapi-validator')), 'middlewares', 'util.js');
  const util = require(utilPath) as { useAjvCache?: (ajv: unknown, schema: Record<string, unknown>, key: string) => unknown; __shared?: boolean };
  const original = util.useAjvCache;
  if (typeof original !== 'function' || util.__shared) return;
  try {
    util.useAjvCache = (ajv, schema, key) => {
      const { paths: _paths, components: _components, ...own } = schema;
      // A fragment-only id: `#/components/schemas/X` then resolves against it to the component
      // registered under that id instead of into this schema (which no longer holds components).
      return original(ajv, own, `#/operation/${key}`);
    };
    util.__shared = true;
  } catch {
    /* read-only exports: run as shipped */
  }
}
shareComponentSchemas();

/**
 * The validator's schema preprocessor resolves each `$ref` it meets by compiling the target with
 * ajv (`ajv.getSchema(ref).schema`) only to read the schema object back: it compiled every
 * component schema once more at load, on an ajv instance of its own (about half of the load).
 * A component ref is resolved here by looking the same object up in the document (what ajv
 * returns is that very object, registered under `#/components/schemas/<name>`; for the other
 * kinds, parameters for one, ajv finds nothing and the validator looks the same path up in the
 * document); any other ref goes the original way.
 */
function resolveComponentRefsWithoutCompiling(): void {
  const modPath = path.join(path.dirname(require.resolve('express-openapi-validator')), 'middlewares', 'parsers', 'schema.preprocessor.js');
  const mod = require(modPath) as { SchemaPreprocessor?: { prototype: Record<string, any> } };
  const proto = mod.SchemaPreprocessor?.prototype;
  if (!proto || typeof proto.resolveSchema !== 'function' || proto.__direct) return;
  const original = proto.resolveSchema as (schema: unknown) => unknown;
  proto.resolveSchema = function (this: { apiDoc: Record<string, any> }, schema: unknown) {
    const ref = (schema as { $ref?: unknown } | null)?.$ref;
    if (typeof ref === 'string') {
      const m = /^#\/components\/([A-Za-z]+)\/([A-Za-z0-9_.-]+)$/.exec(ref);
      const target = m ? this.apiDoc?.components?.[m[1]!]?.[m[2]!] : undefined;
      if (target !== undefined) return target;
    }
    return original.call(this, schema);
  };
  proto.__direct = true;
}
resolveComponentRefsWithoutCompiling();

/**
 * The schema preprocessor builds an ajv instance of its own in its constructor (createRequestAjv:
 * a walk of the whole document and every component schema added, about a tenth of a worker's
 * validator start) and uses it only to resolve a ref the lookup above does not (none in our
 * document: its refs are all `#/components/...` names) and for discriminators (none). It is
 * built on first use instead: the preprocessor's constructor gets a stand-in that creates the
 * real instance when anything of it is first read. Every other ajv (the request validator's) is
 * built as before.
 */
function buildPreprocessorAjvOnFirstUse(): void {
  const base = path.dirname(require.resolve('express-openapi-validator'));
  const ajvModule = require(path.join(base, 'framework', 'ajv', 'index.js')) as { createRequestAjv?: (doc: unknown, options: unknown) => object };
  const mod = require(path.join(base, 'middlewares', 'parsers', 'schema.preprocessor.js')) as { SchemaPreprocessor?: new (...args: any[]) => object };
  const Original = mod.SchemaPreprocessor;
  if (typeof Original !== 'function' || typeof ajvModule.createRequestAjv !== 'function' || (Original as { __lazyAjv?: boolean }).__lazyAjv) return;
  const onFirstUse = (create: () => object): object => {
    let real: object | undefined;
    const target = (): object => (real ??= create());
    return new Proxy(
      {},
      {
        get: (_t, key) => {
          const value = Reflect.get(target(), key);
          return typeof value === 'function' ? value.bind(target()) : value;
        },
        set: (_t, key, value) => Reflect.set(target(), key, value),
        has: (_t, key) => Reflect.has(target(), key),
      },
    );
  };
  class SchemaPreprocessor extends Original {
    static __lazyAjv = true;
    constructor(...args: any[]) {
      const create = ajvModule.createRequestAjv!;
      ajvModule.createRequestAjv = (doc, options) => onFirstUse(() => create(doc, options));
      try {
        super(...args);
      } finally {
        ajvModule.createRequestAjv = create;
      }
    }
  }
  try {
    mod.SchemaPreprocessor = SchemaPreprocessor;
  } catch {
    /* read-only exports: run as shipped */
  }
}
buildPreprocessorAjvOnFirstUse();

/**
 * express-openapi-validator (5.6.2) builds an OpenAPISchemaValidator at every load, which compiles
 * the whole OpenAPI 3.1 meta-schema with ajv (~150 ms of each start), and uses it only when
 * `validateApiSpec` is on. It is off here (the document is linted and compiled by the test suite),
 * so the meta-schema is compiled only when it will be used. The framework builds the class
 * through the module's exports object, so replacing the export takes effect.
 */
function compileMetaSchemaOnlyWhenUsed(): void {
  const modPath = path.join(path.dirname(require.resolve('express-openapi-validator')), 'framework', 'openapi.schema.validator.js');
  const mod = require(modPath) as { OpenAPISchemaValidator?: new (opts: { validateApiSpec?: boolean }) => unknown; __lazy?: boolean };
  const Original = mod.OpenAPISchemaValidator;
  if (typeof Original !== 'function' || mod.__lazy) return;
  try {
    mod.OpenAPISchemaValidator = function OpenAPISchemaValidator(opts: { validateApiSpec?: boolean }) {
      if (opts?.validateApiSpec) return new Original(opts);
      return { validate: () => ({ errors: [] }) };
    } as unknown as typeof Original;
    mod.__lazy = true;
  } catch {
    /* read-only exports: run as shipped */
  }
}
compileMetaSchemaOnlyWhenUsed();

/**
 * express-openapi-validator's `middleware(options)` deep-copies the document (lodash.clonedeep
 * over all of it: about a tenth of a worker's validator start, and as much garbage) so that it may
 * change it. Ours is a fresh copy made for this one validator (contractDocument, v2Document), so
 * the two steps of `middleware` run here without the copy. A build whose internals moved runs
 * `middleware` as shipped.
 */
function middlewareOnOwnDocument(options: Record<string, any>): RequestHandler[] {
  const base = path.dirname(require.resolve('express-openapi-validator'));
  const { OpenApiValidator } = require(path.join(base, 'openapi.validator.js')) as { OpenApiValidator?: new (o: unknown) => { installMiddleware(spec: unknown): unknown } };
  const { OpenApiSpecLoader } = require(path.join(base, 'framework', 'openapi.spec.loader.js')) as { OpenApiSpecLoader?: new (o: unknown) => { load(): unknown } };
  if (typeof OpenApiValidator !== 'function' || typeof OpenApiSpecLoader !== 'function') return expressOpenApiValidator.middleware(options as any) as unknown as RequestHandler[];
  const validator = new OpenApiValidator(options);
  return validator.installMiddleware(new OpenApiSpecLoader({ apiDoc: options.apiSpec, validateApiSpec: options.validateApiSpec, $refParser: options.$refParser }).load()) as RequestHandler[];
}

/** Whether every `$ref` in the document points into the document itself (`#/...`). */
export function onlyLocalRefs(node: unknown): boolean {
  if (Array.isArray(node)) return node.every(onlyLocalRefs);
  if (node === null || typeof node !== 'object') return true;
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string') {
      if (!value.startsWith('#/')) return false;
    } else if (!onlyLocalRefs(value)) return false;
  }
  return true;
}

/**
 * The validator hands the document object to json-schema-ref-parser's `bundle` at every load,
 * which crawls and re-points every `$ref` (~150 ms of each start). Ours are self-contained: every
 * ref is already a local `#/components/...` pointer, and bundling them changes nothing
 * (test/contract/contract-validator-load.test.ts proves it for the v3 and v2 documents). Such a document is
 * used as it is; any other goes through the parser as before.
 */
function skipBundlingSelfContainedDocuments(): void {
  const modPath = path.join(path.dirname(require.resolve('express-openapi-validator')), 'framework', 'index.js');
  const mod = require(modPath) as { OpenAPIFramework?: { prototype: Record<string, any> } };
  const proto = mod.OpenAPIFramework?.prototype;
  if (!proto || typeof proto.loadSpec !== 'function' || proto.__selfContained) return;
  const original = proto.loadSpec as (doc: unknown, refParser?: { mode?: string }) => unknown;
  proto.loadSpec = function (this: unknown, doc: unknown, refParser?: { mode?: string }) {
    if (doc && typeof doc === 'object' && (refParser?.mode ?? 'bundle') === 'bundle' && onlyLocalRefs(doc)) return Promise.resolve(doc);
    return original.call(this, doc, refParser);
  };
  proto.__selfContained = true;
}
skipBundlingSelfContainedDocuments();

/**
 * Response validation (VALIDATE_RESPONSES, on in the test suite, off in production) compiles the
 * response schemas of each operation on its first answer: entity records with every field and
 * their line records, the largest schemas of the document. ajv then spends most of that compile
 * in its generated-code optimiser (a pass that drops unused names: a quarter of the CPU of a test
 * file such as test/engines/query/query-http.test.ts), whose only gain is a slightly smaller
 * validator. The responses' ajv is built without it; what it accepts and refuses is the same
 * (ajv's `code.optimize` changes the generated code's shape, never a rule). Request validation,
 * what production runs, keeps the optimiser.
 */
export const RESPONSE_AJV_CODE = { optimize: false } as const;
function compileResponseValidatorsUnoptimised(): void {
  const modPath = path.join(path.dirname(require.resolve('express-openapi-validator')), 'framework', 'ajv', 'index.js');
  const mod = require(modPath) as { createResponseAjv?: (doc: unknown, options?: Record<string, unknown>) => unknown; __unoptimised?: boolean };
  const original = mod.createResponseAjv;
  if (typeof original !== 'function' || mod.__unoptimised) return;
  try {
    mod.createResponseAjv = (doc, options = {}) => original(doc, { ...options, code: { ...(options.code as object | undefined), ...RESPONSE_AJV_CODE } });
    mod.__unoptimised = true;
  } catch {
    /* read-only exports: run as shipped */
  }
}
compileResponseValidatorsUnoptimised();

/**
 * The document without what only response validation reads (responses, response headers,
 * examples): the validator preprocesses every response schema of every operation at load (a third
 * of its start-up work) even when responses are not validated, as in production.
 */
function requestOnly(doc: Record<string, any>): Record<string, any> {
  for (const item of Object.values<any>(doc.paths ?? {})) {
    for (const op of Object.values<any>(item ?? {})) {
      if (op && typeof op === 'object' && 'responses' in op) op.responses = { default: { description: 'not validated' } };
    }
  }
  if (doc.components) {
    delete doc.components.responses;
    delete doc.components.headers;
    delete doc.components.examples;
  }
  return doc;
}

/**
 * The contract requires the Idempotency-Key on /purchase-order-receipts, but the server accepts a
 * dry run without one (spec, Writes rule 7: a dry run ignores the key), which the document cannot
 * express. So the validator checks the key's form only; whether it must be present is the write
 * runner's rule (WriteDefinition `requireKey`), which knows the dry run and answers a missing key
 * on a real post with 400 IDEMPOTENCY_KEY_INVALID.
 */
export function keyPresenceLeftToTheRunner(doc: Record<string, any>): Record<string, any> {
  const relax = (p: any) => {
    if (p && typeof p === 'object' && p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key') p.required = false;
  };
  for (const p of Object.values<any>(doc.components?.parameters ?? {})) relax(p);
  for (const item of Object.values<any>(doc.paths ?? {})) {
    for (const p of item?.parameters ?? []) relax(p);
    for (const op of Object.values<any>(item ?? {})) {
      if (op && typeof op === 'object' && Array.isArray(op.parameters)) for (const p of op.parameters) relax(p);
    }
  }
  return doc;
}

/**
 * The warm-up order: the writes (posting) first, whose request bodies are the largest schemas and
 * whose first request would otherwise pay the longest compile; then queries and the rest.
 */
function writesFirst<T extends { operationId: string }>(ops: readonly T[]): T[] {
  const write = (op: T) => /^post[A-Z]/.test(op.operationId);
  return [...ops.filter(write), ...ops.filter((op) => !write(op))];
}

export interface WarmOptions {
  /**
   * Whether the server has no request of its own in flight. The warm-up compiles the next
   * operation only then (it waits otherwise): a request's every step (auth, validation, handler)
   * would otherwise queue behind a compile, one per await, and a first request right after start
   * paid several compiles instead of at most one.
   */
  idle?: () => boolean;
}

export interface ContractValidator {
  /** express-openapi-validator's middleware chain (request validation; responses too when asked), as one handler. */
  middleware: RequestHandler[];
  /**
   * Compiles the validator for every operation now instead of on its first request (the spec is
   * loaded and each operation's schemas compiled lazily: the first hit on an operation costs
   * about 250 ms and errors in the document would only surface then). Runs the same middleware
   * instances on a private loopback server that has no handlers, so nothing is executed.
   */
  warm(options?: WarmOptions): Promise<{ operations: number; ms: number }>;
  /**
   * Loads the document and compiles one operation (ping): what every operation shares (the
   * document, the validator's preprocessing, the shared component schemas it needs). The rest
   * compile on first use or in warm(), each in a few milliseconds. `also`: further operationIds
   * to compile now (the server's: those whose engines the warm-up runs before readiness).
   */
  prepare(also?: readonly string[]): Promise<{ operations: number; ms: number }>;
}

/**
 * One request to the warm-up's loopback server through node:http. Not the global fetch: that is
 * undici, which nothing else in the service loads; its first use cost every worker about 20 MB
 * resident for good (its module graph and compiled code; decision 0039).
 */
function loopbackRequest(port: number, method: string, route: string, body: string | undefined): Promise<{ status: number; pid: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: route, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const pid = res.headers['x-warm-pid'];
          resolve({ status: res.statusCode ?? 0, pid: Array.isArray(pid) ? pid[0] : pid, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** `document`: a fresh copy of the document at each call (the validator changes it); default contractDocument. */
export function contractValidator(options: { base: string; validateResponses: boolean; document?: () => Record<string, any> }): ContractValidator {
  // Built on first use (warm-up or first request): loading the document takes seconds of CPU,
  // which would otherwise hold up the server's listen.
  const build = () => middlewareOnOwnDocument({
    apiSpec: keyPresenceLeftToTheRunner(options.validateResponses ? (options.document ?? contractDocument)() : requestOnly((options.document ?? contractDocument)())) as any,
    // allErrors: one entry per culprit, not just the first one ajv meets. coerceTypes false: body
    // values must have their declared type ("5" is not a number); query parameters are always
    // coerced by the validator (?dryRun=true).
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false, allErrors: true },
    validateResponses: options.validateResponses ? ({ onError: undefined } as any) : false,
    validateSecurity: false,
    // No operation takes multipart/form-data: without this the validator builds one more ajv over
    // the whole document at start (createRequestAjv for multer's middleware), never used.
    fileUploader: false,
    // ajv-formats' default ("fast") date check is a regex that takes 2026-02-30 and 0000-01-01:
    // dates and timestamps must be real and within what every engine stores (0001..9999).
    formats: {
      date: { type: 'string', validate: isStorableDate },
      'date-time': { type: 'string', validate: isStorableDateTime },
    },
    // The document is linted (make lint) and compiled by the test suite; validating it against the
    // OpenAPI meta-schema again at every start costs seconds of blocked event loop.
    validateApiSpec: false,
    ignoreUndocumented: false,
    ignorePaths: (p: string) => !p.startsWith(options.base),
    $refParser: { mode: 'bundle' },
  });
  let chain: RequestHandler[] | undefined;

  /** Runs the validator's middleware chain in order, as `app.use(...chain)` would. */
  const run: RequestHandler = (req, res, next) => {
    const handlers = (chain ??= build());
    let i = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null) return next(err);
      const handler = handlers[i++];
      if (!handler) return next();
      try {
        void handler(req, res, step);
      } catch (e) {
        next(e);
      }
    };
    step();
  };
  const middleware = [run];

  async function warm(only?: (op: (typeof OPERATIONS)[number]) => boolean, idle?: () => boolean): Promise<{ operations: number; ms: number }> {
    const started = process.hrtime.bigint();
    const mini = express();
    mini.set('query parser', 'simple');
    mini.use(express.json({ type: () => true, strict: false, limit: '1kb' }));
    // Each answer names the process that gave it: a warm-up answered by another process compiled
    // nothing here (see the exclusive listen below), which is an error, not a silent no-op.
    mini.use((_req, res, next) => {
      res.setHeader('x-warm-pid', String(process.pid));
      next();
    });
    mini.use(...middleware);
    mini.use((_req, res) => {
      res.status(204).end();
    });
    const swallow: ErrorRequestHandler = (err, _req, res, _next) => {
      // 400s are expected (an empty body misses required fields); a 500 means the document is broken.
      const status = typeof err?.status === 'number' ? err.status : 500;
      res.status(status >= 500 ? 500 : 204).type('text/plain').end(status >= 500 ? String(err?.message ?? err) : '');
    };
    mini.use(swallow);
    const server = http.createServer(mini);
    // exclusive: in a node:cluster worker a plain listen(0) is NOT private: the primary holds the
    // socket under the key (127.0.0.1, port 0) and round-robins its connections among every worker
    // listening under that key, so one worker's warm-up requests were answered by the other
    // worker's warm-up server (waiting for that worker's compile, or cut when it closed: "other
    // side closed", readiness 503 for seconds). An exclusive handle is this process's own.
    await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, resolve));
    const { port } = server.address() as AddressInfo;
    try {
      for (const op of only ? OPERATIONS.filter(only) : writesFirst(OPERATIONS)) {
        while (idle && !idle()) await new Promise((resolve) => setTimeout(resolve, 2));
        const route = options.base + op.path.replace(/\{[^}]+\}/g, 'warm');
        const hasBody = op.method !== 'GET' && op.method !== 'HEAD';
        const res = await loopbackRequest(port, op.method, route, hasBody ? '{}' : undefined);
        if (res.pid !== String(process.pid)) throw new Error(`the warm-up request for ${op.operationId} was answered by process ${res.pid}, not this one (${process.pid})`);
        if (res.status >= 500) throw new Error(`openapi.yaml does not compile for ${op.operationId}: ${res.text}`);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    return { operations: only ? OPERATIONS.filter(only).length : OPERATIONS.length, ms: Math.round(Number(process.hrtime.bigint() - started) / 1e6) };
  }

  return { middleware, warm: (o) => warm(undefined, o?.idle), prepare: (also = []) => warm((op) => op.operationId === 'ping' || also.includes(op.operationId)) };
}
