import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { ApiProblem, problemBody } from '../../errors/problem';
import { DeadlineExceeded, OutcomeUnknown, upstreamTimeout, type Boundary, type Settled } from '../../storage/boundary';
import { requestFingerprint } from './fingerprint';
import type { IdempotencyStore, StoredResponse } from './store';
import { keyFormProblem } from './key';

/**
 * The Idempotency-Key protocol (spec, Writes), with ONE entry point: `withIdempotency(request,
 * execute)`. The write itself is `execute`; everything about the key lives here:
 *
 *   no key / dry run   execute once; failures rendered (504 on the deadline, 4xx/502 problems)
 *   recent answers     a completed key of this process replays from memory (no database trip)
 *   in flight          the same key running in this process, or claimed elsewhere: 409 IN_FLIGHT
 *   reused             same key, other route or body: 422 IDEMPOTENCY_KEY_REUSED
 *   claim              phase 1, its own short transaction; a store that cannot answer lets the
 *                      write go ahead without deduplication (Idempotency-Status unavailable)
 *   complete           phase 2: `attempt.complete(trx, response)` inside the write's transaction,
 *                      so the posting and its recorded answer commit together or not at all
 *   refusals           a problem (404/409/422/502) rolls the write back and is recorded on its own
 *   nothing posted     the write failed before its transaction (NothingPosted), or the maintenance
 *                      lock turned it away (423, rolled back): the key is given back; a timeout
 *                      there is 503 UPSTREAM_TIMEOUT_NOT_APPLIED, never 504 (every 504 under a
 *                      key is stored and replayed as unknown)
 *   unknown after 504  the key answers 504 until the late outcome replaces it (`attempt.settleLate`)
 *   purge              expired records deleted now and then, never while the database is locked
 *
 * Idempotency-Status (spec, Writes rule 2) asserts only what happened to the write: `applied` on the
 * outcome of a write (what is recorded under the key: the posting, or its refusal 404/409/422/502,
 * or the unknown outcome after a 504), `replayed` on a recording, `unavailable` when the store could
 * not answer and the write went ahead. An answer where nothing was posted and nothing recorded (the
 * key is given back, or was never claimed) carries none (docs/decisions/0221-idempotency-status-only-what-happened.md).
 * Without a key (or on a dry run) the same answers carry `applied` as would be recorded under one.
 */

export type IdempotencyStatus = 'applied' | 'replayed' | 'unavailable';

/** A response as the write produced it (not yet tagged with its Idempotency-Status). */
export interface Rendered {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  /** The document already existed with identical content: answered as `replayed`. */
  duplicate: boolean;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  /** Absent when nothing was posted and nothing recorded under the key: the header is then not sent. */
  idempotencyStatus?: IdempotencyStatus;
}

export interface IdempotentRequest {
  /** Route of the write: part of the fingerprint. */
  route: string;
  /** Request path, for problem documents. */
  instance: string;
  correlationId: string;
  /** Keys are scoped to the API key. */
  scope: string;
  key?: string;
  /** A dry run ignores the key. */
  dryRun: boolean;
  body: unknown;
  /** For messages: "posting a journal". */
  what: string;
  /** Absolute deadline (ms since the epoch) of the request. */
  deadlineAt: number;
}

/** What a keyed execution gets: how to record its answer, and where its late outcome goes. */
export interface Attempt {
  key: string;
  /** Inside the write's transaction, right before it commits; throws LostOwnership when the key was taken over. */
  complete(trx: Knex.Transaction, response: Rendered): Promise<void>;
  /** The `onLate` of the write's transaction: its outcome after the request answered 504. */
  settleLate(outcome: Settled<Rendered>): void;
}

/** The write: without an attempt it runs unkeyed (no key, dry run, store unavailable). */
export type Execute = (attempt?: Attempt) => Promise<Rendered>;

/** Thrown by an execution that failed before anything could be posted: the key is given back. */
export class NothingPosted extends Error {
  constructor(readonly reason: unknown) {
    super('the write failed before posting anything');
  }
}

export class LostOwnership extends Error {
  constructor() {
    super('the idempotency key was taken over by another attempt');
  }
}

export interface IdempotencyProtocolDeps {
  boundary: Pick<Boundary, 'within' | 'problemFor'>;
  store: IdempotencyStore;
  logger: Logger;
  /** Retry-After of IDEMPOTENCY_KEY_IN_FLIGHT. */
  inFlightRetryAfterSeconds: number;
  /** Whether the database is locked (no purge then). */
  isLocked: () => boolean;
  /** Minimum time between two opportunistic purges of expired records. */
  purgeEveryMs: number;
  /** Lifetime of an idempotency record (IDEMPOTENCY_TTL_HOURS). */
  ttlMs: number;
  /** Completed records kept in memory for replays without a database trip. */
  recentCapacity?: number;
  /**
   * Runs the giving back of a claim whose write the maintenance lock turned away: served while the
   * lock closes the pool (storage/pool-drain.ts), so the request leaves nothing written.
   */
  cleanup?: <T>(fn: () => Promise<T>) => Promise<T>;
}

interface RecentAnswer {
  fingerprint: string;
  response: StoredResponse;
  expiresAt: number;
}

interface RunningKey {
  fingerprint: string;
  /** The response answered 504 and the write is still running. */
  late: boolean;
  unknownResponse?: StoredResponse;
}

/** Retry-After of UPSTREAM_TIMEOUT_NOT_APPLIED: the database was slow; a retry soon may find it answering. */
export const NOT_APPLIED_RETRY_AFTER_SECONDS = 1;

/**
 * The deadline passed (or the database timed a statement out) before the write's posting
 * transaction began: at the key's claim, or allocating numbers (NothingPosted). Nothing was posted,
 * so the answer is not 504 "outcome unknown": every 504 sent under a key is one the key stores and
 * replays as unknown (spec, Writes rule 6). 503 UPSTREAM_TIMEOUT_NOT_APPLIED, the key not consumed
 * (docs/decisions/0406-a-timeout-before-the-posting-is-503.md).
 */
export function timedOutBeforePosting(what: string): ApiProblem {
  return new ApiProblem(
    'UPSTREAM_TIMEOUT_NOT_APPLIED',
    `The accounting database did not answer in time (${what}), before the write began: nothing was applied and an Idempotency-Key sent with it was not consumed. Retry after Retry-After.`,
    { headers: { 'Retry-After': String(NOT_APPLIED_RETRY_AFTER_SECONDS) } },
  );
}

export function renderProblem(problem: ApiProblem, req: Pick<IdempotentRequest, 'instance' | 'correlationId'>): Rendered {
  const headers: Record<string, string> = { ...problem.headers, 'X-Error-Code': problem.code };
  return { status: problem.status, headers, body: problemBody(problem, req.instance, req.correlationId) as Record<string, unknown>, duplicate: false };
}

function stored(rendered: Rendered): StoredResponse {
  return { status: rendered.status, headers: rendered.headers, body: JSON.stringify(rendered.body) };
}

function answer(rendered: Rendered, idempotencyStatus: IdempotencyStatus | undefined): Answer {
  const out: Answer = { status: rendered.status, headers: rendered.headers, body: rendered.body };
  if (idempotencyStatus !== undefined) out.idempotencyStatus = idempotencyStatus;
  return out;
}

/** An answer rendered, and whether it is the write's outcome (what a key records) or nothing happened. */
interface Outcome {
  rendered: Rendered;
  /** false: nothing was posted and nothing is recorded (a key is given back): no Idempotency-Status. */
  happened: boolean;
}

/** The status of an executed write's outcome: `replayed` for a duplicate document, else `applied`. */
function executed(rendered: Rendered): IdempotencyStatus {
  return rendered.duplicate ? 'replayed' : 'applied';
}

/** A recording of an earlier response. Problem documents get this request's correlation id. */
function replay(response: StoredResponse, req: IdempotentRequest): Answer {
  const body = JSON.parse(response.body) as Record<string, unknown>;
  if (response.status >= 400 && typeof body.correlationId === 'string' && body.correlationId !== req.correlationId) {
    body.originalCorrelationId = body.correlationId;
    body.correlationId = req.correlationId;
  }
  return { status: response.status, headers: { ...response.headers }, body, idempotencyStatus: 'replayed' };
}

export class IdempotencyProtocol {
  /** Keys being executed by this process: a concurrent duplicate is answered without a database trip. */
  private readonly running = new Map<string, RunningKey>();
  /**
   * Recently completed keys of this process. A completed record never changes (until it expires),
   * so its replay needs no database trip; other processes' records are found in the table.
   */
  private readonly recent = new Map<string, RecentAnswer>();
  private lastPurge = 0;

  constructor(private readonly deps: IdempotencyProtocolDeps) {}

  get store(): IdempotencyStore {
    return this.deps.store;
  }

  set store(store: IdempotencyStore) {
    this.deps.store = store;
  }

  async withIdempotency(req: IdempotentRequest, execute: Execute): Promise<Answer> {
    // A dry run ignores the key, its form included (spec, Writes rule 7): only a real write checks it.
    if (req.dryRun || req.key === undefined) {
      const { rendered, happened } = await this.unkeyed(req, execute);
      return answer(rendered, happened ? executed(rendered) : undefined);
    }
    const malformed = keyFormProblem(req.key);
    if (malformed) throw malformed;
    return this.keyed(req, req.key, execute);
  }

  // ------------------------------------------------------------------ without a key

  private async unkeyed(req: IdempotentRequest, execute: Execute): Promise<Outcome> {
    try {
      return { rendered: await execute(), happened: true };
    } catch (err) {
      return this.renderFailure(err, req);
    }
  }

  /**
   * A failure as its answer (504 on the deadline, problems rendered); unexpected errors rethrown.
   * `happened` is false where a keyed write gives its key back: nothing was posted (NothingPosted),
   * or the connection failed before COMMIT (DATABASE_UNAVAILABLE).
   */
  private renderFailure(err: unknown, req: IdempotentRequest): Outcome {
    const nothingPosted = err instanceof NothingPosted;
    const cause = nothingPosted ? err.reason : err;
    if (cause instanceof DeadlineExceeded) {
      // Before the posting transaction nothing was posted: not "unknown" (504), but 503.
      return { rendered: renderProblem(nothingPosted ? timedOutBeforePosting(cause.what) : upstreamTimeout(cause.what, !req.dryRun), req), happened: !nothingPosted };
    }
    const mapped = this.deps.boundary.problemFor(cause);
    // The database's own statement timeout before the posting transaction: nothing posted either.
    const problem = nothingPosted && mapped?.code === 'UPSTREAM_TIMEOUT' ? timedOutBeforePosting(req.what) : mapped;
    if (problem) return { rendered: renderProblem(problem, req), happened: !nothingPosted && problem.code !== 'DATABASE_UNAVAILABLE' };
    throw cause;
  }

  // ------------------------------------------------------------------ with a key

  private async keyed(req: IdempotentRequest, key: string, execute: Execute): Promise<Answer> {
    const { store, boundary, logger } = this.deps;
    const fingerprint = requestFingerprint(req.route, req.body);
    const memKey = `${req.scope}\u0000${key}`;

    const known = this.recent.get(memKey);
    if (known && known.expiresAt > Date.now()) {
      if (known.fingerprint !== fingerprint) throw this.reused(key);
      return replay(known.response, req);
    }
    const mine = this.running.get(memKey);
    if (mine) {
      if (mine.fingerprint !== fingerprint) throw this.reused(key);
      if (mine.late && mine.unknownResponse) return replay(mine.unknownResponse, req);
      throw this.inFlight(key);
    }

    let claim;
    try {
      claim = await boundary.within(() => this.deps.store.claim({ scope: req.scope, key, fingerprint }), {
        deadlineAt: req.deadlineAt,
        what: 'idempotency claim',
        onLate: (late) => {
          // The claim came back after we answered 504: nothing will post under it, give it back.
          if (late.ok && late.value.kind === 'claimed') this.deps.store.release(late.value.token).catch(() => undefined);
        },
      });
    } catch (err) {
      // Nothing ran and nothing is recorded (a claim that comes back late is given back): no status,
      // and not 504 (a 504 under a key is stored and replayed as unknown; here the outcome is known).
      if (err instanceof DeadlineExceeded) return answer(renderProblem(timedOutBeforePosting(err.what), req), undefined);
      // The database itself is unreachable: the write could not go ahead either (502, retry with backoff).
      if (err instanceof ApiProblem && err.code === 'DATABASE_UNAVAILABLE') return answer(renderProblem(err, req), undefined);
      // The maintenance lock closed the pool before the claim got a connection: nothing was written (423).
      if (err instanceof ApiProblem && err.code === 'MAINTENANCE_LOCK') return answer(renderProblem(err, req), undefined);
      // The store could not answer: the write goes ahead without deduplication.
      logger.warn({ err, correlationId: req.correlationId }, 'idempotency store unavailable; writing without deduplication');
      const { rendered, happened } = await this.unkeyed(req, execute);
      return answer(rendered, happened ? 'unavailable' : undefined);
    }

    switch (claim.kind) {
      case 'reused':
        throw this.reused(key);
      case 'in_flight':
        throw this.inFlight(key, claim.retryAfterSeconds);
      case 'completed':
        this.remember(memKey, fingerprint, claim.response, claim.expiresAt);
        return replay(claim.response, req);
      case 'unknown':
        return replay(claim.response ?? stored(renderProblem(upstreamTimeout(req.what, true), req)), req);
      case 'claimed':
        break;
    }

    this.maybePurge();
    const token = claim.token;
    const expiresAt = Date.now() + this.deps.ttlMs;
    const entry: RunningKey = { fingerprint, late: false };
    this.running.set(memKey, entry);
    const attempt: Attempt = {
      key,
      complete: async (trx, response) => {
        if (!(await this.deps.store.complete(trx, token, stored(response)))) throw new LostOwnership();
      },
      settleLate: (outcome) => this.settleLate(memKey, token, outcome, req),
    };
    let late = false;
    try {
      const rendered = await execute(attempt);
      this.remember(memKey, fingerprint, stored(rendered), expiresAt);
      return answer(rendered, executed(rendered));
    } catch (err) {
      if (err instanceof NothingPosted) {
        // Nothing was posted: give the key back so that a retry executes. Nothing happened: no status.
        await this.giveBack(token).catch(() => undefined);
        return answer(this.renderFailure(err, req).rendered, undefined);
      }
      if (err instanceof DeadlineExceeded) {
        // OutcomeUnknown (connection lost during COMMIT) has settled: nothing arrives late; the record
        // is completed if the COMMIT landed, else a retry takes it over once its lease expires.
        late = !(err instanceof OutcomeUnknown);
        const unknown = renderProblem(upstreamTimeout(err.what, true), req);
        entry.late = true;
        entry.unknownResponse = stored(unknown);
        this.deps.store.markUnknown(token, entry.unknownResponse).catch((e) => logger.warn({ err: e }, 'could not mark idempotency key unknown'));
        return answer(unknown, 'applied');
      }
      if (err instanceof LostOwnership) throw this.inFlight(key);
      const problem = boundary.problemFor(err);
      if (problem?.code === 'MAINTENANCE_LOCK') {
        // The posting transaction found the lock (or was refused a connection by it): it rolled back,
        // nothing was posted. Give the key back, so that the retry after the un-lock executes; a
        // stored 423 would be replayed to it forever.
        await this.giveBack(token).catch((e) => logger.warn({ err: e }, 'could not release the idempotency key'));
        return answer(renderProblem(problem, req), undefined);
      }
      if (problem?.code === 'DATABASE_UNAVAILABLE') {
        // The connection failed before COMMIT was sent: nothing committed. Give the key back so that
        // the retry the 502 asks for executes (a stored 502 would be replayed to it instead). Not awaited:
        // the DELETE waits for the lost transaction's row lock, which a half-dead connection may hold a while.
        this.deps.store.release(token).catch((e) => logger.warn({ err: e }, 'could not release the idempotency key'));
        return answer(renderProblem(problem, req), undefined);
      }
      if (problem) {
        // The engine refused (404/409/422) or the database did (502): the write rolled back as a
        // whole; the answer is recorded under the key on its own. Should that fail, the record stays
        // in flight, its lease expires, and the retry executes again to the same answer.
        const rendered = renderProblem(problem, req);
        const recorded = await this.deps.store.completeAlone(token, stored(rendered)).catch((e) => {
          logger.warn({ err: e }, 'could not record the answer under the idempotency key');
          return false;
        });
        if (recorded) this.remember(memKey, fingerprint, stored(rendered), expiresAt);
        return answer(rendered, 'applied');
      }
      await this.deps.store.release(token).catch(() => undefined);
      throw err;
    } finally {
      if (!late) this.running.delete(memKey);
    }
  }

  /** Gives a claim back (deletes it), also while the maintenance lock closes the pool. */
  private giveBack(token: string): Promise<void> {
    const release = () => this.deps.store.release(token);
    return this.deps.cleanup ? this.deps.cleanup(release) : release();
  }

  /** The write finished after its request had answered 504. */
  private settleLate(memKey: string, token: string, outcome: Settled<Rendered>, req: IdempotentRequest): void {
    const done = (): void => {
      this.running.delete(memKey);
    };
    if (outcome.ok) {
      // Committed together with the real response: the next retry replays it.
      this.deps.logger.info({ correlationId: req.correlationId, status: outcome.value.status }, 'late posting committed; its result replaces the unknown outcome');
      done();
      return;
    }
    const err = outcome.error;
    if (err instanceof LostOwnership) {
      done();
      return;
    }
    const problem = this.deps.boundary.problemFor(err);
    // DATABASE_UNAVAILABLE: nothing committed and the 502 asks for a retry: give the key back, as in time.
    const finish: Promise<void> = problem && problem.code !== 'DATABASE_UNAVAILABLE' ? this.deps.store.completeAlone(token, stored(renderProblem(problem, req))).then(() => undefined) : this.deps.store.release(token);
    finish.catch(() => undefined).finally(done);
  }

  private remember(memKey: string, fingerprint: string, response: StoredResponse, expiresAt: number): void {
    const capacity = this.deps.recentCapacity ?? 5000;
    if (capacity <= 0) return;
    this.recent.delete(memKey);
    this.recent.set(memKey, { fingerprint, response, expiresAt });
    while (this.recent.size > capacity) this.recent.delete(this.recent.keys().next().value as string);
  }

  private reused(key: string): ApiProblem {
    return new ApiProblem('IDEMPOTENCY_KEY_REUSED', `Idempotency-Key "${key}" was used before with a different body or route; use a new key for a different request.`, {
      errors: [{ field: 'Idempotency-Key', code: 'reused' }],
    });
  }

  private inFlight(key: string, retryAfter: number = this.deps.inFlightRetryAfterSeconds): ApiProblem {
    return new ApiProblem('IDEMPOTENCY_KEY_IN_FLIGHT', `A request with Idempotency-Key "${key}" is still being processed; retry after ${retryAfter} s.`, {
      headers: { 'Retry-After': String(retryAfter) },
    });
  }

  private maybePurge(): void {
    const now = Date.now();
    if (now - this.lastPurge < this.deps.purgeEveryMs || this.deps.isLocked()) return;
    this.lastPurge = now;
    this.deps.store
      .purgeExpired()
      .then((n) => {
        if (n > 0) this.deps.logger.info({ purged: n }, 'expired idempotency records purged');
      })
      .catch((err) => this.deps.logger.warn({ err }, 'idempotency purge failed'));
  }
}
