/**
 * Retry schedule of a failed delivery (docs/decisions/0027-change-events.md; the contract's
 * webhooks description carries the same table). Delay after attempt n fails, before attempt n+1:
 * 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 20 h: ten attempts over 71 h 35 min, each
 * delay with +/-10 % jitter, and never later than three days after the window started (creation
 * or resend). A Retry-After longer than the scheduled delay is honoured inside the window.
 */
export const RETRY_DELAYS_MS: readonly number[] = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 72_000_000];
export const RETRY_WINDOW_MS = 3 * 24 * 3_600_000;
export const JITTER = 0.1;

/** The webhook delivery log is kept 30 days (the spec); the event feed's log as long. */
export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 3_600_000;

/**
 * When the next attempt should be made after attempt `windowAttempt` of the current window
 * (1-based: the first attempt after creation or a resend is 1) failed at `at`, or null when the
 * delivery has failed for good. `random` in [0, 1) (injectable for tests).
 */
export function nextAttemptAt(windowAttempt: number, at: Date, windowStart: Date, retryAfterMs: number | undefined, random: () => number = Math.random): Date | null {
  const base = RETRY_DELAYS_MS[windowAttempt - 1];
  if (base === undefined) return null;
  const jittered = base * (1 + JITTER * (2 * random() - 1));
  const delay = Math.max(jittered, retryAfterMs ?? 0);
  const end = windowStart.getTime() + RETRY_WINDOW_MS;
  if (at.getTime() >= end) return null;
  return new Date(Math.min(at.getTime() + delay, end));
}

/** Retry-After as milliseconds (seconds or an HTTP date), undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, at: Date): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - at.getTime());
}
