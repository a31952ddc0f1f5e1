import { isIPv4, isIPv6 } from 'node:net';

/**
 * The failed-authentication throttle (OWASP API2): per client address, a window of one minute
 * opens at its first failed authentication (a key that is malformed, unknown, revoked or
 * disabled); once the address has failed `failuresPerMinute` times in it, the address is refused
 * with 429 AUTH_THROTTLED until the window ends, without a key lookup, except for requests that
 * carry a key known to be active (src/http/middleware/auth.ts). Then the count starts again.
 *
 * State is this process's memory (docs/decisions/0250-auth-failure-throttle.md): a shared store
 * would cost a database write per failed guess, the very cost the throttle removes. Memory is
 * bounded: at most `maxAddresses` windows, the least recently failing dropped first.
 */
export interface AuthThrottleOptions {
  /** Failures one address may have per window; 0 switches the throttle off. */
  failuresPerMinute: number;
  /** Default one minute. */
  windowMs?: number;
  /** Bound on the addresses tracked at once. */
  maxAddresses?: number;
  now?: () => number;
}

interface Window {
  startedMs: number;
  failures: number;
}

export const AUTH_THROTTLE_WINDOW_MS = 60_000;
const MAX_ADDRESSES = 100_000;

export class AuthFailureThrottle {
  private readonly windows = new Map<string, Window>();
  private readonly windowMs: number;
  private readonly maxAddresses: number;
  private readonly now: () => number;

  constructor(private readonly options: AuthThrottleOptions) {
    this.windowMs = options.windowMs ?? AUTH_THROTTLE_WINDOW_MS;
    this.maxAddresses = Math.max(1, options.maxAddresses ?? MAX_ADDRESSES);
    this.now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.options.failuresPerMinute > 0;
  }

  get failuresPerMinute(): number {
    return this.options.failuresPerMinute;
  }

  get size(): number {
    return this.windows.size;
  }

  /** Whole seconds until the address may try unknown keys again; 0 when it is not throttled. */
  retryAfterSeconds(address: string): number {
    const window = this.windows.get(address);
    if (!window) return 0;
    const leftMs = window.startedMs + this.windowMs - this.now();
    if (leftMs <= 0) {
      this.windows.delete(address);
      return 0;
    }
    return window.failures >= this.options.failuresPerMinute ? Math.max(1, Math.ceil(leftMs / 1000)) : 0;
  }

  /** One failed authentication from the address. */
  fail(address: string): void {
    const now = this.now();
    let window = this.windows.get(address);
    if (window) this.windows.delete(address); // re-inserted below: Map order is the LRU order
    if (!window || now - window.startedMs >= this.windowMs) {
      window = { startedMs: now, failures: 0 };
      while (this.windows.size >= this.maxAddresses) {
        const oldest = this.windows.keys().next().value;
        if (oldest === undefined) break;
        this.windows.delete(oldest);
      }
    }
    window.failures += 1;
    this.windows.set(address, window);
  }
}

/**
 * What the throttle counts by: the client address Express derived (req.ip, which follows
 * TRUST_PROXY), an IPv4-mapped IPv6 address as its IPv4 address, and an IPv6 address by its /64:
 * one host is usually given a whole /64, so counting single IPv6 addresses would let it rotate
 * through millions of them.
 */
export function throttleAddress(ip: string | undefined): string {
  if (!ip) return 'unknown';
  if (ip.startsWith('::ffff:') && isIPv4(ip.slice(7))) return ip.slice(7);
  if (!isIPv6(ip)) return ip;
  const bare = ip.split('%')[0]!;
  const [head = '', tail] = bare.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])));
  const left = groups(head);
  const full = tail === undefined ? left : [...left, ...Array(8 - left.length - groups(tail).length).fill('0'), ...groups(tail)];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
