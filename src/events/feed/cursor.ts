import { createHash } from 'node:crypto';

/**
 * The feed cursor (`page.nextCursor`, `after`): opaque to the consumer, stable (the same position
 * of the same key is always the same text), and bound to the API key that was given it, because
 * what a page holds depends on the key's scopes. It carries a position in the event log and a
 * tag of the key id (not the id itself); forging one gains nothing a key cannot read anyway.
 *
 *   base64url("v1." + keyTag + "." + position)
 */
const VERSION = 'v1';
const SHAPE = /^v1\.([0-9a-f]{16})\.(0|[1-9][0-9]{0,15})$/;
/** Longest cursor text accepted (the contract's maxLength). */
export const MAX_CURSOR_LENGTH = 200;

function keyTag(keyId: string): string {
  return createHash('sha256').update(`event-feed-cursor|${keyId.toLowerCase()}`).digest('hex').slice(0, 16);
}

export function encodeCursor(keyId: string, position: number): string {
  return Buffer.from(`${VERSION}.${keyTag(keyId)}.${position}`, 'utf8').toString('base64url');
}

export type DecodedCursor =
  | { kind: 'position'; position: number }
  /** A well-formed cursor given to another key. */
  | { kind: 'other-key' }
  /** Not a cursor this service issued. */
  | { kind: 'unknown' };

export function decodeCursor(keyId: string, text: string): DecodedCursor {
  if (text.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(text)) return { kind: 'unknown' };
  const m = SHAPE.exec(Buffer.from(text, 'base64url').toString('utf8'));
  if (!m) return { kind: 'unknown' };
  const position = Number(m[2]);
  if (!Number.isSafeInteger(position)) return { kind: 'unknown' };
  if (m[1] !== keyTag(keyId)) return { kind: 'other-key' };
  return { kind: 'position', position };
}
