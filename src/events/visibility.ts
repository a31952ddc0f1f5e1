import type { ApiKeyRecord } from '../storage/api-keys';
import type { EventKind } from './kinds';

/**
 * The spec's Events rule 4 in one place: an event carries only what the endpoint's owner (the
 * API key that set it up) may read. Today every active key reads every published document
 * field, so the record passes whole; key scopes (read, pii, ...) plug in here. `undefined`
 * means the owner may read nothing: the endpoint is paused (`ownerMayReceive`).
 */
export function visibleRecord(owner: ApiKeyRecord | undefined, _kind: EventKind, record: Record<string, unknown>): Record<string, unknown> | undefined {
  if (!ownerMayReceive(owner)) return undefined;
  return record;
}

/** A disabled or revoked (or deleted) owner key receives nothing; its endpoints are paused. */
export function ownerMayReceive(owner: ApiKeyRecord | undefined): owner is ApiKeyRecord {
  return owner !== undefined && owner.state === 'active';
}
