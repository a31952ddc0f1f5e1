import { Router, type RequestHandler, type Response } from 'express';
import { apiRouter } from '../base';
import type { Services } from '../../services';
import type { components } from '../../../generated/api-types';
import { requestKey, requireAdmin } from '../middleware/auth';
import { ApiProblem } from '../../errors/problem';
import { audited } from '../audit';

type PingResult = components['schemas']['PingResult'];
type LockResult = components['schemas']['LockResult'];
type UnlockResult = components['schemas']['UnlockResult'];

/**
 * The userName of a lock or un-lock names someone: at least one character that is not a space
 * (names are compared trimmed, so a blank holder could be released by any other blank name, and
 * 423 would name nobody). openapi.yaml says so for v3 (pattern); v2's frozen document cannot, and
 * its lock runs this same handler, so the rule is checked here for both.
 */
function userNameOf(body: unknown): string {
  const userName = (body as { userName?: unknown } | undefined)?.userName;
  if (typeof userName === 'string' && /\S/.test(userName)) return userName;
  throw new ApiProblem('VALIDATION_FAILED', 'userName: must have at least one character that is not a space', {
    errors: [{ field: 'userName', code: typeof userName === 'string' ? 'pattern' : 'required' }],
  });
}

export function utilityRoutes(services: Services): Router {
  const router = apiRouter();
  // The spec's guard for lock and un-lock is "any" valid key; LOCK_ADMIN_ONLY is an operator opt-in.
  const lockGuard: RequestHandler = (req, res, next) => (services.config.lockAdminOnly ? requireAdmin(req, res, next) : next());

  // While locked, ping answers 200 with the lock and does not touch the database (its pool is gone).
  const answeredLocked = (res: Response): boolean => {
    const holder = services.lock.current;
    if (!holder) return false;
    const body: PingResult = { status: 'locked', lockUser: holder.userName, engine: services.engine, serverTime: new Date().toISOString() };
    res.json(body);
    return true;
  };
  router.post('/utility/ping', async (_req, res, next) => {
    try {
      if (answeredLocked(res)) return;
      const started = process.hrtime.bigint();
      // Refused a connection because a lock is closing the pool meanwhile: the lock is the answer.
      const read = await services.boundary.ping().then(
        () => true,
        (err: unknown) => {
          if (services.lock.isLocked()) return false;
          throw err;
        },
      );
      if (!read && answeredLocked(res)) return;
      const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
      const body: PingResult = {
        status: 'ok',
        databaseRoundTripMs: Math.round(elapsedMs * 1000) / 1000,
        engine: services.engine,
        serverTime: new Date().toISOString(),
      };
      res.json(body);
    } catch (err) {
      next(err);
    }
  });

  router.post('/utility/lock', lockGuard, async (req, res, next) => {
    const userName = userNameOf(req.body);
    try {
      const apiKey = requestKey(res);
      const { holder, already } = await services.lock.lock(apiKey.id, userName);
      await audited(services.audit, res).succeeded('lock', userName, { already });
      const stats = services.lock.poolStats();
      const body: LockResult = {
        status: 'locked',
        lockUser: holder.userName,
        response: { lockedAt: holder.lockedAt, connectionsDropped: !stats.exists },
      };
      res.json(body);
    } catch (err) {
      // Driver errors arrive as their problem (src/storage/lock-store.ts).
      await audited(services.audit, res).refused('lock', String(req.body?.userName), err);
      next(err);
    }
  });

  router.post('/utility/un-lock', lockGuard, async (req, res, next) => {
    const userName = userNameOf(req.body);
    try {
      const apiKey = requestKey(res);
      const { override } = req.body as { override?: boolean };
      const { previous } = await services.lock.unlock(apiKey.id, userName, override === true);
      await audited(services.audit, res).succeeded('un-lock', userName, { override: override === true, previousHolder: previous?.userName ?? null });
      const body: UnlockResult = {
        status: 'unlocked',
        response: { unlockedAt: new Date().toISOString(), ...(previous ? { previousHolder: previous.userName } : {}) },
      };
      res.json(body);
    } catch (err) {
      // Driver errors arrive as their problem (src/storage/lock-store.ts).
      await audited(services.audit, res).refused('un-lock', String(req.body?.userName), err, { override: req.body?.override === true });
      next(err);
    }
  });

  return router;
}
