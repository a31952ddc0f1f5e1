import { ApiProblem } from '../errors/problem';
import { LOCK_RETRY_AFTER_SECONDS } from './pool-drain';

/**
 * The problems the maintenance lock answers (spec, States and transitions), in one place: the
 * gate's 423 while locked (also what a request gets when the pool closes under it), 409 when
 * someone else holds the lock, and 504 when a change is recorded but not yet confirmed by every
 * live process (docs/decisions/0200-lock-takes-effect-before-it-answers.md).
 */
export interface HolderNamed {
  userName: string;
  lockedAt: string;
}

/** 423 MAINTENANCE_LOCK, naming the holder when known, with Retry-After. */
export function lockedProblem(holder: HolderNamed | null): ApiProblem {
  return new ApiProblem(
    'MAINTENANCE_LOCK',
    holder ? `The accounting database is locked for maintenance by ${holder.userName} since ${holder.lockedAt}.` : 'The accounting database is locked for maintenance.',
    { headers: { 'Retry-After': String(LOCK_RETRY_AFTER_SECONDS) }, extensions: holder ? { lockUser: holder.userName, lockedAt: holder.lockedAt } : {} },
  );
}

/** 409 LOCK_HELD: a lock or un-lock by someone other than the holder (un-lock: without override). */
export function lockHeldProblem(holder: HolderNamed, action: 'lock' | 'un-lock'): ApiProblem {
  return new ApiProblem(
    'LOCK_HELD',
    action === 'lock'
      ? `The database is already locked for maintenance by ${holder.userName}.`
      : `The maintenance lock is held by ${holder.userName}; only the holder may release it, or send override: true.`,
    { extensions: { lockUser: holder.userName } },
  );
}

/** 504 LOCK_NOT_CONFIRMED: the change is recorded; `waiting` processes did not confirm it in time. */
export function notConfirmedProblem(lockedBy: HolderNamed | null, waiting: number, ackTimeoutMs: number): ApiProblem {
  const change = lockedBy ? 'The lock is recorded' : 'The release is recorded';
  return new ApiProblem(
    'LOCK_NOT_CONFIRMED',
    `${change}, but ${waiting} live process(es) of the service did not confirm it within ${ackTimeoutMs} ms. Send the same request again: it waits again and changes nothing else.`,
    lockedBy ? { extensions: { lockUser: lockedBy.userName } } : {},
  );
}
