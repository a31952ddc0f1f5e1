import express, { type RequestHandler } from 'express';
import { ApiProblem } from '../../errors/problem';
import { filterDepthProblem } from '../../engines/query/filters';

function hasBody(headers: Record<string, unknown>): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * JSON bodies only: a body with another (or no) content type is 415, one over the limit 413,
 * unparseable JSON 400. An absent body (no Transfer-Encoding, Content-Length absent or 0) is the
 * empty JSON object on every operation, whatever Content-Type says: ping needs none, and an
 * operation that requires fields answers 400 naming them, as for `{}` (spec, Errors: a missing
 * required field is 400), not 415 (decision 0446).
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  const parse = express.json({ limit: limitBytes, type: () => true, strict: false });
  const requireJson: RequestHandler = (req, _res, next) => {
    if (!hasBody(req.headers)) {
      // The contract validator judges a body by its Content-Type: this one is `{}`, JSON.
      req.headers['content-type'] = 'application/json';
      req.body = {};
      return next();
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json' && !/^application\/[a-z0-9.+-]*\+json$/.test(type)) {
      return next(
        new ApiProblem('UNSUPPORTED_MEDIA_TYPE', `Content-Type must be application/json (got ${type === '' ? 'none' : `"${type}"`}).`),
      );
    }
    next();
  };
  return [requireJson, parse];
}

/**
 * Bounds and/or nesting before the schema validator runs (the rule: filterDepthProblem,
 * src/engines/query/filters.ts). `field` is `filter` on /api/v2.
 */
export function filterDepthGuard(maxDepth: number, field: 'filters' | 'filter' = 'filters'): RequestHandler {
  return (req, _res, next) => {
    const body = req.body as Record<string, unknown> | undefined;
    if (!body || typeof body !== 'object' || body[field] === undefined) return next();
    next(filterDepthProblem(body[field], maxDepth, field));
  };
}
