import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { ApiProblem } from '../../errors/problem';
import { sendProblem } from './render';
import { toFieldErrors } from '../validation-errors';

/** Maps whatever was thrown to an ApiProblem. Unknown errors become a redacted 500. */
export function toProblem(err: unknown): { problem: ApiProblem; unexpected: boolean } {
  if (err instanceof ApiProblem) return { problem: err, unexpected: false };
  const e = err as Record<string, any>;
  // body-parser
  if (e?.type === 'entity.parse.failed') return { problem: new ApiProblem('MALFORMED_JSON', 'The request body is not valid JSON.'), unexpected: false };
  if (e?.type === 'entity.too.large') {
    return { problem: new ApiProblem('PAYLOAD_TOO_LARGE', `The request body exceeds the limit of ${e.limit} bytes.`), unexpected: false };
  }
  if (e?.type === 'charset.unsupported' || e?.type === 'encoding.unsupported') {
    return { problem: new ApiProblem('UNSUPPORTED_MEDIA_TYPE', 'Only UTF-8 JSON bodies are accepted.'), unexpected: false };
  }
  // body-parser: any other failure of the client's body it marks as the client's (status 4xx,
  // expose): a compressed body that does not inflate (zlib's Z_DATA_ERROR, a bad brotli stream), a
  // body shorter than its Content-Length, an upload cut off. The body is unreadable: 400, never 500.
  if (isUnreadableBody(e)) {
    return { problem: new ApiProblem('MALFORMED_JSON', `The request body could not be read${e?.code === undefined ? '' : ` (${String(e.code)})`}: send UTF-8 JSON, compressed only as its Content-Encoding says.`), unexpected: false };
  }
  // express-openapi-validator
  if (typeof e?.status === 'number' && Array.isArray(e?.errors)) {
    switch (e.status) {
      case 404: {
        const entity = /\/api\/v3\/([^/]+)\/(query|match)$/.exec(String(e.path ?? ''));
        if (entity) {
          return { problem: new ApiProblem('UNKNOWN_ENTITY', `There is no ${entity[2]} operation for entity "${entity[1]}".`), unexpected: false };
        }
        return { problem: new ApiProblem('ROUTE_NOT_FOUND', `No operation at ${e.path ?? 'this path'}.`), unexpected: false };
      }
      case 405: {
        const allow = e.headers?.Allow ?? e.headers?.allow ?? 'POST';
        return { problem: new ApiProblem('METHOD_NOT_ALLOWED', `This path accepts ${allow} only.`, { headers: { Allow: allow } }), unexpected: false };
      }
      case 415:
        return { problem: new ApiProblem('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json.'), unexpected: false };
      case 400: {
        const errors = toFieldErrors(e.errors);
        if (errors.some((f) => f.field.toLowerCase() === 'idempotency-key' || f.field.toLowerCase() === 'headers.idempotency-key')) {
          return {
            problem: new ApiProblem('IDEMPOTENCY_KEY_INVALID', 'Idempotency-Key must be 1 to 128 printable ASCII characters.', {
              errors: [{ field: 'Idempotency-Key', code: 'invalid' }],
            }),
            unexpected: false,
          };
        }
        const detail = errors.map((f) => `${f.field}: ${f.message ?? f.code}`).join('; ') || 'The request does not match the contract.';
        return { problem: new ApiProblem('VALIDATION_FAILED', detail, { errors }), unexpected: false };
      }
      default:
        if (e.status === 500 && /response/i.test(String(e.message))) break;
    }
  }
  return { problem: new ApiProblem('INTERNAL_ERROR', 'An unexpected error occurred. Quote the correlationId when reporting it.'), unexpected: true };
}

/** A body-parser failure of the client's body (http-errors: a 4xx it exposes), not a validator's (which lists `errors`). */
function isUnreadableBody(e: Record<string, any> | undefined): boolean {
  return typeof e?.status === 'number' && e.status >= 400 && e.status < 500 && e.expose === true && !Array.isArray(e.errors) && !(e instanceof ApiProblem);
}

/**
 * `databaseProblem` is the storage boundary's classification of driver errors (a safety net for a
 * database trip that escaped the boundary: 502/400/504 instead of 500).
 */
export function errorHandler(logger: Logger, databaseProblem?: (err: unknown) => ApiProblem | undefined): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const mapped = err instanceof ApiProblem ? undefined : databaseProblem?.(err);
    const { problem, unexpected } = mapped ? { problem: mapped, unexpected: false } : toProblem(err);
    if (mapped) logger.warn({ err, correlationId: res.locals.correlationId, route: req.originalUrl, code: mapped.code }, 'database failure outside the boundary');
    if (unexpected) {
      // The full record goes to the log only; the body is redacted.
      logger.error({ err, correlationId: res.locals.correlationId, route: req.originalUrl }, 'unexpected error');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    sendProblem(res, problem, req.originalUrl.split('?')[0] ?? req.originalUrl);
  };
}

export const notFound: RequestHandler = (req, _res, next) => {
  next(new ApiProblem('ROUTE_NOT_FOUND', `No operation at ${req.method} ${req.path}.`));
};
