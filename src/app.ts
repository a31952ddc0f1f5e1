import express from 'express';
import type { Services } from './services';
import { correlation } from './http/middleware/correlation';
import { traceSpan } from './http/middleware/trace-span';
import { ensureTraceContext } from './telemetry/tracing';
import { requestLog } from './http/middleware/request-log';
import { authenticate, requireScope } from './http/middleware/auth';
import { filterDepthGuard, jsonBody } from './http/middleware/body';
import { errorHandler, notFound } from './http/errors/handler';
import { contractValidator } from './http/contract-validator';
import { createMetrics } from './http/metrics';
import { OperationMap, operationLabel } from './http/operations';
import { rateLimit, RateLimiter } from './http/middleware/rate-limit';
import { opsRoutes, type OpsState } from './http/routes/ops';
import { utilityRoutes } from './http/routes/utility';
import { queryRoutes } from './http/routes/query';
import { writeRoutes } from './http/routes/writes';
import { lockGate, lockSession } from './http/middleware/lock-gate';
import { eventsRoutes } from './http/routes/events';
import { eventFeedRoutes } from './http/routes/event-feed';
import { rejectV2Fields } from './v2/fields';
import { v2Api, v2CanonicalPath, v2DocumentRoute, v2OperationScopes } from './v2/routes';
import { securityHeaders } from './http/middleware/security-headers';
import { AuthFailureThrottle } from './http/middleware/auth-throttle';

export { API_BASE } from './http/base';
import { API_BASE, V2_BASE, apiRouter } from './http/base';
import { OPERATION_SCOPES, type Scope } from './auth/scopes';

/**
 * The request pipeline, in order:
 *   security headers -> correlation id + trace -> operation label, metrics, request log -> ops routes (/healthz, /readyz,
 *   /metrics, /openapi.*, /docs) -> [/api/v3: auth (failed-key throttle per address) -> scope -> rate limit -> body (415/413/400) -> filter
 *   depth bound -> contract validation -> handler] -> problem documents for everything that failed.
 * /api/v2 runs the same guards, then its own validator and handlers, and renders legacy bodies.
 */
export function createApp(services: Services): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // Which X-Forwarded-* hops are believed (TRUST_PROXY): req.ip for the failed-authentication
  // throttle, req.secure for Strict-Transport-Security.
  app.set('trust proxy', services.config.trustProxy);
  // Paths as the documents spell them (RFC 3986: a path is case-sensitive): /API/V3/... or a
  // trailing slash names no v3 operation (404), so no guard, validator or route can see another
  // path than the rest. v2 keeps answering any case and a trailing slash: v2CanonicalPath rewrites
  // such a path to the document's before anything under /api/v2 sees it (decision 0445).
  app.set('case sensitive routing', true);
  app.set('strict routing', true);

  // Shared with the server (warm-up at boot, readiness while draining) and with tests.
  const operations = new OperationMap(API_BASE);
  const metrics = createMetrics(() => services.knex);
  const validator = contractValidator({ base: API_BASE, validateResponses: services.config.validateResponses });
  const opsState: OpsState = { draining: false, warming: false };
  app.locals.metrics = metrics;
  app.locals.warmContract = validator.warm;
  app.locals.prepareContract = validator.prepare;
  app.locals.opsState = opsState;

  // First: every answer, refusals included, carries the security headers.
  app.use(securityHeaders({ hstsMaxAgeSeconds: services.config.hstsMaxAgeSeconds }));
  app.use(correlation);
  // OpenTelemetry: the request's span; everything after runs in its context (telemetry/tracing.ts).
  ensureTraceContext();
  app.use(traceSpan);
  app.use(operationLabel(operations));
  app.use(metrics.observe);
  app.use(requestLog(services.logger));
  // Outside /api/v3, no API key: /healthz /readyz /metrics /openapi.yaml /openapi.json /docs
  app.use(opsRoutes(services, metrics.registry, opsState, operations));
  // The frozen v2 document (/v2/openapi.yaml), served by the v2 wing beside the ops routes.
  app.use(v2DocumentRoute(operations));

  // The guard chain of every API surface: v2 is no back door (one rate-limit bucket per key for both).
  const limiter = new RateLimiter({ perMinute: services.config.rateLimitPerMinute });
  // Failed authentications per client address (429 AUTH_THROTTLED), one count for v3 and v2.
  const authThrottle = new AuthFailureThrottle({ failuresPerMinute: services.config.authFailuresPerMinute });
  const guards = (filterField: 'filters' | 'filter', scopes: ReadonlyMap<string, Scope | null>) => [
    authenticate(services.keys, services.boundary, authThrottle),
    // Scoped keys only (src/auth/scopes.ts): 403 SCOPE_MISSING before any other work, by the operation resolved.
    requireScope(scopes),
    rateLimit(limiter),
    // Maintenance lock: 423 for every read and write (memory only; ping/lock/un-lock pass).
    lockGate(services.lock),
    ...jsonBody(services.config.bodyLimitBytes),
    filterDepthGuard(services.config.maxFilterDepth, filterField),
    // The lock again after the body, and the request's session: the lock lets admitted requests finish.
    lockSession(services.lock),
  ];

  const api = apiRouter();
  api.use(...guards('filters', OPERATION_SCOPES));
  api.use(rejectV2Fields);
  app.use(API_BASE, api);
  // The frozen v2 surface: a thin adapter over the same engines, behind the same guards (src/v2/),
  // which see its paths as its document spells them.
  app.use(v2CanonicalPath(operations));
  app.use(V2_BASE, v2Api(services, guards('filter', v2OperationScopes()), operations));

  app.use(...validator.middleware);
  // Before the query routes: /webhook-endpoints/query is not an entity's /{entity}/query.
  app.use(API_BASE, eventsRoutes(services));
  // Before the query routes too: /events/query and /event-feeds/query are not entity reads.
  app.use(API_BASE, eventFeedRoutes(services));
  app.use(API_BASE, utilityRoutes(services));
  app.use(API_BASE, queryRoutes(services));
  app.use(API_BASE, writeRoutes(services));

  app.use(notFound);
  // Database failures that reach here unmapped are still classified by the boundary (never a 500).
  app.use(errorHandler(services.logger, (err) => services.boundary.problemFor(err)));
  return app;
}
