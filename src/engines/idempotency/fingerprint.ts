import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted (recursively), no whitespace. Two serialisations of the
 * same payload (other key order, other whitespace, `1.0` vs `1`) give the same text, because
 * the body is compared after JSON.parse, not as bytes.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** Fingerprint of a write: SHA-256 over the route and the canonical body (hex, 64 characters). */
export function requestFingerprint(route: string, body: unknown): string {
  return createHash('sha256').update(route).update('\n').update(canonicalJson(body ?? null)).digest('hex');
}
