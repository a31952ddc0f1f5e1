import type { Response } from 'express';
import { ApiProblem } from '../errors/problem';
import { requestKey } from './middleware/auth';
import type { AuditAction, AuditActor, AuditLog, AuditOutcome } from '../audit';

/**
 * The audit log seen from a route: who is the calling API key (its name and id) and the request's
 * correlation id; the outcome of a failure is its problem code, `refused` for a 4xx (not allowed,
 * not the holder) and `failed` for a 5xx. A route records one line per outcome:
 *
 *   await audited(services.audit, res).succeeded('lock', userName, { ... });
 *   await audited(services.audit, res).refused('lock', userName, problem);
 */
export function requestActor(res: Response): AuditActor & { keyId: string } {
  const key = requestKey(res);
  return { type: 'api-key', name: key.name, keyId: key.id, correlationId: typeof res.locals.correlationId === 'string' ? res.locals.correlationId : null };
}

export function outcomeOf(err: unknown): { outcome: Exclude<AuditOutcome, 'succeeded'>; outcomeCode: string } {
  if (err instanceof ApiProblem) return { outcome: err.status < 500 ? 'refused' : 'failed', outcomeCode: err.code };
  return { outcome: 'failed', outcomeCode: 'INTERNAL_ERROR' };
}

export function audited(log: AuditLog, res: Response) {
  // Behind authentication there is always a key; without one nothing is recorded (and nothing thrown from a catch).
  const record = (action: AuditAction, target: string | null, outcome: { outcome: AuditOutcome; outcomeCode?: string }, detail?: Record<string, unknown>): Promise<void> =>
    res.locals.apiKey ? log.record(requestActor(res), { action, target, ...outcome, ...(detail ? { detail } : {}) }) : Promise.resolve();
  return {
    succeeded: (action: AuditAction, target: string | null, detail?: Record<string, unknown>) => record(action, target, { outcome: 'succeeded' }, detail),
    refused: (action: AuditAction, target: string | null, err: unknown, detail?: Record<string, unknown>) => record(action, target, outcomeOf(err), detail),
  };
}
