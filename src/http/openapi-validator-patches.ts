import path from 'node:path';
import type express from 'express';
import type { RequestHandler } from 'express';
import * as expressOpenApiValidator from 'express-openapi-validator';

/**
 * Changes to express-openapi-validator's internals, applied when this module loads (each by a
 * function named for what it does; a build whose internals moved runs as shipped): what the
 * validator does per request and at start-up costs less, answers the same. The validator itself,
 * as the app uses it, is contract-validator.ts.
 */

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
    pathToRegexp: (route: string, options: { sensitive: boolean; trailing: boolean }) => { regexp: RegExp; keys: Array<{ name: string }> };
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
          // path-to-regexp 8 has no `strict` (the module passes it, and it is ignored): `trailing`
          // is its name, so strict routing refuses a trailing slash here as the routes do (decision 0445).
          const { regexp, keys } = pathToRegexp(expressRoute, { sensitive: options.sensitive, trailing: !options.strict });
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
export function middlewareOnOwnDocument(options: Record<string, any>): RequestHandler[] {
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
