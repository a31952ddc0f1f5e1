import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import type { Knex } from 'knex';
import { ApiProblem } from '../../errors/problem';
import { columnsUnavailable } from '../../catalog/installed';
import { busyRefusal, type Boundary, type Settled } from '../../storage/boundary';
import type { Dialect } from '../../storage/dialect';
import { sendableAtBegin, type BeginStatement, type StatementAtBegin } from '../../storage/database';
import type { RecordsContext } from './records';
import { NumberAllocator, collidedCounter } from '../../storage/numbers';
import { toDbTime } from '../../storage/db-time';
import { lockAtBegin, namedLocksFor } from '../../storage/named-locks';
import { IdempotencyProtocol, NothingPosted, type Answer, type Attempt, type Rendered } from '../idempotency/protocol';
import type { IdempotencyStore } from '../idempotency/store';
import type { ReferenceCache } from '../../storage/reference-cache';
import { StatementBatch } from '../../storage/statement-batch';
import type { PostingContext, PostingHooks, ReadAhead } from './context';
import type { InstalledColumns } from '../../catalog/installed';
import { resultFieldsUnavailable } from './needs';
import { refusedChangeProblem } from './records/refused-change';

/**
 * The rules every write shares, built once (spec, Writes). The runner composes a write:
 *
 *   prepare (pure, no database)      400s here are decided before dispatch: the key is not consumed
 *   allocate                         reference and record numbers, outside the posting transaction
 *   post                             the cascade, in one transaction under the deadline
 *   dry run                          the whole cascade in a savepoint that is rolled back; the record
 *                                    numbers it showed are consumed all the same (DryRunNumbers)
 *
 * Everything about the Idempotency-Key (claim, in flight, replay, reused, unknown after a 504,
 * late settlement, purge) is the idempotency protocol's (src/engines/idempotency/protocol.ts):
 * the runner hands it the execution and records its answer in the posting transaction through
 * `attempt.complete`.
 */

export interface WriteDefinition<I, A, R> {
  /** Route of the write, part of the fingerprint: `/ledger-transactions`. */
  route: string;
  /** For messages: "posting a journal". */
  what: string;
  /** The write cannot be made safe without a key (POST /purchase-order-receipts): a missing key is 400 (dry runs excepted). */
  requireKey?: boolean;
  /** Pure checks and parsing; ApiProblem 400 here does not consume the key. */
  prepare(body: unknown): I;
  /**
   * The name `post` locks first (ctx.lockName), known from the input alone: taken by the posting
   * transaction's BEGIN where the engine can (PostgreSQL: in the round trip of BEGIN and the lock
   * fence), so the lockName call in `post` then costs nothing. What `post` reads after it still
   * runs after the lock is held, in a statement of its own (see allocateAndPost).
   */
  firstLock?(input: I): string;
  /**
   * The read `post` makes right after taking `firstLock` (the duplicate-number read: a RecordQuery's
   * `firstStatement`, built on `records`): run by BEGIN as a statement after the lock's
   * (PostgreSQL: in its round trip; SQLite: on the connection, without a knex statement), its rows
   * handed to the `first()` in `post` of exactly that statement (aheadAtBegin).
   */
  firstRead?(records: RecordsContext, input: I): { sql: string; bindings: readonly unknown[] };
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

/** The answer of a write, with its Idempotency-Status. */
export type WriteResponse = Answer;

export interface WriteRunnerDeps {
  boundary: Boundary;
  /** Reference rows cached across postings (src/storage/reference-cache.ts); absent: read each time. */
  references?: ReferenceCache;
  dialect: Dialect;
  numbers: NumberAllocator;
  store: IdempotencyStore;
  logger: Logger;
  hooks: PostingHooks;
  /** Retry-After of IDEMPOTENCY_KEY_IN_FLIGHT. */
  inFlightRetryAfterSeconds: number;
  /** Whether the database is locked (no purge then). */
  isLocked: () => boolean;
  /**
   * First statement of every posting transaction: throws 423 when the maintenance lock is recorded,
   * and holds the lock's fence until the transaction ends (storage/lock-fence.ts), so a posting
   * never commits after a lock was recorded. `atBegin`: the fence statement of `fenceAtBegin`,
   * given to the transaction's BEGIN, which reads it on the engines that can (then no statement here).
   */
  recheckLock?: (trx: PostingContext['trx'], atBegin?: BeginStatement) => Promise<void>;
  /** The fence statement for a posting transaction's BEGIN (a new one each transaction); absent: read by recheckLock. */
  fenceAtBegin?: () => BeginStatement;
  /** Giving back the claim of a write the lock turned away, served while the lock closes the pool. */
  cleanup?: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Minimum time between two opportunistic purges of expired records. */
  purgeEveryMs: number;
  /** Lifetime of an idempotency record (IDEMPOTENCY_TTL_HOURS). */
  ttlMs: number;
  /** Completed records kept in memory for replays without a database trip. */
  recentCapacity?: number;
  /** What the installed build of the accounting database lacks (src/storage/installed-schema.ts); absent: nothing. */
  installed?: InstalledColumns;
}

/** Carries a dry run's answer out of its transaction, which throwing rolls back. */
class DryRunRollback extends Error {
  constructor(readonly rendered: Rendered) {
    super('dry run: rolled back');
  }
}

/** A dry run is made again at most this many times when other postings take the numbers it showed (DryRunNumbers.settle). */
const MAX_DRY_RUN_ATTEMPTS = 5;

/** A posting re-checks at most this many counters whose numbers were taken outside the service (then 502 as before). */
const MAX_COUNTER_RESYNCS = 3;

export class WriteRunner {
  private readonly idempotency: IdempotencyProtocol;
  private readonly lockName: (trx: PostingContext['trx'], name: string) => Promise<void>;

  constructor(private readonly deps: WriteRunnerDeps) {
    this.lockName = namedLocksFor(deps.boundary.engine, deps.references);
    this.idempotency = new IdempotencyProtocol({
      boundary: deps.boundary,
      store: deps.store,
      logger: deps.logger,
      inFlightRetryAfterSeconds: deps.inFlightRetryAfterSeconds,
      isLocked: deps.isLocked,
      purgeEveryMs: deps.purgeEveryMs,
      ttlMs: deps.ttlMs,
      ...(deps.recentCapacity !== undefined ? { recentCapacity: deps.recentCapacity } : {}),
      ...(deps.cleanup ? { cleanup: deps.cleanup } : {}),
    });
  }

  /** The idempotency store in use (tests replace it with a failing one). */
  get store(): IdempotencyStore {
    return this.idempotency.store;
  }

  set store(store: IdempotencyStore) {
    this.idempotency.store = store;
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
    // Before any SQL (no key claimed, no number taken): a result the installed build cannot give.
    const unavailable = resultFieldsUnavailable(def.route, this.deps.installed);
    if (unavailable) throw columnsUnavailable(unavailable, def.what);
    const deadlineAt = this.deps.boundary.deadlineFromNow();
    return this.idempotency.withIdempotency(
      {
        route: req.route,
        instance: req.instance,
        correlationId: req.correlationId,
        scope: req.apiKeyId,
        ...(req.idempotencyKey !== undefined ? { key: req.idempotencyKey } : {}),
        dryRun: req.dryRun,
        body: req.body,
        what: def.what,
        deadlineAt,
      },
      (attempt) => this.execute(def, input, req, deadlineAt, attempt),
    );
  }

  /**
   * allocate, then post in one transaction (rolled back for a dry run). With an attempt, the
   * answer is recorded under the key inside that transaction, right before it commits.
   */
  private async execute<I, A, R>(def: WriteDefinition<I, A, R>, input: I, req: WriteRequest, deadlineAt: number, attempt?: Attempt): Promise<Rendered> {
    if (attempt) await this.deps.hooks.afterClaim?.({ route: def.route, key: attempt.key });
    const resynced = new Set<string>();
    for (;;) {
      try {
        return await this.allocateAndPost(def, input, req, deadlineAt, attempt);
      } catch (err) {
        // A record number taken by a row another program inserted since this process checked the
        // counter: nothing was written (the transaction rolled back), so re-check that counter and
        // post again with fresh numbers, once per counter (docs/decisions/0041-record-numbers-taken-outside-the-service.md). The key's claim is still this attempt's.
        const counter = collidedCounter(err);
        if (!counter || resynced.has(counter) || resynced.size >= MAX_COUNTER_RESYNCS) throw err;
        resynced.add(counter);
        this.deps.numbers.resync(counter);
        this.deps.logger.warn({ counter, route: def.route }, 'record number already taken by a row inserted outside the service: counter re-checked, posting retried');
      }
    }
  }

  private async allocateAndPost<I, A, R>(def: WriteDefinition<I, A, R>, input: I, req: WriteRequest, deadlineAt: number, attempt?: Attempt): Promise<Rendered> {
    let numbers: A;
    try {
      numbers = await this.deps.boundary.within(() => def.allocate(input, this.deps.numbers), { deadlineAt, what: 'allocating numbers' });
    } catch (err) {
      throw new NothingPosted(err);
    }
    const fence = this.deps.recheckLock ? this.deps.fenceAtBegin?.() : undefined;
    const ahead = fence ? this.aheadAtBegin(def, input, fence) : undefined;
    let posting: Knex.Transaction | undefined;
    try {
      if (req.dryRun) return await this.dryRun(def, input, numbers, req, deadlineAt, fence, ahead?.lock);
      return await this.deps.boundary.transaction<Rendered>(
        async (trx) => {
          posting = trx;
          await this.deps.recheckLock?.(trx, fence);
          const ctx = this.context(trx, req, fence?.thenSent ? ahead?.lock : undefined);
          const rows = ahead?.read && fence?.thenSent ? fence.thenRows?.[ahead.read.index] : undefined;
          if (ahead?.read && rows) {
            ctx.readAhead = { sql: ahead.read.sql, bindings: ahead.read.bindings, rows };
            // Valid for the posting's first statement only: any statement sent before it drops it.
            trx.once('query', () => (ctx.readAhead = undefined));
          }
          const outcome = await def.post(ctx, input, numbers);
          await sendQueuedWrites(ctx);
          const rendered = renderResult(outcome, false);
          await this.deps.hooks.beforeCommit?.({ route: def.route, dryRun: false, trx });
          await attempt?.complete(trx, rendered);
          return rendered;
        },
        { deadlineAt, what: def.what, ...(attempt ? { onLate: (late: Settled<Rendered>) => this.settleNamed(late, () => posting, attempt.settleLate) } : {}), ...(fence ? { begin: fence } : {}) },
      );
    } catch (err) {
      // A computed change of the posting was refused (a ledger balance, a received total, a
      // quantity on order holding another program's non-decimal value, or pushed past its
      // column): the transaction rolled back; named here for every write and dry run.
      throw await this.named(err, posting);
    }
  }

  /**
   * A posting's outcome after its request answered 504, passed on as the answer in time would have
   * been: a refused computed change is named (STORED_VALUE_UNREADABLE, or the 422 of a total pushed
   * past its column) rather than recorded under the key as the bare NOT NULL refusal's 502.
   */
  private settleNamed(late: Settled<Rendered>, posting: () => Knex.Transaction | undefined, settle: (outcome: Settled<Rendered>) => void): void {
    if (late.ok) return settle(late);
    this.named(late.error, posting()).then(
      (error) => settle({ ok: false, error }),
      () => settle(late),
    );
  }

  /**
   * A posting's failure as it is answered: a computed change the database refused (a stored value
   * that is no decimal, a total pushed past its column) named by its cell (records/refused-change.ts);
   * any other failure as it is.
   */
  private async named(err: unknown, posting: Knex.Transaction | undefined): Promise<unknown> {
    return (await refusedChangeProblem(err, this.deps.boundary, this.deps.dialect, posting)) ?? err;
  }

  /**
   * A dry run: the whole cascade in a transaction that is rolled back, then the record numbers the
   * cascade took inside it are consumed in statements of their own (storage/numbers.ts
   * DryRunNumbers: spec, Writes rule 7, a dry run's numbers never come to exist). When another
   * posting took some of them in between, the answer would show numbers that exist: the dry run is
   * made again on the numbers consumed, at most MAX_DRY_RUN_ATTEMPTS times (then 502
   * DATABASE_REFUSED, busy).
   */
  private async dryRun<I, A, R>(def: WriteDefinition<I, A, R>, input: I, numbers: A, req: WriteRequest, deadlineAt: number, fence: BeginStatement | undefined, firstLock: string | undefined): Promise<Rendered> {
    let drawn = this.deps.numbers.forDryRun();
    for (let attempt = 1; attempt <= MAX_DRY_RUN_ATTEMPTS; attempt += 1) {
      let rendered: Rendered | undefined;
      let posting: Knex.Transaction | undefined;
      try {
        await this.deps.boundary.transaction(
          async (trx) => {
            posting = trx;
            // The fence and the first lock ride the first attempt's BEGIN only; a later one reads the lock itself.
            const atBegin = attempt === 1 ? fence : undefined;
            await this.deps.recheckLock?.(trx, atBegin);
            const ctx: PostingContext = { ...this.context(trx, req, atBegin?.thenSent ? firstLock : undefined), numbers: drawn };
            const outcome = await def.post(ctx, input, numbers);
            await sendQueuedWrites(ctx);
            const result = renderResult(outcome, true);
            await this.deps.hooks.beforeCommit?.({ route: def.route, dryRun: true, trx });
            throw new DryRunRollback(result);
          },
          { deadlineAt, what: def.what, ...(fence && attempt === 1 ? { begin: fence } : {}) },
        );
      } catch (err) {
        if (!(err instanceof DryRunRollback)) throw await this.named(err, posting);
        rendered = err.rendered;
      }
      assert(rendered, 'a dry run always rolls back');
      await this.deps.hooks.dryRunRolledBack?.({ route: def.route, attempt });
      if (await this.deps.boundary.within(() => drawn.consume(), { deadlineAt, what: `consuming the record numbers of a dry run (${def.what})` })) return rendered;
      this.deps.logger.info({ route: def.route, attempt }, 'dry run made again: another posting took record numbers it showed');
      drawn = drawn.again();
    }
    throw busyRefusal(`${def.what}: the record numbers of a dry run were taken by other postings ${MAX_DRY_RUN_ATTEMPTS} times`);
  }

  /**
   * What a posting's BEGIN runs after its fence (database.ts BeginStatement `then`): the first named
   * lock, then the read `post` makes right after it, each a statement of its own. PostgreSQL: in
   * BEGIN's round trip; SQLite: no lock to take (BEGIN IMMEDIATE excludes every other writer), the
   * read on the connection without a knex statement; SQL Server: nothing, `post` sends both as
   * before. The read is NOT folded into the fence's or the lock's statement: under READ COMMITTED
   * a statement sees what committed before the statement began, so a read in the statement that
   * waits for the lock would miss the document the lock's previous holder committed meanwhile (a
   * number posted twice). As a later statement it begins once the lock is held, and sees it, as
   * it did as a round trip of its own.
   */
  private aheadAtBegin<I, A, R>(
    def: WriteDefinition<I, A, R>,
    input: I,
    fence: BeginStatement,
  ): { lock: string; read?: Omit<ReadAhead, 'rows'> & { index: number } } | undefined {
    if (!def.firstLock) return undefined;
    const { engine, knex } = this.deps.boundary;
    const lock = def.firstLock(input);
    const taken = lockAtBegin(engine, lock);
    if (!taken) return undefined;
    const then: StatementAtBegin[] = taken.statement ? [taken.statement] : [];
    const read = def.firstRead?.({ trx: knex as unknown as Knex.Transaction, dialect: this.deps.dialect, now: '', user: '' }, input);
    const index = then.length;
    if (read && sendableAtBegin(engine, read.bindings)) then.push(read);
    if (then.length === 0) return undefined;
    fence.then = then;
    return then.length > index ? { lock, read: { ...read!, index } } : { lock };
  }

  /**
   * Runs a write's whole path once (prepare, allocate, post) in ONE transaction that is always
   * rolled back, for the start-up warm-up (src/warm-up.ts): V8 compiles the posting path and knex
   * its builders before the first request instead of during it. Unlike a dry run, the numbers are
   * allocated inside that transaction from a throwaway allocator bound to it, so no number is
   * burnt and this process's reserved blocks are untouched; there is no Idempotency-Key, no
   * idempotency record and no hook. Resolves when rolled back; rejects with what the posting
   * threw (a 422 on a database without the example's references, for one), or DeadlineExceeded
   * after `deadlineMs` (default: the database deadline; the transaction still rolls back).
   */
  async rehearse<I, A, R>(def: WriteDefinition<I, A, R>, body: unknown, deadlineMs?: number): Promise<void> {
    const input = def.prepare(body);
    const req: WriteRequest = { route: def.route, instance: def.route, correlationId: 'warm-up', apiKeyId: 'warm-up', apiKeyName: 'warm-up', dryRun: true, body };
    try {
      await this.deps.boundary.transaction(
        async (trx) => {
          const numbers = new NumberAllocator(trx, this.deps.boundary.engine);
          const allocated = await def.allocate(input, numbers);
          const ctx: PostingContext = { ...this.context(trx, req), numbers, rehearsal: true };
          const outcome = await def.post(ctx, input, allocated);
          await sendQueuedWrites(ctx);
          throw new DryRunRollback(renderResult(outcome, true));
        },
        { what: `rehearsing ${def.what}`, deadlineAt: this.deps.boundary.deadlineFromNow(deadlineMs) },
      );
    } catch (err) {
      if (err instanceof DryRunRollback) return;
      throw err;
    }
  }

  /** `heldAtBegin`: a name the transaction's BEGIN locked already (allocateAndPost). */
  private context(trx: PostingContext['trx'], req: WriteRequest, heldAtBegin?: string): PostingContext {
    const now = new Date();
    return {
      trx,
      writes: new StatementBatch(trx),
      lockName: (name) => (name === heldAtBegin ? Promise.resolve() : this.lockName(trx, name)),
      dialect: this.deps.dialect,
      numbers: this.deps.numbers,
      user: `api:${req.apiKeyName}`.slice(0, 30),
      today: now.toISOString().slice(0, 10),
      now: toDbTime(this.deps.boundary.engine, now),
      dryRun: req.dryRun,
      ...(this.deps.references ? { references: this.deps.references } : {}),
      ...(this.deps.installed ? { installed: this.deps.installed } : {}),
    };
  }
}

/**
 * A cascade awaits what it writes, so its queue is empty by now; should one ever leave a write
 * queued and not awaited, it is sent here, inside the transaction, before anything completes:
 * a write is never dropped, and a failure still fails the posting.
 */
async function sendQueuedWrites(ctx: PostingContext): Promise<void> {
  await ctx.writes.flush();
}

function renderResult<R>(outcome: PostOutcome<R>, dryRun: boolean): Rendered {
  const body = { ...(outcome.result as Record<string, unknown>), dryRun };
  return { status: 200, headers: {}, body, duplicate: outcome.duplicate === true };
}
