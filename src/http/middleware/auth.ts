import type { RequestHandler } from 'express';
import { ApiProblem } from '../../errors/problem';
import type { ApiKeyRecord, ApiKeyRepository } from '../../storage/api-keys';
import type { Boundary } from '../../storage/boundary';
import { holdsScope, type Scope } from '../../auth/scopes';
import { throttleAddress, type AuthFailureThrottle } from './auth-throttle';
import { isLockOperation } from './lock-gate';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Same detail for missing, malformed and unknown keys: the answer must not tell them apart. */
const UNAUTHORIZED_DETAIL = 'A valid x-api-key header is required.';
/** The challenge every 401 carries (RFC 9110 section 11.6.1: a 401 MUST send WWW-Authenticate): the key goes in the x-api-key header. */
export const API_KEY_CHALLENGE = 'ApiKey header="x-api-key"';

/** 401 UNAUTHORIZED, with its challenge. */
export function unauthorized(): ApiProblem {
  return new ApiProblem('UNAUTHORIZED', UNAUTHORIZED_DETAIL, { headers: { 'WWW-Authenticate': API_KEY_CHALLENGE } });
}

/** The request's API key, set by `authenticate`; a handler reached without one answers 401. */
export function requestKey(res: { locals: { apiKey?: ApiKeyRecord } }): ApiKeyRecord {
  const key = res.locals.apiKey;
  if (!key) throw unauthorized();
  return key;
}
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
 *
 * With a throttle (AUTH_FAILURES_PER_MINUTE, src/http/middleware/auth-throttle.ts): every key
 * refused here (malformed, unknown, revoked: 401; disabled: 503) counts against the client
 * address (req.ip: TRUST_PROXY says whether X-Forwarded-For is believed); an address over the
 * bound is answered 429 AUTH_THROTTLED before any lookup, unless its key is one of the active
 * keys held in memory (ApiKeyRepository.isKnownActive), so valid keys from that address go on
 * working. A request without a key is not a guess and is not counted (but is refused with the rest).
 */
export function authenticate(keys: ApiKeyRepository, boundary: Boundary, throttle?: AuthFailureThrottle): RequestHandler {
  return async (req, res, next) => {
    try {
      const raw = req.headers['x-api-key'];
      const value = Array.isArray(raw) ? raw[0] : raw;
      const wellFormed = value !== undefined && UUID.test(value.trim());
      const watched = throttle?.enabled === true;
      // The client address only when it can matter (an address has failed, or this request fails): req.ip parses X-Forwarded-For.
      let address = watched && throttle!.size > 0 ? throttleAddress(req.ip) : undefined;
      if (address !== undefined) {
        const retryAfterSeconds = throttle!.retryAfterSeconds(address);
        if (retryAfterSeconds > 0 && !(wellFormed && (await keys.isKnownActive(value!).catch((err: unknown) => Promise.reject(boundary.mapError(err)))))) {
          throw new ApiProblem('AUTH_THROTTLED', `Too many failed authentications from this address; retry after ${retryAfterSeconds} s with a valid x-api-key.`, {
            headers: { 'Retry-After': String(retryAfterSeconds) },
          });
        }
      }
      // Not under the deadline (it waits for a connection like before: on SQLite a retry queues
      // behind the late posting), but its driver errors are classified: 502, never 500.
      const key = wellFormed
        ? await keys.findForRequest(value!, { outsidePool: isLockOperation(req.path) }).catch((err: unknown) => {
            throw boundary.mapError(err);
          })
        : undefined;
      const refusal = refusalOf(key);
      if (refusal) {
        if (watched && value !== undefined) throttle!.fail((address ??= throttleAddress(req.ip)));
        throw refusal;
      }
      res.locals.apiKey = key;
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** Why a request with this key (undefined: none, malformed or unknown) may not go on; undefined for an active key. */
function refusalOf(key: ApiKeyRecord | undefined): ApiProblem | undefined {
  if (!key || key.state === 'revoked') return unauthorized();
  if (key.state === 'disabled') {
    const reason = key.reason ?? 'The service is switched off for this key.';
    return new ApiProblem('SERVICE_DISABLED', `The service is switched off for this key: ${reason}`, {
      headers: { 'Retry-After': String(SERVICE_OFF_RETRY_AFTER_SECONDS) },
      extensions: { reason },
    });
  }
  return undefined;
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
 *
 * By the operation the request resolved to (res.locals.operationId, src/http/operations.ts), never
 * by the request's path: `scopes` maps the surface's operationIds to their scope (v3:
 * OPERATION_SCOPES; v2: its own table). The routes answer only the paths that resolve to those
 * same operations (decision 0445), so a path in another case or with a trailing slash cannot reach
 * an operation the check did not see.
 */
export function requireScope(scopes: ReadonlyMap<string, Scope | null>): RequestHandler {
  return (_req, res, next) => {
    const key = res.locals.apiKey;
    const needed = scopes.get(String(res.locals.operationId));
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
}
