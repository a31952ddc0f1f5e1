import path from 'node:path';
import { Router, type RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import type { Services } from '../../services';
import { ApiProblem } from '../../errors/problem';
import { publicDocumentJson, publicDocumentYaml } from '../openapi-document';
import type { OperationMap } from '../operations';
import { docsHeaders } from '../middleware/security-headers';

/**
 * Routes outside /api/v3, without an API key: liveness, readiness, metrics, the public OpenAPI
 * document and the rendered reference (the frozen v2 document is the v2 wing's: src/v2/routes.ts). Every one is GET (HEAD too); any other method is 405
 * with Allow, like the contract routes.
 */

/** Operation labels of these routes in logs and metrics. */
export const OPS_ROUTES = {
  '/healthz': 'healthz',
  '/readyz': 'readyz',
  '/metrics': 'metrics',
  '/openapi.yaml': 'openapiYaml',
  '/openapi.json': 'openapiJson',
  '/docs': 'docs',
  '/docs/init.js': 'docs',
  '/docs/docs.css': 'docs',
} as const;

const READY_CHECK_TIMEOUT_MS = 2_000;

const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
/** The only files of swagger-ui-dist served (its own index.html points at a remote petstore). */
const SWAGGER_ASSET = /^(swagger-ui(-bundle|-standalone-preset)?\.(js|css)(\.map)?|index\.css|favicon-(16x16|32x32)\.png)$/;

const DOCS_HTML = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Accounting Integration API v3 reference</title>
    <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
    <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
    <link rel="stylesheet" href="/docs/docs.css">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/docs/assets/swagger-ui-bundle.js"></script>
    <script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to a public validator service.
const DOCS_INIT_JS = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: 'BaseLayout'
  });
});
`;

// A file, not an inline <style>: the page's Content-Security-Policy allows no inline style.
const DOCS_CSS = 'body { margin: 0; } .swagger-ui .topbar { display: none; }\n';

/** 405 with Allow: what every route outside the contract answers to another method. */
export function methodNotAllowed(allow: string): RequestHandler {
  return (req, _res, next) => {
    next(new ApiProblem('METHOD_NOT_ALLOWED', `${req.method} is not allowed here; this path accepts ${allow}.`, { headers: { Allow: allow } }));
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface OpsState {
  /** Set when SIGTERM arrived: readiness turns 503 so balancers stop sending traffic. */
  draining: boolean;
  /** Set while the contract validator compiles at boot (readiness 503 until it is done). */
  warming: boolean;
  /** Why the contract document failed to compile at boot, if it did. */
  warmError?: string;
}

/** Why the service is not ready, or undefined when it is. */
export async function readinessProblem(services: Services): Promise<string | undefined> {
  try {
    await withTimeout(services.database.reachable(), READY_CHECK_TIMEOUT_MS, 'The database');
  } catch (err) {
    return `The database is not reachable (${err instanceof Error && /did not answer/.test(err.message) ? err.message : 'connection failed'}).`;
  }
  try {
    const pending = await withTimeout(services.database.pendingMigrations(), READY_CHECK_TIMEOUT_MS, 'The database');
    if (pending === null) return 'The database has not been migrated.';
    if (pending.length > 0) return `${pending.length} database migration(s) not applied: ${pending.join(', ')}.`;
  } catch {
    return 'The database has not been migrated.';
  }
  try {
    return await withTimeout(services.database.settingsProblem(), READY_CHECK_TIMEOUT_MS, 'The database');
  } catch (err) {
    return `The database settings could not be read (${err instanceof Error && /did not answer/.test(err.message) ? err.message : 'query failed'}).`;
  }
}

export function opsRoutes(services: Services, registry: Registry, state: OpsState, operations: OperationMap): Router {
  const router = Router();
  for (const [route, operationId] of Object.entries(OPS_ROUTES)) operations.addRoute('GET', route, operationId);
  operations.addRoute('GET', '/docs/assets/{file}', 'docsAsset');
  const GET_ONLY = 'GET, HEAD';

  router
    .route('/healthz')
    .get((_req, res) => {
      res.json({ status: 'ok', uptimeSeconds: Math.round(process.uptime()) });
    })
    .all(methodNotAllowed(GET_ONLY));

  router
    .route('/readyz')
    .get(async (_req, res, next) => {
      try {
        const problem = state.draining
          ? 'The server is shutting down.'
          : state.warming
            ? 'The server is starting: the contract validator is compiling.'
            : state.warmError
              ? 'The contract document failed to compile; see the log.'
              : services.lock?.isLocked()
                ? undefined
                : await readinessProblem(services);
        if (problem) throw new ApiProblem('SERVICE_UNAVAILABLE', problem, { headers: { 'Retry-After': '5' } });
        // While the maintenance lock is held the pool is dropped on purpose and every v3 call
        // answers 423: the service is working as intended, so it stays ready.
        const holder = services.lock?.isLocked() ? services.lock.current : null;
        if (holder) res.json({ status: 'ready', database: 'locked', lockUser: holder.userName });
        else res.json({ status: 'ready', database: 'ok', migrations: 'applied' });
      } catch (err) {
        next(err);
      }
    })
    .all(methodNotAllowed(GET_ONLY));

  router
    .route('/metrics')
    .get(async (_req, res, next) => {
      try {
        const body = await registry.metrics();
        res.setHeader('Content-Type', registry.contentType);
        res.send(body);
      } catch (err) {
        next(err);
      }
    })
    .all(methodNotAllowed(GET_ONLY));

  /** A GET answered with the text `body()` as `contentType`; another method is 405. */
  const text = (paths: string | string[], contentType: string, body: () => string) =>
    router
      .route(paths)
      .get((_req, res) => {
        res.setHeader('Content-Type', contentType);
        res.send(body());
      })
      .all(methodNotAllowed(GET_ONLY));

  text('/openapi.yaml', 'application/yaml; charset=utf-8', publicDocumentYaml);
  let json: string | undefined;
  text('/openapi.json', 'application/json; charset=utf-8', () => (json ??= JSON.stringify(publicDocumentJson())));

  // The reference's Content-Security-Policy (own assets only, never framed), on every /docs answer.
  router.use('/docs', docsHeaders);

  text(['/docs', '/docs/'], 'text/html; charset=utf-8', () => DOCS_HTML);
  text('/docs/init.js', 'text/javascript; charset=utf-8', () => DOCS_INIT_JS);
  text('/docs/docs.css', 'text/css; charset=utf-8', () => DOCS_CSS);

  router
    .route('/docs/assets/:file')
    .get((req, res, next) => {
      const file = String(req.params.file);
      if (!SWAGGER_ASSET.test(file)) return next(new ApiProblem('ROUTE_NOT_FOUND', `No asset ${file}.`));
      // The one cacheable answer: a versioned package's static files (sendFile's max-age).
      const noStore = res.getHeader('Cache-Control');
      res.removeHeader('Cache-Control');
      res.sendFile(file, { root: SWAGGER_UI_DIR, maxAge: '1d', dotfiles: 'deny' }, (err) => {
        if (!err || res.headersSent) return;
        if (noStore !== undefined) res.setHeader('Cache-Control', noStore);
        next((err as { status?: number }).status === 404 ? new ApiProblem('ROUTE_NOT_FOUND', `No asset ${file}.`) : err);
      });
    })
    .all(methodNotAllowed(GET_ONLY));

  return router;
}
