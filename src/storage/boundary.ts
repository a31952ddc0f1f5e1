import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { ApiProblem } from '../errors/problem';
import type { Engine } from './database';

/**
 * The on-premise boundary: every read and write of the books reaches the database through
 * here, under a deadline (config.dbDeadlineMs). Two things happen at this one place:
 *
 *   - the deadline: work that has not settled when it passes answers 504 UPSTREAM_TIMEOUT.
 *     The work itself is not cancelled (a posting transaction may still commit later); the
 *     caller can observe its late outcome through `onLate` (the write engine uses that to
 *     record the real result under the Idempotency-Key).
 *   - the mapping of driver errors: the database refusing (constraint, deadlock, permission,
 *     dropped or refused connection) becomes 502 DATABASE_REFUSED, never 500. Anything else
 *     (a bug, a missing table) stays unexpected and becomes a redacted 500.
 */

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

export interface BoundaryCall<T> {
  /** Absolute deadline (Date.now() ms); defaults to now + dbDeadlineMs. */
  deadlineAt?: number;
  /** What is being done, for the 504 detail and the log ("posting", "reading ledger-accounts"). */
  what?: string;
  /** Called once with the outcome when the work settles after the deadline has already answered 504. */
  onLate?: (outcome: Settled<T>) => void;
}

/** Why a driver error is a refusal; `undefined` when it is not a database refusal. */
export type RefusalReason = 'constraint' | 'deadlock' | 'permission' | 'connection' | 'busy' | 'resources';

const PG_CLASS: Record<string, RefusalReason> = {
  '08': 'connection', // connection exception
  '23': 'constraint', // integrity constraint violation
  '40': 'deadlock', // transaction rollback: serialization failure, deadlock
  '53': 'resources', // insufficient resources
  '57': 'connection', // operator intervention: admin shutdown, cannot connect now, query canceled
  '58': 'resources', // system error (I/O)
};

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'ESOCKET', 'ECONNCLOSED', 'EAI_AGAIN']);
const MSSQL_NUMBERS: Record<number, RefusalReason> = {
  2627: 'constraint', // unique constraint
  2601: 'constraint', // unique index
  547: 'constraint', // foreign key / check
  515: 'constraint', // null into not null
  1205: 'deadlock',
  1222: 'busy', // lock request time out
  229: 'permission',
  230: 'permission',
  262: 'permission',
  4060: 'connection', // cannot open database
  18456: 'permission', // login failed
};

/**
 * Classifies a driver error, per engine, in this one place. Returns the refusal reason, or
 * undefined when the error is not the database refusing (then it is unexpected: 500).
 */
export function classifyDatabaseError(err: unknown, engine: Engine): RefusalReason | undefined {
  const e = err as Record<string, any> | null;
  if (!e || typeof e !== 'object') return undefined;
  const message = String(e.message ?? '');
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && NETWORK_CODES.has(code)) return 'connection';
  if (/Unable to acquire a connection|Connection terminated|connection is closed|Client has encountered a connection error|terminating connection/i.test(message)) {
    return 'connection';
  }
  if (e.name === 'KnexTimeoutError') return 'busy';
  switch (engine) {
    case 'sqlite': {
      if (!code || !code.startsWith('SQLITE_')) return undefined;
      if (code.startsWith('SQLITE_CONSTRAINT')) return 'constraint';
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy';
      if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_PERM') || code.startsWith('SQLITE_AUTH')) return 'permission';
      if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_NOTADB')) return 'connection';
      if (/^SQLITE_(IOERR|FULL|CORRUPT|NOMEM|PROTOCOL)/.test(code)) return 'resources';
      return undefined;
    }
    case 'postgres': {
      if (!code || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
      if (code === '42501') return 'permission';
      if (code === '55P03') return 'busy'; // lock not available
      return PG_CLASS[code.slice(0, 2)];
    }
    case 'mssql': {
      const number = typeof e.number === 'number' ? e.number : typeof e.originalError?.info?.number === 'number' ? e.originalError.info.number : undefined;
      if (number !== undefined && MSSQL_NUMBERS[number]) return MSSQL_NUMBERS[number];
      if (code === 'ETIMEOUT') return 'connection';
      if (code === 'ELOGIN') return 'permission';
      return undefined;
    }
    default:
      return undefined;
  }
}

const REFUSAL_TEXT: Record<RefusalReason, string> = {
  constraint: 'a constraint of the accounting database was violated',
  deadlock: 'the accounting database chose this transaction as a deadlock or serialization victim',
  permission: 'the accounting database denied permission',
  connection: 'the connection to the accounting database was refused or dropped',
  busy: 'the accounting database was busy (lock or connection not available)',
  resources: 'the accounting database ran out of resources',
};

/** ApiProblem 502 for a refusal, the ApiProblem itself, or undefined (unexpected). */
export function toDatabaseProblem(err: unknown, engine: Engine): ApiProblem | undefined {
  if (err instanceof ApiProblem) return err;
  const reason = classifyDatabaseError(err, engine);
  if (!reason) return undefined;
  return new ApiProblem('DATABASE_REFUSED', `The request was not applied: ${REFUSAL_TEXT[reason]}. Retry with backoff.`, {
    extensions: { refusal: reason },
  });
}

export class DeadlineExceeded extends Error {
  constructor(readonly what: string) {
    super(`deadline exceeded: ${what}`);
    this.name = 'DeadlineExceeded';
  }
}

export function upstreamTimeout(what: string, write: boolean): ApiProblem {
  return new ApiProblem(
    'UPSTREAM_TIMEOUT',
    write
      ? `The accounting database did not answer in time (${what}); the outcome of the write is unknown. Retry with the same Idempotency-Key only.`
      : `The accounting database did not answer in time (${what}).`,
  );
}

export interface BoundaryDeps {
  knex: Knex;
  engine: Engine;
  logger: Logger;
  deadlineMs: number;
  /** 423 problem while the database is locked for maintenance (its pool is gone), else undefined. */
  lockedProblem?: () => ApiProblem | undefined;
}

export class Boundary {
  constructor(private readonly deps: BoundaryDeps) {}

  get knex(): Knex {
    return this.deps.knex;
  }

  get engine(): Engine {
    return this.deps.engine;
  }

  get deadlineMs(): number {
    return this.deps.deadlineMs;
  }

  /** Absolute deadline for work starting now. */
  deadlineFromNow(ms: number = this.deps.deadlineMs): number {
    return Date.now() + ms;
  }

  /**
   * Runs `work` under the deadline. Resolves with its value; rejects with DeadlineExceeded when
   * the deadline passes first (the work keeps running: `onLate` sees its outcome), with a 502
   * ApiProblem when the database refused, or with the original error otherwise.
   */
  async within<T>(work: () => Promise<T>, call: BoundaryCall<T> = {}): Promise<T> {
    const what = call.what ?? 'database call';
    const deadlineAt = call.deadlineAt ?? this.deadlineFromNow();
    const remaining = deadlineAt - Date.now();
    if (remaining <= 0) throw new DeadlineExceeded(what);
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const running = work();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new DeadlineExceeded(what));
      }, remaining);
    });
    try {
      return await Promise.race([running, timeout]);
    } catch (err) {
      if (err instanceof DeadlineExceeded && timedOut) {
        running.then(
          (value) => call.onLate?.({ ok: true, value }),
          (error) => {
            if (call.onLate) call.onLate({ ok: false, error });
            else this.deps.logger.warn({ err: error, what }, 'late database work failed after its deadline');
          },
        );
        throw err;
      }
      throw this.mapError(err);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** A read (or any statement outside a posting transaction) under the deadline; a timeout is 504. */
  async read<T>(fn: (db: Knex) => Promise<T>, call: BoundaryCall<T> = {}): Promise<T> {
    try {
      return await this.within(() => fn(this.deps.knex), call);
    } catch (err) {
      if (err instanceof DeadlineExceeded) throw upstreamTimeout(err.what, false);
      throw err;
    }
  }

  /** One transaction under the deadline (DeadlineExceeded is passed through for the write engine). */
  transaction<T>(fn: (trx: Knex.Transaction) => Promise<T>, call: BoundaryCall<T> = {}): Promise<T> {
    return this.within(() => this.deps.knex.transaction((trx) => fn(trx)), call);
  }

  /** Driver error -> 502 ApiProblem; ApiProblem and unexpected errors unchanged. */
  mapError(err: unknown): unknown {
    return this.problemFor(err) ?? err;
  }

  /** The problem a failure answers with (ApiProblem as is, refusals 502, 423 while locked), or undefined when unexpected. */
  problemFor(err: unknown): ApiProblem | undefined {
    const problem = toDatabaseProblem(err, this.deps.engine);
    // A request that slipped past the gate while the lock dropped the pool: report the lock.
    if (problem?.code === 'DATABASE_REFUSED') return this.deps.lockedProblem?.() ?? problem;
    return problem;
  }
}
