/**
 * Typed TypeScript client for the Accounting Integration API v3, built on openapi-fetch over the
 * types `make generate` writes from openapi.yaml (generated/api-types.ts). Node 20+ (native fetch).
 *
 *   const api = createAccountingClient({ baseUrl: 'http://localhost:8080/api/v3', apiKey });
 *   const { data } = await api.POST('/vendors/query', { body: { page: { pageSize: 10 } } });
 *
 * What it adds to every call:
 *   - `x-api-key`, a W3C `traceparent` (one per call, kept across its retries) and, on writes, an
 *     `Idempotency-Key` (a new UUID unless the caller passes one in `headers`, kept across retries);
 *   - every non-2xx answer is thrown as an `ApiError` carrying the problem document: code,
 *     correlation id, `errors[]`, status and Retry-After;
 *   - retries only what the spec says may be retried: 409 IDEMPOTENCY_KEY_IN_FLIGHT, 423, 429 and
 *     503 after their Retry-After; 502 and 504 after an exponential back-off, with the same
 *     Idempotency-Key (a write that timed out is retried only under its key, so it is applied once).
 *     Everything else (400, 401, 404, 409 conflicts, 422, 500, ...) is thrown at once, and so is
 *     502 STORED_VALUE_UNREADABLE: a value in the books that only correcting it there mends.
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { randomBytes, randomUUID } from 'node:crypto';
import type { components, paths } from '../../generated/api-types';

export type Problem = components['schemas']['Problem'];
export type FieldError = NonNullable<Problem['errors']>[number];

/** A non-2xx answer, parsed as the problem document every failure of the API is. */
export class ApiError extends Error {
  readonly status: number;
  /** Stable problem code (`PERIOD_CLOSED`, ...): docs/errors.md. */
  readonly code: string;
  /** The handle to the server's log record of this request. */
  readonly correlationId: string | undefined;
  /** Field-level errors (`field`, `code`, `message`), empty when the problem names none. */
  readonly errors: FieldError[];
  /** Seconds the server asked to wait, when it sent Retry-After. */
  readonly retryAfterSeconds: number | undefined;
  /** `Idempotency-Status` of a write's answer (applied, replayed, unavailable); undefined when nothing happened to the write (refused before it ran). */
  readonly idempotencyStatus: string | undefined;
  readonly problem: Problem;

  constructor(status: number, problem: Problem, headers: Headers) {
    super(`${status} ${problem.title ?? ''}: ${problem.detail ?? ''}`.trim());
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
    this.code = headers.get('x-error-code') ?? codeFromType(problem.type) ?? `HTTP_${status}`;
    this.correlationId = problem.correlationId ?? headers.get('x-correlation-id') ?? undefined;
    this.errors = problem.errors ?? [];
    this.retryAfterSeconds = retryAfterSeconds(headers);
    this.idempotencyStatus = headers.get('idempotency-status') ?? undefined;
  }
}

function codeFromType(type: string | undefined): string | undefined {
  const slug = type?.split('/').pop();
  return slug ? slug.toUpperCase().replace(/-/g, '_') : undefined;
}

function retryAfterSeconds(headers: Headers): number | undefined {
  const raw = headers.get('retry-after');
  if (raw === null || !/^\d+$/.test(raw.trim())) return undefined;
  return Number(raw);
}

export interface RetryOptions {
  /** Attempts in all, the first included (default 4). */
  maxAttempts: number;
  /** First back-off for 502/504, doubled each attempt with jitter (default 500 ms). */
  baseDelayMs: number;
  /** Longest wait, Retry-After included: an answer asking for more is thrown, not waited (default 60 s). */
  maxDelayMs: number;
}

export interface AccountingClientOptions {
  /** Up to and including /api/v3, e.g. `http://localhost:8080/api/v3`. */
  baseUrl: string;
  apiKey: string;
  retry?: Partial<RetryOptions>;
  /** The `traceparent` of a call; default: a new sampled trace per call. */
  traceparent?: () => string;
  /** For tests and custom transports. */
  fetch?: (request: Request) => Promise<Response>;
  /** For tests (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
}

export type AccountingClient = Client<paths>;

/** Operations that are not writes: they take no Idempotency-Key. */
function isWrite(pathname: string): boolean {
  return !/\/utility\/[^/]+$|\/[^/]+\/(query|match)$/.test(pathname);
}

export function newTraceparent(): string {
  return `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
}

/** How long to wait before retrying this answer, or undefined when it must not be retried. */
export function retryDelayMs(response: Response, attempt: number, options: RetryOptions): number | undefined {
  const status = response.status;
  const code = response.headers.get('x-error-code');
  const afterRetryAfter = status === 423 || status === 429 || status === 503 || (status === 409 && code === 'IDEMPOTENCY_KEY_IN_FLIGHT');
  if (afterRetryAfter) {
    const seconds = retryAfterSeconds(response.headers);
    return seconds === undefined ? undefined : seconds * 1000;
  }
  if ((status === 502 && code !== 'STORED_VALUE_UNREADABLE') || status === 504) {
    const backoff = options.baseDelayMs * 2 ** (attempt - 1);
    return Math.round(backoff / 2 + Math.random() * (backoff / 2));
  }
  return undefined;
}

export function createAccountingClient(options: AccountingClientOptions): AccountingClient {
  const retry: RetryOptions = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 60_000, ...options.retry };
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));

  /** Sends the same request (same Idempotency-Key and traceparent) until it may not be retried. */
  const retryingFetch = async (request: Request): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      const response = await baseFetch(request.clone());
      if (response.ok || attempt >= retry.maxAttempts) return response;
      const delay = retryDelayMs(response, attempt, retry);
      if (delay === undefined || delay > retry.maxDelayMs) return response;
      await response.body?.cancel();
      await sleep(delay);
    }
  };

  const headers: Middleware = {
    onRequest({ request }) {
      request.headers.set('x-api-key', options.apiKey);
      if (!request.headers.has('traceparent')) request.headers.set('traceparent', (options.traceparent ?? newTraceparent)());
      if (isWrite(new URL(request.url).pathname) && !request.headers.has('idempotency-key')) {
        request.headers.set('Idempotency-Key', randomUUID());
      }
      return request;
    },
    async onResponse({ response }) {
      if (response.ok) return response;
      const text = await response.text();
      let problem: Problem;
      try {
        problem = JSON.parse(text) as Problem;
      } catch {
        problem = { type: 'about:blank', title: response.statusText, status: response.status, detail: text.slice(0, 500), instance: '', correlationId: '' };
      }
      throw new ApiError(response.status, problem, response.headers);
    },
  };

  const client = createClient<paths>({ baseUrl: options.baseUrl, fetch: retryingFetch });
  client.use(headers);
  return client;
}
