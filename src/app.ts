import express, { Router } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Services } from './services';
import { correlation } from './http/middleware/correlation';
import { requestLog } from './http/middleware/request-log';
import { authenticate } from './http/middleware/auth';
import { filterDepthGuard, jsonBody } from './http/middleware/body';
import { errorHandler, notFound } from './http/errors/handler';
import { contractDocument } from './http/openapi-document';
import { utilityRoutes } from './http/routes/utility';

export const API_BASE = '/api/v3';

/**
 * The request pipeline, in order:
 *   correlation id + trace -> request log -> [/api/v3: auth -> body (415/413/400) -> filter depth
 *   bound -> contract validation -> handler] -> problem documents for everything that failed.
 */
export function createApp(services: Services): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  app.use(correlation);
  app.use(requestLog(services.logger));

  const api = Router();
  api.use(authenticate(services.keys));
  api.use(...jsonBody(services.config.bodyLimitBytes));
  api.use(filterDepthGuard(services.config.maxFilterDepth));
  app.use(API_BASE, api);

  app.use(
    OpenApiValidator.middleware({
      apiSpec: contractDocument() as any,
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: services.config.validateResponses ? { onError: undefined } as any : false,
      validateSecurity: false,
      ignoreUndocumented: false,
      ignorePaths: (p: string) => !p.startsWith(API_BASE),
      $refParser: { mode: 'dereference' },
    }),
  );
  app.use(API_BASE, utilityRoutes(services));

  app.use(notFound);
  app.use(errorHandler(services.logger));
  return app;
}
