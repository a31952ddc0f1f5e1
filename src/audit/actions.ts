/**
 * What the audit log records (docs/decisions/0262-one-audit-log.md): every administrative action
 * and the kind of thing it acts on. One line per action: a new administrative operation (event-feed
 * changes, say) adds its line here and one `record` call where it happens.
 */
export const AUDIT_ACTIONS = {
  // API keys: the keys CLI (and the admin key a first start creates)
  'api-key.created': 'api-key',
  'api-key.disabled': 'api-key',
  'api-key.enabled': 'api-key',
  'api-key.revoked': 'api-key',
  // The maintenance lock: POST /utility/lock and /utility/un-lock (override included)
  lock: 'maintenance-lock',
  'un-lock': 'maintenance-lock',
  // Webhook endpoints (spec Events rule 9: every subscription change is logged)
  'webhook-endpoint.created': 'webhook-endpoint',
  'webhook-endpoint.updated': 'webhook-endpoint',
  'webhook-endpoint.deleted': 'webhook-endpoint',
  'webhook-endpoint.secret-rotated': 'webhook-endpoint',
  'webhook-endpoint.test-sent': 'webhook-endpoint',
  'webhook-endpoint.delivery-resent': 'webhook-endpoint',
  'webhook-endpoint.failed-deliveries-resent': 'webhook-endpoint',
  // ... and what the service does to them by itself
  'webhook-endpoint.paused': 'webhook-endpoint',
  'webhook-endpoint.disabled': 'webhook-endpoint',
  // Event feeds (the pull feed's subscriptions, managed like webhook endpoints)
  'event-feed.created': 'event-feed',
  'event-feed.updated': 'event-feed',
  'event-feed.deleted': 'event-feed',
  // ... and paused by the service (owner key switched off, or unread for 30 days)
  'event-feed.paused': 'event-feed',
} as const;

export type AuditAction = keyof typeof AUDIT_ACTIONS;
type AuditTargetType = (typeof AUDIT_ACTIONS)[AuditAction];

/**
 * Who acted: an API key (its name and id), the operator at the keys CLI (the operating-system
 * user), or the service itself (a first start's key, an endpoint paused because its owner's key was
 * disabled). The correlation id is the request's (X-Correlation-Id), or one per CLI run.
 */
export type ActorType = 'api-key' | 'operator' | 'service';

export interface AuditActor {
  type: ActorType;
  name: string;
  keyId: string | null;
  correlationId: string | null;
}

export const SERVICE_ACTOR: AuditActor = { type: 'service', name: 'service', keyId: null, correlationId: null };

/** succeeded, or refused (4xx: the request was wrong or not allowed) or failed (5xx), with the problem code. */
export type AuditOutcome = 'succeeded' | 'refused' | 'failed';

export interface AuditEntry {
  action: AuditAction;
  /** The id of the key or endpoint; the lock's userName. Null: no single target (resend-failed of every endpoint). */
  target: string | null;
  outcome: AuditOutcome;
  outcomeCode?: string | null;
  /** What else the action was given (a reason, override, the url): never a secret. */
  detail?: Record<string, unknown>;
}
