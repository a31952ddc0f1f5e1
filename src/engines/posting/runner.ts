import type { Logger } from 'pino';
import { ApiProblem, problemBody } from '../../errors/problem';
import { Boundary, DeadlineExceeded, OutcomeUnknown, upstreamTimeout, type Settled } from '../../storage/boundary';
import type { Dialect } from '../../storage/dialect';
import type { NumberAllocator } from '../../storage/numbers';
import { toDbTime } from '../../storage/db-time';
import { requestFingerprint } from '../idempotency/fingerprint';
import type { IdempotencyStore, StoredResponse } from '../idempotency/store';
import type { PostingContext, PostingHooks } from './context';

/**
 * The rules every write shares, built once (spec, Writes):
 *
 *   prepare (pure, no database)      400s here are decided before dispatch: the key is not consumed
 *   dry run                          whole cascade in a transaction that is rolled back; the key is ignored
 *   Idempotency-Key                  phase 1 claims the key in its own short transaction; phase 2 runs
 *                                    the posting and stores the response it produced in ONE transaction
 *                                    (a refusal rolls the posting back and is stored on its own)
 *   numbers                          allocated after the claim and outside the posting transaction
 *   deadline                         a posting that misses it answers 504; the key is marked unknown and
 *                                    the late commit replaces "unknown" with the real result
 *   errors                           engine problems (404/409/422) and database refusals (502) are
 *                                    rendered, stored under the key and replayed; unexpected errors
 *                                    release the key and answer 500
 */

export type IdempotencyStatus = 'applied' | 'replayed' | 'unavailable';

export interface WriteDefinition<I, A, R> {
  /** Route of the write, part of the fingerprint: `/ledger-transactions`. */
  route: string;
  /** For messages: "posting a journal". */
  what: string;
  /** The write cannot be made safe without a key (POST /purchase-order-receipts): a missing key is 400 (dry runs excepted). */
  requireKey?: boolean;
  /** Pure checks and parsing; ApiProblem 400 here does not consume the key. */
  prepare(body: unknown): I;
  /** Reference and record numbers, allocated outside the posting transaction (committed, never returned). */
  allocate(input: I, numbers: NumberAllocator): Promise<A>;
  /** The cascade, inside the posting transaction. */
  post(ctx: PostingContext, input: I, numbers: A): Promise<PostOutcome<R>>;
}

export interface PostOutcome<R> {
  result: R;
  /**
   * The document was already posted with identical content (a journal re-sent under the same
   * transaction number): nothing was written, the existing posting is returned as `replayed`.
   */
  duplicate?: boolean;
}

export interface WriteRequest {
  route: string;
  /** Request path for problem documents. */
  instance: string;
  correlationId: string;
  apiKeyId: string;
  apiKeyName: string;
  idempotencyKey?: string;
  dryRun: boolean;
  body: unknown;
}

export interface WriteResponse {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  idempotencyStatus: IdempotencyStatus;
}

interface Rendered {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  duplicate: boolean;
}

export interface WriteRunnerDeps {
  boundary: Boundary;
  dialect: Dialect;
  numbers: NumberAllocator;
  store: IdempotencyStore;
  logger: Logger;
  hooks: PostingHooks;
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
}

interface RecentAnswer {
  fingerprint: string;
  response: StoredResponse;
  expiresAt: number;
}

class DryRunRollback<R> extends Error {
  constructor(readonly outcome: PostOutcome<R>) {
    super('dry run: rolled back');
  }
}

class LostOwnership extends Error {
  constructor() {
    super('the idempotency key was taken over by another attempt');
  }
}

interface RunningKey {
  fingerprint: string;
  /** The response answered 504 and the posting is still running. */
  late: boolean;
  unknownResponse?: StoredResponse;
}

export class WriteRunner {
  /** Keys being executed by this process: a concurrent duplicate is answered without a database trip. */
  private readonly running = new Map<string, RunningKey>();
  /**
   * Recently completed keys of this process. A completed record never changes (until it expires),
   * so its replay needs no database trip; other processes' records are found in the table.
   */
  private readonly recent = new Map<string, RecentAnswer>();
  private lastPurge = 0;

  constructor(private readonly deps: WriteRunnerDeps) {}

  /** The idempotency store in use (tests replace it with a failing one). */
  get store(): IdempotencyStore {
    return this.deps.store;
  }

  set store(store: IdempotencyStore) {
    this.deps.store = store;
  }

  get hooks(): PostingHooks {
    return this.deps.hooks;
  }

  async run<I, A, R>(def: WriteDefinition<I, A, R>, req: WriteRequest): Promise<WriteResponse> {
    if (def.requireKey && req.idempotencyKey === undefined && !req.dryRun) {
      throw new ApiProblem('IDEMPOTENCY_KEY_INVALID', `${def.route} requires an Idempotency-Key header (1 to 128 printable ASCII characters).`, {
        errors: [{ field: 'Idempotency-Key', code: 'required' }],
      });
    }
    const input = def.prepare(req.body);
    const deadlineAt = this.deps.boundary.deadlineFromNow();
    if (req.dryRun || req.idempotencyKey === undefined) {
      const rendered = await this.execute(def, input, req, deadlineAt);
      return this.answer(rendered, rendered.duplicate ? 'replayed' : 'applied');
    }
    return this.runKeyed(def, input, req, deadlineAt);
  }

  // ------------------------------------------------------------------ without a key / dry run

  private async execute<I, A, R>(def: WriteDefinition<I, A, R>, input: I, req: WriteRequest, deadlineAt: number): Promise<Rendered> {
    try {
      const numbers = await this.deps.boundary.within(() => def.allocate(input, this.deps.numbers), { deadlineAt, what: 'allocating numbers' });
      const outcome = await this.deps.boundary.transaction<PostOutcome<R>>(
        async (trx) => {
          const result = await def.post(this.context(trx, req), input, numbers);
          await this.deps.hooks.beforeCommit?.({ route: def.route, dryRun: req.dryRun, trx });
          if (req.dryRun) throw new DryRunRollback(result);
          return result;
        },
        { deadlineAt, what: def.what },
      );
      return this.renderResult(outcome, false);
    } catch (err) {
      if (err instanceof DryRunRollback) return this.renderResult(err.outcome as PostOutcome<R>, true);
      if (err instanceof DeadlineExceeded) return this.renderProblem(upstreamTimeout(err.what, !req.dryRun), req);
      const problem = this.deps.boundary.problemFor(err);
      if (problem) return this.renderProblem(problem, req);
      throw err;
    }
  }

  // ------------------------------------------------------------------ with an Idempotency-Key

  private async runKeyed<I, A, R>(def: WriteDefinition<I, A, R>, input: I, req: WriteRequest, deadlineAt: number): Promise<WriteResponse> {
    const key = req.idempotencyKey!;
    const fingerprint = requestFingerprint(req.route, req.body);
    const memKey = `${req.apiKeyId}\u0000${key}`;

    const known = this.recent.get(memKey);
    if (known && known.expiresAt > Date.now()) {
      if (known.fingerprint !== fingerprint) throw this.reused(key);
      return this.replay(known.response, req);
    }
    const mine = this.running.get(memKey);
    if (mine) {
      if (mine.fingerprint !== fingerprint) throw this.reused(key);
      if (mine.late && mine.unknownResponse) return this.replay(mine.unknownResponse, req);
      throw this.inFlight(key);
    }

    let claim;
    try {
      claim = await this.deps.boundary.within(() => this.deps.store.claim({ scope: req.apiKeyId, key, fingerprint }), {
        deadlineAt,
        what: 'idempotency claim',
        onLate: (late) => {
          // The claim came back after we answered 504: nothing will post under it, give it back.
          if (late.ok && late.value.kind === 'claimed') this.deps.store.release(late.value.token).catch(() => undefined);
        },
      });
    } catch (err) {
      if (err instanceof DeadlineExceeded) return this.answer(this.renderProblem(upstreamTimeout(err.what, true), req), 'applied');
      // The database itself is unreachable: the write could not go ahead either (502, retry with backoff).
      if (err instanceof ApiProblem && err.code === 'DATABASE_UNAVAILABLE') return this.answer(this.renderProblem(err, req), 'applied');
      // The store could not answer: the write goes ahead without deduplication.
      this.deps.logger.warn({ err, correlationId: req.correlationId }, 'idempotency store unavailable; writing without deduplication');
      const rendered = await this.execute(def, input, req, deadlineAt);
      return this.answer(rendered, 'unavailable');
    }

    switch (claim.kind) {
      case 'reused':
        throw this.reused(key);
      case 'in_flight':
        throw this.inFlight(key, claim.retryAfterSeconds);
      case 'completed':
        this.remember(memKey, fingerprint, claim.response, claim.expiresAt);
        return this.replay(claim.response, req);
      case 'unknown':
        return this.replay(claim.response ?? this.stored(this.renderProblem(upstreamTimeout(def.what, true), req)), req);
      case 'claimed':
        break;
    }

    this.maybePurge();
    const token = claim.token;
    const expiresAt = Date.now() + this.deps.ttlMs;
    const entry: RunningKey = { fingerprint, late: false };
    this.running.set(memKey, entry);
    let late = false;
    try {
      await this.deps.hooks.afterClaim?.({ route: def.route, key });
      let numbers: A;
      try {
        numbers = await this.deps.boundary.within(() => def.allocate(input, this.deps.numbers), { deadlineAt, what: 'allocating numbers' });
      } catch (err) {
        // Nothing was posted: give the key back so that a retry executes.
        await this.deps.store.release(token).catch(() => undefined);
        if (err instanceof DeadlineExceeded) return this.answer(this.renderProblem(upstreamTimeout(err.what, true), req), 'applied');
        const problem = this.deps.boundary.problemFor(err);
        if (problem) return this.answer(this.renderProblem(problem, req), 'applied');
        throw err;
      }

      // Phase 2: the posting and the completion of the record commit together, or not at all.
      const rendered = await this.deps.boundary.transaction<Rendered>(
        async (trx) => {
          const outcome = await def.post(this.context(trx, req), input, numbers);
          const out = this.renderResult(outcome, false);
          await this.deps.hooks.beforeCommit?.({ route: def.route, dryRun: false, trx });
          if (!(await this.deps.store.complete(trx, token, this.stored(out)))) throw new LostOwnership();
          return out;
        },
        {
          deadlineAt,
          what: def.what,
          onLate: (outcome) => this.settleLate(memKey, token, outcome, req),
        },
      );
      this.remember(memKey, fingerprint, this.stored(rendered), expiresAt);
      return this.answer(rendered, rendered.duplicate ? 'replayed' : 'applied');
    } catch (err) {
      if (err instanceof DeadlineExceeded) {
        // OutcomeUnknown (connection lost during COMMIT) has settled: nothing arrives late; the record
        // is completed if the COMMIT landed, else a retry takes it over once its lease expires.
        late = !(err instanceof OutcomeUnknown);
        const unknown = this.renderProblem(upstreamTimeout(err.what, true), req);
        entry.late = true;
        entry.unknownResponse = this.stored(unknown);
        this.deps.store.markUnknown(token, entry.unknownResponse).catch((e) => this.deps.logger.warn({ err: e }, 'could not mark idempotency key unknown'));
        return this.answer(unknown, 'applied');
      }
      if (err instanceof LostOwnership) throw this.inFlight(key);
      const problem = this.deps.boundary.problemFor(err);
      if (problem?.code === 'DATABASE_UNAVAILABLE') {
        // The connection failed before COMMIT was sent: nothing committed. Give the key back so that
        // the retry the 502 asks for executes (a stored 502 would be replayed to it instead). Not awaited:
        // the DELETE waits for the lost transaction's row lock, which a half-dead connection may hold a while.
        this.deps.store.release(token).catch((e) => this.deps.logger.warn({ err: e }, 'could not release the idempotency key'));
        return this.answer(this.renderProblem(problem, req), 'applied');
      }
      if (problem) {
        // The engine refused (404/409/422) or the database did (502): the posting rolled back as a
        // whole; the answer is recorded under the key on its own. Should that fail, the record stays
        // in flight, its lease expires, and the retry executes again to the same answer.
        const rendered = this.renderProblem(problem, req);
        const recorded = await this.deps.store.completeAlone(token, this.stored(rendered)).catch((e) => {
          this.deps.logger.warn({ err: e }, 'could not record the answer under the idempotency key');
          return false;
        });
        if (recorded) this.remember(memKey, fingerprint, this.stored(rendered), expiresAt);
        return this.answer(rendered, 'applied');
      }
      await this.deps.store.release(token).catch(() => undefined);
      throw err;
    } finally {
      if (!late) this.running.delete(memKey);
    }
  }

  /** The posting finished after its request had answered 504. */
  private settleLate(memKey: string, token: string, outcome: Settled<Rendered>, req: WriteRequest): void {
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
    const finish: Promise<void> = problem && problem.code !== 'DATABASE_UNAVAILABLE'
      ? this.deps.store.completeAlone(token, this.stored(this.renderProblem(problem, req))).then(() => undefined)
      : this.deps.store.release(token);
    finish.catch(() => undefined).finally(done);
  }

  // ------------------------------------------------------------------ rendering

  private context(trx: PostingContext['trx'], req: WriteRequest): PostingContext {
    const now = new Date();
    return {
      trx,
      engine: this.deps.boundary.engine,
      dialect: this.deps.dialect,
      numbers: this.deps.numbers,
      user: `api:${req.apiKeyName}`.slice(0, 30),
      today: now.toISOString().slice(0, 10),
      now: toDbTime(this.deps.boundary.engine, now),
      dryRun: req.dryRun,
    };
  }

  private renderResult<R>(outcome: PostOutcome<R>, dryRun: boolean): Rendered {
    const body = { ...(outcome.result as Record<string, unknown>), dryRun };
    return { status: 200, headers: {}, body, duplicate: outcome.duplicate === true };
  }

  private renderProblem(problem: ApiProblem, req: WriteRequest): Rendered {
    const headers: Record<string, string> = { ...problem.headers, 'X-Error-Code': problem.code };
    return { status: problem.status, headers, body: problemBody(problem, req.instance, req.correlationId) as Record<string, unknown>, duplicate: false };
  }

  private stored(rendered: Rendered): StoredResponse {
    return { status: rendered.status, headers: rendered.headers, body: JSON.stringify(rendered.body) };
  }

  private answer(rendered: Rendered, idempotencyStatus: IdempotencyStatus): WriteResponse {
    return { status: rendered.status, headers: rendered.headers, body: rendered.body, idempotencyStatus };
  }

  /** A recording of an earlier response. Problem documents get this request's correlation id. */
  private replay(stored: StoredResponse, req: WriteRequest): WriteResponse {
    const body = JSON.parse(stored.body) as Record<string, unknown>;
    if (stored.status >= 400 && typeof body.correlationId === 'string' && body.correlationId !== req.correlationId) {
      body.originalCorrelationId = body.correlationId;
      body.correlationId = req.correlationId;
    }
    return { status: stored.status, headers: { ...stored.headers }, body, idempotencyStatus: 'replayed' };
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
