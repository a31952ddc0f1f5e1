import type { ApiKeyRecord } from '../storage/api-keys';
import { holdsScope } from '../auth/scopes';
import { PII_FIELDS } from '../catalog/pii';
import { EVENT_KINDS, type EventKind } from './kinds';

/**
 * The spec's Events rule 4 in one place: an event carries only what the endpoint's owner (the
 * API key that set it up) may read, exactly as a query by that key would return it. An unscoped
 * key reads every published field (the spec's key). A scoped key without `read` reads no
 * document, so it receives no document event; without `pii` the employee personal fields are
 * removed (src/catalog/pii.ts; none of today's document kinds has any, the rule still holds if one
 * gains them). `undefined`: nothing to send to this owner.
 */
export function visibleRecord(owner: ApiKeyRecord | undefined, kind: EventKind, record: Record<string, unknown>): Record<string, unknown> | undefined {
  if (!ownerMayReceive(owner) || !holdsScope(owner.scopes, 'read')) return undefined;
  const withheld = withheldFrom(owner, kind);
  if (withheld.length === 0) return record;
  return Object.fromEntries(Object.entries(record).filter(([field]) => !withheld.includes(field)));
}

/** The names of a record's fields the owner may read (an event's `unreadableFields`: a withheld field is not named either). */
export function visibleFieldNames(owner: ApiKeyRecord, kind: EventKind, names: readonly string[]): string[] {
  const withheld = withheldFrom(owner, kind);
  return names.filter((name) => !withheld.includes(name));
}

function withheldFrom(owner: ApiKeyRecord, kind: EventKind): readonly string[] {
  return holdsScope(owner.scopes, 'pii') ? [] : (PII_FIELDS[EVENT_KINDS[kind].entity] ?? []);
}

/** A disabled or revoked (or deleted) owner key receives nothing; its endpoints are paused. */
export function ownerMayReceive(owner: ApiKeyRecord | undefined): owner is ApiKeyRecord {
  return owner !== undefined && owner.state === 'active';
}
