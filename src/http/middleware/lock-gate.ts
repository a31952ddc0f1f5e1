import type { RequestHandler } from 'express';
import type { MaintenanceLock } from '../../storage/lock-store';

/** Paths under /api/v3 that keep answering while locked (they do not touch the books). */
const OPEN_WHILE_LOCKED = new Set(['/utility/ping', '/utility/lock', '/utility/un-lock']);

/**
 * While the database is locked for maintenance, every read and write under /api/v3 answers
 * 423 MAINTENANCE_LOCK with Retry-After 60 and the holder in `lockUser`. Reads memory only:
 * the state is loaded from `mntlck` and kept current by MaintenanceLock's re-reads (locks taken
 * through other processes), never per request.
 * Mounted on the /api/v3 router, after authentication and rate limiting.
 */
export function lockGate(lock: MaintenanceLock): RequestHandler {
  return (req, _res, next) => {
    const decide = () => {
      if (!lock.isLocked()) return next();
      const path = req.path.replace(/\/+$/, '') || '/';
      if (OPEN_WHILE_LOCKED.has(path)) return next();
      next(lock.lockedProblem());
    };
    // Already loaded: decide synchronously (no promise hop on the hot path).
    if (lock.loaded) return decide();
    lock.ensureLoaded().then(decide, next);
  };
}
