import { Router, type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import { V2_BASE, apiRouter } from '../http/base';
import type { Services } from '../services';
import { CATALOG } from '../../generated/catalog';
import type { EntityDef } from '../catalog/types';
import { ApiProblem } from '../errors/problem';
import { entityAsSeenBy, scopeForPath, type Scope } from '../auth/scopes';
import { installedView } from '../catalog/installed';
import { planQuery } from '../engines/query/plan';
import { executePlan } from '../engines/query/run';
import { executeMatch, planMatch } from '../engines/match/run';
import { WRITES } from '../engines/posting/writes';
import { contractValidator } from '../http/contract-validator';
import type { OperationMap } from '../http/operations';
import { toProblem } from '../http/errors/handler';
import { methodNotAllowed } from '../http/routes/ops';
import { utilityRoutes } from '../http/routes/utility';
import { writeRequestOf } from '../http/routes/writes';
import { v2Document, v2DocumentYaml, v2Entities, v2NameOf } from './document';
import { deprecationHeaders, failureOf, sendLegacyFailure } from './legacy';
import { translateMatch, translateQuery } from './translate';
import { closeWriteBodies, dropUnknownFields, writeBodySchema } from './unknown-fields';

/** v2 write path (verb first, singular) -> v3 write route (src/engines/posting/writes.ts). */
export const V2_WRITES: Readonly<Record<string, string>> = {
  '/post/ledger-transaction': '/ledger-transactions',
  '/post/ap-invoice': '/ap-invoices',
  '/post/inventory-allocation': '/inventory-allocations',
  '/post/purchase-order-receipt': '/purchase-order-receipts',
  '/post/payroll-record': '/payroll-records/post',
  '/post/service-invoice': '/service-invoices/post',
  '/post/service-inventory': '/service-inventories',
};

/** Printable, bounded copy of a caller header for the log (never trusted, never echoed). */
function headerForLog(req: Request, name: string): string | undefined {
  const raw = req.headers[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined) return undefined;
  return value.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
}

/** x-context-id and x-integration-id: accepted and logged (request log field `v2`). */
const v2Context: RequestHandler = (req, res, next) => {
  const contextId = headerForLog(req, 'x-context-id');
  const integrationId = headerForLog(req, 'x-integration-id');
  res.locals.v2 = { ...(contextId !== undefined ? { contextId } : {}), ...(integrationId !== undefined ? { integrationId } : {}) };
  next();
};

function noteIgnored(res: Response, ignored: string[]): void {
  if (ignored.length > 0) res.locals.v2 = { ...res.locals.v2, ignoredFields: ignored.slice(0, 20) };
}

/**
 * GET /v2/openapi.yaml: the frozen v2 document beside v3's (test/v2/v2-openapi-golden.test.ts).
 * Outside /api/v2 and without an API key, like the ops routes (src/http/routes/ops.ts).
 */
export function v2DocumentRoute(operations?: OperationMap): Router {
  operations?.addRoute('GET', '/v2/openapi.yaml', 'v2OpenapiYaml');
  const router = Router();
  router
    .route('/v2/openapi.yaml')
    .get((_req, res) => {
      res.setHeader('Content-Type', 'application/yaml; charset=utf-8');
      res.send(v2DocumentYaml());
    })
    .all(methodNotAllowed('GET, HEAD'));
  return router;
}

/**
 * /api/v2: the frozen compatibility surface (openapi-v2.yaml). A thin adapter: the same guards as
 * v3 (passed in), then v2's own request validator (its own document, never v3's), then the v3
 * engines (query plan, match, posting runner, lock), with v2 shapes in and legacy bodies out.
 */
export function v2Api(services: Services, guards: RequestHandler[], operations?: OperationMap): Router {
  // Matches only the paths as the v2 document spells them: v2CanonicalPath made them so.
  const router = apiRouter();
  // Labels in the request log and metrics: the operationIds of openapi-v2.yaml.
  for (const [p, item] of Object.entries(v2Document().paths as Record<string, { post: { operationId: string } }>)) {
    operations?.addRoute('POST', V2_BASE + p, item.post.operationId);
  }
  const qd = services.queryDialect;
  // Unknown fields of write bodies: dropped (as v2 did), or refused by the validator when the
  // operator opts in (V2_REJECT_UNKNOWN_FIELDS; src/v2/unknown-fields.ts).
  const rejectUnknown = services.config.v2RejectUnknownFields;
  const document = rejectUnknown ? () => closeWriteBodies(v2Document(), Object.keys(V2_WRITES)) : v2Document;
  const validator = contractValidator({ base: V2_BASE, validateResponses: false, document });
  const writeDoc = v2Document();
  const depth = { maxFilterDepth: services.config.maxFilterDepth };

  router.use(deprecationHeaders, v2Context);
  router.use(...guards);
  // Mounted at /api/v2, the validator sees the full path (req.originalUrl) as the v3 one does.
  router.use(...validator.middleware);

  /** v2 never answered 404: an unknown entity is a business failure (200, responseType Error). */
  const entityOf = (req: Request, res: Response, operation: 'query' | 'match'): EntityDef => {
    const name = String(req.params.entity);
    const v3 = v2Entities().get(name);
    const entity = v3 !== undefined ? CATALOG[v3] : undefined;
    if (!entity || (operation === 'match' && entity.matchFields.length === 0)) {
      throw new ApiProblem('UNKNOWN_ENTITY', `There is no ${operation} operation for entity "${name}".`);
    }
    return installedView(entityAsSeenBy(entity, res.locals.apiKey?.scopes), services.installed);
  };

  router.post('/query/:entity', async (req, res) => {
    const entity = entityOf(req, res, 'query');
    const { request, offset, ignored } = translateQuery(entity, req.body);
    noteIgnored(res, ignored);
    const plan = { ...planQuery(entity, request, depth), offset };
    plan.pageNumber = Math.floor(offset / plan.pageSize) + 1;
    const envelope = await services.boundary.read((db) => executePlan(db, qd, plan), { what: `reading ${entity.entity}` });
    res.json({
      responseType: 'Success',
      entity: v2NameOf(entity.entity),
      asOf: envelope.asOf,
      page: { offset, pageSize: plan.pageSize, count: envelope.page.totalCount, returnedCount: envelope.page.returnedCount },
      data: envelope.data,
    });
  });

  router.post('/match/:entity', async (req, res) => {
    const entity = entityOf(req, res, 'match');
    const { request, ignored } = translateMatch(req.body);
    noteIgnored(res, ignored);
    const plan = planMatch(entity, request, depth);
    const result = await services.boundary.read((db) => executeMatch(db, qd, plan), { what: `matching ${entity.entity}` });
    res.json({ responseType: 'Success', asOf: result.asOf, data: result.data });
  });

  for (const [v2Path, v3Route] of Object.entries(V2_WRITES)) {
    const entry = WRITES.find((w) => w.route === v3Route);
    if (!entry) throw new Error(`v2 write ${v2Path}: no v3 write ${v3Route} in the table of writes`);
    if (!entry.definition) {
      // Listed but not wired up: 501 as on v3 (src/http/routes/writes.ts).
      router.post(v2Path, (_req, _res, next) => next(new ApiProblem('NOT_IMPLEMENTED', `POST ${v2Path} is in the contract but its posting path is not wired up in this build.`)));
      continue;
    }
    // v2 had no Idempotency-Key: a write that requires one in v3 (receipts) runs without it here.
    const definition = { ...entry.definition, requireKey: false };
    const bodySchema = writeBodySchema(writeDoc, v2Path);
    router.post(v2Path, async (req, res) => {
      const request = writeRequestOf(req, res, definition.route, { idempotencyKey: undefined, dryRun: false });
      if (!rejectUnknown) {
        const ignored: string[] = [];
        request.body = dropUnknownFields(writeDoc, bodySchema, request.body, ignored);
        noteIgnored(res, ignored);
      }
      const out = await services.writes.run(definition, request);
      if (out.status >= 400) {
        const b = out.body as { detail?: string; errors?: [] };
        sendLegacyFailure(res, { status: out.status, code: String(out.headers['X-Error-Code'] ?? 'INTERNAL_ERROR'), detail: String(b.detail ?? ''), errors: b.errors, headers: out.headers });
        return;
      }
      const { dryRun: _dryRun, ...response } = out.body;
      res.status(200).json({ responseType: 'Success', message: `Done: ${definition.what}.`, response });
    });
  }

  // The original utility paths, same handlers as v3, success bodies wrapped in responseType.
  const legacyJson: RequestHandler = (_req, res, next) => {
    const json = res.json.bind(res);
    res.json = (body: unknown) => json(res.statusCode < 300 && body && typeof body === 'object' ? { responseType: 'Success', ...(body as object) } : body);
    next();
  };
  router.use('/utility', legacyJson);
  router.use(utilityRoutes(services));

  router.use((req, _res, next) => next(new ApiProblem('ROUTE_NOT_FOUND', `No v2 operation at ${req.method} ${req.path}.`)));
  router.use(legacyErrors(services));
  return router;
}

/**
 * v2 has always answered its paths in any letter case and with a trailing slash (Express's
 * default), and its clients may rely on it. A path under /api/v2 in any spelling that names a v2
 * operation (`/API/V2/Post/Ledger-Transaction/`) is rewritten here, before the v2 mount, to the
 * path as openapi-v2.yaml spells it (req.url and req.originalUrl): the scope check, the lock gate,
 * the v2 validator, the handlers and the log all see the one canonical path (decision 0445).
 * Another path under any spelling of /api/v2 gets the canonical base and v2's own not-found.
 * `operations` holds the v2 routes (v2Api registers them).
 */
export function v2CanonicalPath(operations: OperationMap): RequestHandler {
  return (req, _res, next) => {
    const path = req.path;
    const lower = path.toLowerCase();
    if (lower !== V2_BASE && !lower.startsWith(`${V2_BASE}/`)) return next();
    const canonical = operations.canonicalPath(path) ?? V2_BASE + path.slice(V2_BASE.length);
    if (canonical !== path) {
      const query = req.url.slice(req.url.indexOf('?') === -1 ? req.url.length : req.url.indexOf('?'));
      req.url = canonical + query;
      req.originalUrl = req.url;
    }
    next();
  };
}

/** operationId -> the scope it needs, for every operation of openapi-v2.yaml (src/auth/scopes.ts rules its paths). */
export function v2OperationScopes(): Map<string, Scope | null> {
  const paths = v2Document().paths as Record<string, { post: { operationId: string } }>;
  return new Map(Object.entries(paths).map(([p, item]) => [item.post.operationId, scopeForPath(p)]));
}

/** Every failure on /api/v2 as a legacy body (classified exactly as on v3: src/http/errors/handler.ts). */
function legacyErrors(services: Services): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const mapped = err instanceof ApiProblem ? undefined : services.boundary.problemFor(err);
    const { problem, unexpected } = mapped ? { problem: mapped, unexpected: false } : toProblem(err);
    if (unexpected) services.logger.error({ err, correlationId: res.locals.correlationId, route: req.originalUrl }, 'unexpected error');
    if (res.headersSent) {
      res.end();
      return;
    }
    sendLegacyFailure(res, failureOf(problem));
  };
}
