import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { TraceContext } from './correlation';

/** One structured line per request; never the API key itself, only its id. */
export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    res.on('finish', () => {
      const trace = res.locals.trace as TraceContext | undefined;
      const started = res.locals.startedAt as bigint | undefined;
      const durationMs = started ? Number(process.hrtime.bigint() - started) / 1e6 : undefined;
      logger.info(
        {
          correlationId: res.locals.correlationId,
          traceId: trace?.traceId,
          traceparent: trace?.traceparent,
          method: req.method,
          route: (req.originalUrl || req.url).split('?')[0],
          operationId: res.locals.operationId,
          status: res.statusCode,
          errorCode: res.locals.errorCode,
          durationMs: durationMs === undefined ? undefined : Math.round(durationMs * 1000) / 1000,
          keyId: res.locals.apiKey?.id,
          // /api/v2 only: x-context-id, x-integration-id and the request fields v2 ignored (src/v2/routes.ts).
          v2: res.locals.v2,
        },
        'request',
      );
    });
    next();
  };
}
