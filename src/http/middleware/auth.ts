import type { RequestHandler } from 'express';
import { ApiProblem } from '../../errors/problem';
import type { ApiKeyRecord, ApiKeyRepository } from '../../storage/api-keys';
import type { Boundary } from '../../storage/boundary';
import { holdsScope, OPERATION_SCOPES, scopeForPath } from '../../auth/scopes';
import { isLockOperation } from './lock-gate';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Same detail for missing, malformed and unknown keys: the answer must not tell them apart. */
const UNAUTHORIZED_DETAIL = 'A valid x-api-key header is required.';
export const SERVICE_OFF_RETRY_AFTER_SECONDS = 300;

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      apiKey?: ApiKeyRecord;
    }
  }
}

/**
 * The API-key lookup runs before any handler; its failures are classified by the on-premise
 * boundary: the database down answers 502 DATABASE_UNAVAILABLE (not 500).
 */
export function authenticate(keys: ApiKeyRepository, boundary: Boundary): RequestHandler {
  return async (req, res, next) => {
    try {
      const raw = req.headers['x-api-key'];
      const value = Array.isArray(raw) ? raw[0] : raw;
      if (!value || !UUID.test(value.trim())) throw new ApiProblem('UNAUTHORIZED', UNAUTHORIZED_DETAIL);
      // Not under the deadline (it waits for a connection like before: on SQLite a retry queues
      // behind the late posting), but its driver errors are classified: 502, never 500.
      const key = await keys.findForRequest(value, { outsidePool: isLockOperation(req.path) }).catch((err: unknown) => {
        throw boundary.mapError(err);
      });
      if (!key || key.state === 'revoked') throw new ApiProblem('UNAUTHORIZED', UNAUTHORIZED_DETAIL);
      if (key.state === 'disabled') {
        const reason = key.reason ?? 'The service is switched off for this key.';
        throw new ApiProblem('SERVICE_DISABLED', `The service is switched off for this key: ${reason}`, {
          headers: { 'Retry-After': String(SERVICE_OFF_RETRY_AFTER_SECONDS) },
          extensions: { reason },
        });
      }
      res.locals.apiKey = key;
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** Operations reserved to admin keys (maintenance lock). */
export const requireAdmin: RequestHandler = (_req, res, next) => {
  if (res.locals.apiKey?.role !== 'admin') {
    next(new ApiProblem('FORBIDDEN', 'This operation needs an admin API key.'));
    return;
  }
  next();
};

/**
 * Scoped keys (src/auth/scopes.ts): 403 SCOPE_MISSING when the key was created with scopes that
 * do not include the one the operation needs. Unscoped keys pass (the spec's behaviour); requests
 * that match no operation pass on to their 404/405.
 */
/** Where the frozen v2 surface is mounted (src/v2/routes.ts V2_BASE; not imported: the v2 wing imports this file). */
const V2_PREFIX = '/api/v2';

export const requireScope: RequestHandler = (req, res, next) => {
  const key = res.locals.apiKey;
  // v3 operations by operationId; the v2 surface (other operationIds) by its path under /api/v2.
  const opId = String(res.locals.operationId);
  const needed = OPERATION_SCOPES.has(opId) ? OPERATION_SCOPES.get(opId) : req.baseUrl === V2_PREFIX ? scopeForPath(req.path) : undefined;
  if (!key || !needed || holdsScope(key.scopes, needed)) {
    next();
    return;
  }
  next(
    new ApiProblem('SCOPE_MISSING', `This API key was created without the ${needed} scope, which this operation needs.`, {
      extensions: { requiredScope: needed },
    }),
  );
};
