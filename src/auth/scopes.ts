/**
 * Scoped API keys, beyond the spec and off by default (docs/decisions/0031-integrators-toolkit-scoped-keys-declared-statuses-typed-client.md).
 *
 * A key created without scopes is the spec's key: it may call every operation and reads employee
 * PII. A key created with scopes may call only the operations whose scope it holds, and reads
 * employee PII only with `pii`. This file is the one place that says which scope an operation
 * needs: a new operation (for example the webhook routes) is covered by the first rule its path
 * matches, so it gets a scope without anyone remembering to add one.
 */
import { OPERATIONS } from '../../generated/operations';
import type { EntityDef, OperationInfo } from '../catalog/types';
import { withoutPii } from '../catalog/pii';

export const SCOPES = ['read', 'write', 'lock', 'events:manage', 'pii', 'audit'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * Path rules, first match wins. `null`: any valid key (ping measures reachability only).
 * The last rule makes every other operation (the writes) need `write`.
 */
const RULES: ReadonlyArray<readonly [RegExp, Scope | null]> = [
  [/^\/utility\/ping$/, null],
  [/^\/utility\/(lock|un-lock)$/, 'lock'],
  // Before the read rule: /webhook-endpoints/query lists endpoints, it is not an entity's read.
  [/^\/webhook-(endpoints|deliveries)(\/|$)/, 'events:manage'],
  // Before the read rule too: the audit log is not the books (and needs an admin key besides).
  [/^\/audit-log\/query$/, 'audit'],
  // Feed subscriptions are managed like webhook endpoints; reading the feed (/events/query) is a read.
  [/^\/event-feeds(\/|$)/, 'events:manage'],
  [/^\/[^/]+\/(query|match)$/, 'read'],
  // The frozen v2 surface names the verb first (/query/part, /match/vendor, /post/ledger-transaction):
  // v2 is no back door, so its reads need `read` and its posts fall to `write` below.
  [/^\/(query|match)\/[^/]+$/, 'read'],
  [/./, 'write'],
];

export function scopeForPath(path: string): Scope | null {
  for (const [pattern, scope] of RULES) if (pattern.test(path)) return scope;
  return 'write';
}

function buildTable(operations: readonly OperationInfo[]): Map<string, Scope | null> {
  return new Map(operations.map((op) => [op.operationId, scopeForPath(op.path)]));
}

/** operationId -> the scope it needs (null: none), for every operation of openapi.yaml. */
export const OPERATION_SCOPES: ReadonlyMap<string, Scope | null> = buildTable(OPERATIONS);

/** Parses `read,write` or `read write`; throws naming the first unknown scope. */
export function parseScopes(text: string): Scope[] {
  const names = text.split(/[\s,]+/).filter(Boolean);
  const out: Scope[] = [];
  for (const name of names) {
    if (!(SCOPES as readonly string[]).includes(name)) throw new Error(`unknown scope "${name}" (scopes: ${SCOPES.join(', ')})`);
    if (!out.includes(name as Scope)) out.push(name as Scope);
  }
  return out;
}

/** The entity as a key with these scopes sees it: without employee PII unless it holds `pii` (v3 and v2 alike). */
export function entityAsSeenBy(entity: EntityDef, scopes: readonly Scope[] | null | undefined): EntityDef {
  return holdsScope(scopes, 'pii') ? entity : withoutPii(entity);
}

/** `scopes` undefined or null: an unscoped key, which holds every scope (the spec's behaviour). */
export function holdsScope(scopes: readonly Scope[] | null | undefined, scope: Scope): boolean {
  return scopes == null || scopes.includes(scope);
}
