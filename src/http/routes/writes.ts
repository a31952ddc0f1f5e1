import { Router, type Request, type Response } from 'express';
import { apiRouter } from '../base';
import type { Services } from '../../services';
import { ApiProblem } from '../../errors/problem';
import { requestKey } from '../middleware/auth';
import type { WriteDefinition, WriteRequest, WriteResponse } from '../../engines/posting/runner';
import { WRITES } from '../../engines/posting/writes';

/**
 * The write endpoints. Each is a WriteDefinition run by the one WriteRunner (services.writes),
 * which applies the rules every write shares; this file only adapts HTTP to it.
 */

/**
 * `?dryRun=true`. Express 5 computes `req.query` afresh on every access, so the validator's type
 * coercion does not stick: read the raw value here. The contract validator has already refused
 * anything that is not a boolean.
 */
export function isDryRun(req: Request): boolean {
  const raw = (req.query as Record<string, unknown>).dryRun;
  const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  return value === true || (typeof value === 'string' && value.trim().toLowerCase() === 'true');
}

function idempotencyKey(req: Request): string | undefined {
  const raw = req.headers['idempotency-key'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined ? undefined : value;
}

/**
 * Spec, Writes rule 2: Idempotency-Status says what happened to the write. It is set here only, from
 * the key protocol's answer, and absent where that answer has none; every answer decided before the
 * write ran (400 from the contract or body checks, 401, 403, 413, 415, 423, 429, 409
 * IDEMPOTENCY_KEY_REUSED / IN_FLIGHT) is rendered by the error handler without it
 * (docs/decisions/0221-idempotency-status-only-what-happened.md).
 */
export function sendWriteResponse(res: Response, out: WriteResponse): void {
  if (out.idempotencyStatus !== undefined) res.setHeader('Idempotency-Status', out.idempotencyStatus);
  for (const [name, value] of Object.entries(out.headers)) res.setHeader(name, value);
  res.status(out.status);
  if (out.status < 400) {
    res.json(out.body);
    return;
  }
  const code = out.headers['X-Error-Code'];
  if (code) res.locals.errorCode = code;
  res.type('application/problem+json');
  res.send(JSON.stringify(out.body));
}

/**
 * The write runner's request for an HTTP request: one builder for v3 and for the v2 adapter (which
 * passes no Idempotency-Key and no dry run).
 */
export function writeRequestOf(req: Request, res: Response, route: string, options: Pick<WriteRequest, 'idempotencyKey' | 'dryRun'>): WriteRequest {
  const apiKey = requestKey(res);
  return {
    route,
    instance: req.originalUrl.split('?')[0] ?? req.originalUrl,
    correlationId: String(res.locals.correlationId ?? ''),
    apiKeyId: apiKey.id,
    apiKeyName: apiKey.name,
    idempotencyKey: options.idempotencyKey,
    dryRun: options.dryRun,
    body: req.body,
  };
}

export function writeHandler<I, A, R>(services: Services, def: WriteDefinition<I, A, R>) {
  return async (req: Request, res: Response, next: (err?: unknown) => void) => {
    try {
      const out = await services.writes.run(def, writeRequestOf(req, res, def.route, { idempotencyKey: idempotencyKey(req), dryRun: isDryRun(req) }));
      sendWriteResponse(res, out);
    } catch (err) {
      next(err);
    }
  };
}

export function writeRoutes(services: Services): Router {
  const router = apiRouter();
  for (const { route, definition } of WRITES) {
    if (definition) {
      router.post(route, writeHandler(services, definition));
    } else {
      router.post(route, (_req, _res, next) => next(new ApiProblem('NOT_IMPLEMENTED', `POST ${route} is in the contract but its posting path is not wired up in this build.`)));
    }
  }
  return router;
}
