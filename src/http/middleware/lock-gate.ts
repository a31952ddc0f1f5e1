import type { Request, RequestHandler, Response } from 'express';
import type { MaintenanceLock } from '../../storage/lock-store';
import { UNMATCHED } from '../operations';

/** Paths under /api/v3 (and /api/v2) that keep answering while locked (they do not touch the books). */
const OPEN_WHILE_LOCKED = new Set(['/utility/ping', '/utility/lock', '/utility/un-lock']);

/**
 * Exactly as the documents spell the paths: the routes match no other spelling (decision 0445; a
 * v2 path in another case was made canonical before the guards). A request that resolved to no
 * operation passes too: it touches nothing and its answer is the 404 (or 405) of any unknown path,
 * locked or not (no handler runs for it: src/http/contract-validator.ts, operationDisagreement).
 */
function openWhileLocked(req: Request, res: Response): boolean {
  return res.locals.operationId === UNMATCHED || OPEN_WHILE_LOCKED.has(req.path);
}

/** Lock and un-lock (v3 and v2 share the paths under their base): they authenticate outside the pool's queue. */
export function isLockOperation(path: string): boolean {
  const p = path.replace(/\/+$/, '');
  return p === '/utility/lock' || p === '/utility/un-lock';
}

/**
 * While the database is locked for maintenance, every read and write under /api/v3 answers
 * 423 MAINTENANCE_LOCK with Retry-After 60 and the holder in `lockUser`. Reads memory only:
 * the state is loaded from `mntlck` and kept current by MaintenanceLock (the lock's relay and
 * re-reads), never per request.
 * Mounted on the /api/v3 router, after authentication and rate limiting, before the body is read.
 */
export function lockGate(lock: MaintenanceLock): RequestHandler {
  return (req, res, next) => {
    const decide = () => {
      if (!lock.isLocked() || openWhileLocked(req, res)) return next();
      next(lock.lockedProblem());
    };
    // Already loaded: decide synchronously (no promise hop on the hot path).
    if (lock.loaded) return decide();
    lock.ensureLoaded().then(decide, next);
  };
}

/**
 * The gate again once the body has been read, last of the guards: a lock applied while the body
 * was arriving answers 423 here. A request admitted is counted until its response is sent: a lock
 * destroys the pool (and answers) only after every admitted request has ended
 * (storage/pool-drain.ts), so no request admitted before a lock is answered after it.
 */
export function lockSession(lock: MaintenanceLock): RequestHandler {
  return (req, res, next) => {
    if (openWhileLocked(req, res)) return next();
    if (lock.isLocked()) return next(lock.lockedProblem());
    lock.drain.enter(res);
    next();
  };
}
