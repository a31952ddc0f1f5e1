import type { RequestHandler } from 'express';
import { ApiProblem } from '../../errors/problem';

export interface RateLimitOptions {
  /** Sustained requests per minute per API key; 0 switches limiting off. */
  perMinute: number;
  /** Burst allowance (bucket size); defaults to one minute's worth. */
  burst?: number;
  /** Bound on the number of keys tracked at once (least recently seen are dropped). */
  maxKeys?: number;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until one request will be allowed again (0 when allowed). */
  retryAfterSeconds: number;
  remaining: number;
}

/**
 * Token bucket per API key id: `perMinute / 60` tokens a second, up to `burst`. Memory is
 * bounded: at most `maxKeys` buckets, the least recently used dropped first (a dropped key
 * starts again with a full bucket, which only ever errs on the generous side).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly ratePerMs: number;
  private readonly burst: number;
  private readonly maxKeys: number;
  private readonly now: () => number;

  constructor(private readonly options: RateLimitOptions) {
    this.ratePerMs = options.perMinute / 60_000;
    this.burst = Math.max(1, options.burst ?? options.perMinute);
    this.maxKeys = Math.max(1, options.maxKeys ?? 10_000);
    this.now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.options.perMinute > 0;
  }

  get perMinute(): number {
    return this.options.perMinute;
  }

  get size(): number {
    return this.buckets.size;
  }

  take(key: string): RateDecision {
    if (!this.enabled) return { allowed: true, retryAfterSeconds: 0, remaining: Number.POSITIVE_INFINITY };
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (bucket) {
      this.buckets.delete(key); // re-inserted below: Map order is the LRU order
      bucket.tokens = Math.min(this.burst, bucket.tokens + (now - bucket.updatedMs) * this.ratePerMs);
      bucket.updatedMs = now;
    } else {
      bucket = { tokens: this.burst, updatedMs: now };
      while (this.buckets.size >= this.maxKeys) {
        const oldest = this.buckets.keys().next().value;
        if (oldest === undefined) break;
        this.buckets.delete(oldest);
      }
    }
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, retryAfterSeconds: 0, remaining: Math.floor(bucket.tokens) };
    }
    const waitMs = (1 - bucket.tokens) / this.ratePerMs;
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)), remaining: 0 };
  }
}

/**
 * The budget of one worker. The buckets live in each process's memory (a database round trip per
 * request would cost more than the limit protects), so with WORKERS processes on one port each
 * gets an equal share of RATE_LIMIT_PER_MINUTE: connections are spread round-robin, so a key's
 * requests split evenly and the key gets the configured total from the instance as a whole.
 * Across several instances behind a load balancer the limit is per instance (docs/deployment.md).
 * 0 stays 0 (off); a share never drops below 1.
 */
export function perWorkerRate(perMinute: number, workers: number): number {
  if (perMinute <= 0) return 0;
  return Math.max(1, Math.floor(perMinute / Math.max(1, workers)));
}

/** 429 RATE_LIMITED with Retry-After once a key exceeds its rate. Mount after authentication. */
export function rateLimit(limiter: RateLimiter): RequestHandler {
  return (_req, res, next) => {
    const key = res.locals.apiKey?.id;
    if (!limiter.enabled || !key) return next();
    const decision = limiter.take(key);
    if (decision.allowed) return next();
    next(
      new ApiProblem('RATE_LIMITED', `This API key exceeded ${limiter.perMinute} requests per minute; retry after ${decision.retryAfterSeconds} s.`, {
        headers: { 'Retry-After': String(decision.retryAfterSeconds) },
      }),
    );
  };
}
