import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new endpoint secret in the Standard Webhooks form: `whsec_` + base64 of 24 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

/**
 * The three Standard Webhooks headers of one attempt. `webhook-id` is the event id (the same on
 * every retry); `webhook-timestamp` is this attempt's time; during a rotation the body is signed
 * with both secrets (space-separated `v1,...` signatures), so a subscriber holding either verifies.
 */
export function signedHeaders(eventId: string, at: Date, payload: string, secrets: readonly string[]): Record<string, string> {
  const signatures = secrets.map((s) => new Webhook(s).sign(eventId, at, payload));
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
