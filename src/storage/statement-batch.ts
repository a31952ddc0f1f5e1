import type { Knex } from 'knex';
import type { Engine } from './database';
import { engineOf } from './dialect';
import { compiledJoint } from './compiled-statements';

/**
 * Writes of one transaction, queued and sent with fewer statements (issue 13). On PostgreSQL each
 * statement is a round trip, and on this kind of machine each costs both processes a system call
 * or two (about 0.2 ms of the service's CPU a statement under load). A statement whose result
 * nobody reads (the balance upsert) therefore rides along with the next write that RETURNs rows,
 * as a data-modifying CTE of that statement:
 *
 *   WITH "w0" AS (insert into lgrbal ... on conflict ... do update ...) INSERT INTO lgtnln ... RETURNING ...
 *
 * PostgreSQL runs a data-modifying CTE exactly once and to completion whether or not the outer
 * statement reads it, with the same snapshot as the outer statement; so only writes that do not
 * read each other's rows are queued together: inserts of new rows and the balance upsert (ON
 * CONFLICT sees committed and same-statement rows alike). Constraint checks and triggers run as
 * for separate statements; a failure fails the statement, and with it the posting's transaction.
 *
 * Tried and dropped: every queued write in ONE statement, each RETURNING read back through a LEFT
 * JOIN of the CTEs (decision 0044). It saved round trips with one connection,
 * but the wide, mostly-null result rows and the larger statement cost more CPU than the round
 * trips saved, and with 8 connections throughput fell.
 *
 * SQLite runs in-process (no round trip) and SQL Server's RETURNING is an OUTPUT into a temporary
 * table per statement: there the queued statements simply run one after another, in order.
 *
 * Queued results are lazy: awaiting one sends everything queued so far (in queue order, but for
 * the riders), so code that awaits each write at once behaves exactly as before, and code that
 * queues several writes before awaiting any lets them share statements. No write can be
 * forgotten: the write runner flushes the batch before the transaction completes (runner.ts).
 */

export type BatchRow = Record<string, unknown>;

export interface BatchStatement {
  query: Knex.QueryBuilder | Knex.Raw;
  /** The columns the statement RETURNs (in this order), or none: the statement returns nothing read. */
  returning?: readonly string[];
}

/** PostgreSQL's limit is 65,535 parameters a statement; a batch stays well under it. */
const PG_MAX_BINDINGS_PER_STATEMENT = 30_000;

const noop = () => undefined;

interface Queued {
  statement: BatchStatement;
  resolve(rows: BatchRow[]): void;
  reject(err: unknown): void;
}

/** The rows a queued statement returned, once the batch holding it was sent (awaiting sends it). */
export class Pending<T> implements PromiseLike<T> {
  constructor(
    private readonly batch: StatementBatch,
    private readonly settled: Promise<T>,
  ) {
    // A failed flush rejects every queued statement; the caller that awaited gets the error,
    // the others must not surface as unhandled rejections (the transaction fails as a whole).
    settled.catch(noop);
  }

  then<A = T, B = never>(onFulfilled?: ((value: T) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return this.batch.flush().then(() => this.settled).then(onFulfilled, onRejected);
  }

  /** A lazy result derived from this one (still sent with the batch when awaited). */
  map<U>(fn: (value: T) => U): Pending<U> {
    return new Pending(this.batch, this.settled.then(fn));
  }

  /** Several queued results as one (awaiting it sends the batch once). */
  static all<T extends readonly Pending<unknown>[]>(batch: StatementBatch, parts: T): Pending<{ [K in keyof T]: T[K] extends Pending<infer U> ? U : never }> {
    return new Pending(batch, Promise.all(parts.map((p) => p.settled)) as Promise<never>);
  }
}

export class StatementBatch {
  private queue: Queued[] = [];
  private sending: Promise<void> = Promise.resolve();
  private readonly engine: Engine;

  constructor(readonly trx: Knex.Transaction) {
    this.engine = engineOf(trx as unknown as Knex);
  }

  /** Queues a statement; its RETURNING rows (or [] without `returning`) when the batch is sent. */
  add(statement: BatchStatement): Pending<BatchRow[]> {
    let resolve!: (rows: BatchRow[]) => void;
    let reject!: (err: unknown) => void;
    const settled = new Promise<BatchRow[]>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.queue.push({ statement, resolve, reject });
    return new Pending(this, settled);
  }

  /** Statements queued and not sent yet. */
  get pending(): number {
    return this.queue.length;
  }

  /** Sends everything queued (in order, after any send under way); resolves when all have run. */
  flush(): Promise<void> {
    if (this.queue.length === 0) return this.sending;
    const items = this.queue;
    this.queue = [];
    const send = this.sending.then(() => this.send(items));
    // A failed send fails its own statements (rejected below) and whoever awaits this flush;
    // a later flush still runs after it (the transaction will be rolled back by then anyway).
    this.sending = send.catch(noop);
    return send;
  }

  private async send(items: Queued[]): Promise<void> {
    try {
      if (this.engine === 'postgres') await this.sendWithRiders(items);
      else for (const item of items) item.resolve(returned(item, await item.statement.query));
    } catch (err) {
      for (const item of items) item.reject(err);
      throw err;
    }
  }

  /**
   * PostgreSQL: the writes that return rows run in order; those that return nothing ride along
   * with the last of them (see the top of this file), within the parameter budget.
   */
  private async sendWithRiders(items: Queued[]): Promise<void> {
    const carriers = items.filter((item) => isCarrier(item));
    const riders = items.filter((item) => !isCarrier(item));
    const last = carriers.at(-1);
    for (const item of carriers) {
      if (item !== last) item.resolve(returned(item, await item.statement.query));
    }
    if (!last) {
      for (const item of riders) item.resolve(returned(item, await item.statement.query));
      return;
    }
    const carried = last.statement.query.toSQL();
    const ctes: string[] = [];
    const bindings: unknown[] = [];
    const aboard: Queued[] = [];
    let budget = PG_MAX_BINDINGS_PER_STATEMENT - carried.bindings.length;
    for (const rider of riders) {
      const compiled = rider.statement.query.toSQL();
      if (compiled.bindings.length > budget) {
        rider.resolve(returned(rider, await rider.statement.query));
        continue;
      }
      budget -= compiled.bindings.length;
      ctes.push(`"w${ctes.length}" as (${compiled.sql})`);
      bindings.push(...compiled.bindings);
      aboard.push(rider);
    }
    if (ctes.length === 0) {
      last.resolve(returned(last, await last.statement.query));
      return;
    }
    const sql = `with ${ctes.join(', ')} ${carried.sql}`;
    const all = [...bindings, ...carried.bindings];
    // Statements compiled once (compiled-statements.ts) make a joint statement of a known shape: compiled once too.
    const joint = compiledJoint(this.trx.raw(sql, all as Knex.RawBinding[]), [...aboard.map((rider) => rider.statement.query), last.statement.query], all);
    last.resolve(rowsOf(await joint));
    for (const rider of aboard) rider.resolve([]);
  }
}

/** A write whose RETURNING rows are read (it can carry the others). */
function isCarrier(item: Queued): boolean {
  return (item.statement.returning?.length ?? 0) > 0;
}

/** What a statement sent alone hands its writer: its RETURNING rows, or none without `returning` (SQLite's insert answers its last row id). */
function returned(item: Queued, result: unknown): BatchRow[] {
  return item.statement.returning && item.statement.returning.length > 0 ? rowsOf(result) : [];
}

/** The rows of a statement's result, whatever the driver hands back (pg: { rows }, others: an array). */
function rowsOf(result: unknown): BatchRow[] {
  if (Array.isArray(result)) return result as BatchRow[];
  if (result && typeof result === 'object' && Array.isArray((result as { rows?: unknown }).rows)) return (result as { rows: BatchRow[] }).rows;
  return [];
}
