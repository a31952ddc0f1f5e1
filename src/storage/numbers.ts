import type { Knex } from 'knex';
import type { Engine } from './database';
import { toDbTime } from './db-time';

/**
 * Record and reference numbers (`numseq`, one counter per name; the name of a table's record
 * number counter is the table name: `lgrtrn`, `acpinv`, `jobcst`, `lgrbal`).
 *
 * Documents get their numbers OUTSIDE the posting transaction, in a statement of their own
 * that commits at once, like a SQL Server identity: a posting that rolls back (a dry run, a
 * 422 found late, a crash) leaves a permanent gap, on every engine, and concurrent postings
 * never wait on each other's counter row for longer than one statement.
 *
 * `allocateIn(trx, ...)` allocates inside a transaction instead (numbers that are not reference
 * numbers, such as the record number of a new ledger balance row, roll back with it).
 *
 * Reserved blocks (`blockSize` > 1, NUMBER_BLOCK_SIZE): a committed allocation takes at least
 * `blockSize` numbers of a counter at once and hands the rest out from memory to this process's
 * next postings, as SQL Server's identity cache does. A posting then pays no statement and no
 * commit of its own for its numbers most of the time (decision 0033: the numseq UPDATE and its
 * commit were the costliest statement of a journal). Numbers are still never reused: a
 * block is committed before any of it is handed out and every number is handed out once. What
 * changes: the numbers left in a block when the process stops are permanent gaps (the spec allows
 * gaps: dry runs and rollbacks leave them already), and with several processes on one database
 * numbers are unique but no longer ascending in posting order across processes (each draws from
 * its own block). A range that does not fit in what is left of the block takes a new block; the
 * rest of the old one is a gap.
 */
export interface NumberRange {
  first: number;
  count: number;
}

/**
 * The counter whose record number a unique violation says is taken already: the table of a
 * `<table>_recnum_uq` index (PostgreSQL's constraint, SQL Server's index name in its message) or
 * of SQLite's `UNIQUE constraint failed: <table>.recnum`. A row inserted by another program after
 * this process checked the counter (`sync`) does not advance it, so the numbers it hands out next
 * may be in the table already: the caller re-checks the counter (`resync`) and tries again.
 */
export function collidedCounter(err: unknown): string | undefined {
  for (let e: any = err, depth = 0; e && depth < 5; e = e.cause, depth += 1) {
    const text = `${typeof e.constraint === 'string' ? e.constraint : ''} ${String(e.message ?? '')}`;
    const m = /\b([a-z][a-z0-9_]*)_recnum_uq\b/.exec(text) ?? /UNIQUE constraint failed: ([a-z][a-z0-9_]*)\.recnum\b/.exec(text);
    if (m) return m[1];
  }
  return undefined;
}

export function rangeValues(range: NumberRange): number[] {
  return Array.from({ length: range.count }, (_, i) => range.first + i);
}

export class NumberAllocator {
  /** Counters checked against max(recnum) of their table since start. */
  private readonly synced = new Set<string>();
  /** Per counter: the committed numbers not handed out yet, [next, end). */
  private readonly reserved = new Map<string, { next: number; end: number }>();

  constructor(
    protected readonly knex: Knex,
    protected readonly engine: Engine,
    private readonly blockSize = 1,
  ) {}

  /** The allocator of one dry run's posting (DryRunNumbers, below). */
  forDryRun(): DryRunNumbers {
    return new DryRunNumbers(this, this.knex, this.engine);
  }

  /**
   * `count` numbers of `name`, committed, straight from the counter (never from a reserved block):
   * what a transaction that rolled back had taken from it, when nobody took numbers since.
   */
  async takeExactly(name: string, count: number): Promise<NumberRange> {
    if (count <= 0) return { first: 0, count: 0 };
    if (!this.synced.has(name)) {
      await this.knex.transaction((trx) => this.sync(trx, name));
      this.synced.add(name);
    }
    return this.bump(this.knex, name, count);
  }

  /** Forgets every reserved number (they become gaps): the next allocation reads the counter again. */
  discardReserved(): void {
    this.reserved.clear();
  }

  /**
   * Checks `name` against max(recnum) of its table again at its next allocation, and drops what is
   * left of its reserved block (a gap): some of those numbers are taken (collidedCounter).
   */
  resync(name: string): void {
    this.synced.delete(name);
    this.reserved.delete(name);
  }

  /** `count` numbers of `name` from the reserved block, or undefined when it has not that many left. */
  private fromReserved(name: string, count: number): NumberRange | undefined {
    const block = this.reserved.get(name);
    if (!block || block.end - block.next < count) return undefined;
    const range = { first: block.next, count };
    block.next += count;
    return range;
  }

  /** Of a committed range of `taken` numbers, hands out the first `count` and keeps the rest. */
  private keep(name: string, taken: NumberRange, count: number): NumberRange {
    if (taken.count > count) this.reserved.set(name, { next: taken.first + count, end: taken.first + taken.count });
    else this.reserved.delete(name);
    return { first: taken.first, count };
  }

  /** Allocates `count` consecutive numbers of `name`, committed (in a statement of their own unless reserved already). */
  async allocate(name: string, count: number): Promise<NumberRange> {
    if (count <= 0) return { first: 0, count: 0 };
    const ready = this.fromReserved(name, count);
    if (ready) return ready;
    if (!this.synced.has(name)) {
      await this.knex.transaction((trx) => this.sync(trx, name));
      this.synced.add(name);
    }
    const take = Math.max(count, this.blockSize);
    return this.keep(name, await this.bump(this.knex, name, take), count);
  }

  /**
   * Allocates from several counters in ONE committed statement (a posting that needs an invoice,
   * a journal and job cost numbers pays one round trip and one commit for all of them).
   */
  async allocateMany(counts: Record<string, number>): Promise<Record<string, NumberRange>> {
    const out: Record<string, NumberRange> = {};
    for (const n of Object.keys(counts)) out[n] = { first: 0, count: 0 };
    const names: string[] = [];
    for (const n of Object.keys(counts)) {
      if ((counts[n] ?? 0) <= 0) continue;
      const ready = this.fromReserved(n, counts[n]!);
      if (ready) out[n] = ready;
      else names.push(n);
    }
    if (names.length === 0) return out;
    if (names.length === 1) {
      out[names[0]!] = await this.allocate(names[0]!, counts[names[0]!]!);
      return out;
    }
    const unsynced = names.filter((n) => !this.synced.has(n));
    if (unsynced.length > 0) {
      await this.knex.transaction(async (trx) => {
        for (const n of unsynced) await this.sync(trx, n);
      });
      for (const n of unsynced) this.synced.add(n);
    }
    const bindings: Array<string | number> = [];
    const take = (n: string) => Math.max(counts[n]!, this.blockSize);
    const whens = names.map((n) => {
      bindings.push(n, take(n));
      return 'WHEN ? THEN ?';
    });
    const rows: Array<{ name: string; next_value: number | string }> = await this.knex('numseq')
      .whereIn('name', names)
      .update({ next_value: this.knex.raw(`next_value + CASE name ${whens.join(' ')} ELSE 0 END`, bindings), upddte: toDbTime(this.engine, new Date()) }, ['name', 'next_value']);
    for (const row of rows) {
      const taken = take(row.name);
      out[row.name] = this.keep(row.name, { first: Number(row.next_value) - taken, count: taken }, counts[row.name]!);
    }
    for (const n of names) if (out[n]!.count === 0) out[n] = await this.allocate(n, counts[n]!);
    return out;
  }

  /** Allocates inside `trx` (rolled back with it). */
  async allocateIn(trx: Knex.Transaction, name: string, count: number): Promise<NumberRange> {
    if (count <= 0) return { first: 0, count: 0 };
    if (!this.synced.has(name)) {
      await this.sync(trx, name);
      // Checked once per process like the other counters, but only once the check has committed:
      // a rolled-back transaction (a dry run, a refusal) proves nothing about the counter.
      trx.executionPromise.then(
        () => this.synced.add(name),
        () => undefined,
      );
    }
    return this.bump(trx, name, count);
  }

  protected async bump(db: Knex | Knex.Transaction, name: string, count: number): Promise<NumberRange> {
    const now = toDbTime(this.engine, new Date());
    const rows: Array<{ next_value: number | string }> = await db('numseq')
      .where({ name })
      .update({ next_value: db.raw('next_value + ?', [count]), upddte: now }, ['next_value']);
    const row = rows[0];
    if (!row) {
      // Counter created by someone else meanwhile, or not at all: create it and retry once.
      if ((db as Knex.Transaction).isTransaction) await this.sync(db, name);
      else await this.knex.transaction((trx) => this.sync(trx, name));
      const again: Array<{ next_value: number | string }> = await db('numseq')
        .where({ name })
        .update({ next_value: db.raw('next_value + ?', [count]), upddte: now }, ['next_value']);
      if (!again[0]) throw new Error(`numseq counter ${name} could not be created`);
      return { first: Number(again[0].next_value) - count, count };
    }
    return { first: Number(row.next_value) - count, count };
  }

  /**
   * Makes sure the counter exists and is past every record number of its table (rows inserted
   * by the seed or by the accounting system itself do not advance it).
   */
  private async sync(trx: Knex | Knex.Transaction, name: string): Promise<void> {
    let maxUsed = 0;
    if (/^[a-z][a-z0-9_]*$/.test(name) && (await trx.schema.hasTable(name))) {
      const row = await trx(name).max<{ m: number | string | null }>({ m: 'recnum' }).first();
      maxUsed = Number(row?.m ?? 0);
    }
    const existing = await trx('numseq').where({ name }).first();
    if (!existing) {
      if (this.engine === 'mssql') {
        await trx('numseq').insert({ name, next_value: maxUsed + 1 });
      } else {
        await trx('numseq').insert({ name, next_value: maxUsed + 1 }).onConflict('name').ignore();
      }
    }
    await trx('numseq')
      .where({ name })
      .where('next_value', '<=', maxUsed)
      .update({ next_value: maxUsed + 1 });
  }
}

/**
 * The record numbers of a dry run (spec, Writes rule 7: its identifiers are provisional and never
 * exist; reference numbers and identity values are still consumed, leaving permanent gaps).
 * Numbers taken before the posting transaction are committed already (`allocate`,
 * `allocateMany`: passed on to the service's allocator). Those a cascade takes INSIDE the
 * transaction (`allocateIn`: inventory histories under their part locks, payroll job and
 * equipment costs, new quantity, average-cost and balance rows) roll back with the dry run and
 * would be handed to the next real posting. So once the dry run's transaction has rolled back,
 * `consume` takes the same counts of the same counters in statements of their own, which commit
 * (the dry run holds no lock by then: a counter row another posting holds is waited for, and that
 * posting waits for nothing of the dry run's). When another posting took some of the shown numbers
 * in between, what `consume` took differs from what the answer shows: the dry run is made again
 * (runner.ts `dryRun`) with `again()`, which hands the cascade the numbers `consume` took, already
 * committed, instead of drawing: an answer only ever shows numbers that are consumed.
 *
 * Not chosen (both tried): taking the numbers again in the dry run's own transaction after a
 * savepoint's rollback (PostgreSQL keeps the savepoint's advisory locks, and the counter rows the
 * transaction then holds made new deadlocks with real postings); committing them on a second
 * connection while the transaction holds its locks (postings waiting for those locks can hold every
 * connection of the pool: the pool itself deadlocked).
 */
export class DryRunNumbers extends NumberAllocator {
  /** Numbers the cascade took in its transaction, in order. */
  private readonly drawn: Array<{ name: string; range: NumberRange }> = [];
  /** What `consume` took, by counter, in order: handed out by the next attempt (`again`). */
  private readonly taken = new Map<string, NumberRange[]>();

  constructor(
    private readonly committed: NumberAllocator,
    knex: Knex,
    engine: Engine,
    /** Committed numbers to hand out first, by counter, in order (a range per allocateIn of that count). */
    private readonly given = new Map<string, NumberRange[]>(),
  ) {
    super(knex, engine);
  }

  override allocate(name: string, count: number): Promise<NumberRange> {
    return this.committed.allocate(name, count);
  }

  override allocateMany(counts: Record<string, number>): Promise<Record<string, NumberRange>> {
    return this.committed.allocateMany(counts);
  }

  override async allocateIn(trx: Knex.Transaction, name: string, count: number): Promise<NumberRange> {
    const ready = this.given.get(name);
    if (ready?.[0]?.count === count) return ready.shift()!;
    const range = await super.allocateIn(trx, name, count);
    if (range.count > 0) this.drawn.push({ name, range });
    return range;
  }

  /**
   * After the dry run's transaction rolled back: takes, committed, the counts `allocateIn` drew in
   * it; true when every counter gave the very numbers shown (nothing to do again).
   */
  async consume(): Promise<boolean> {
    let same = true;
    for (const { name, range } of this.drawn) {
      const took = await this.committed.takeExactly(name, range.count);
      if (took.first !== range.first) same = false;
      this.taken.set(name, [...(this.taken.get(name) ?? []), took]);
    }
    return same;
  }

  /** The next attempt's numbers: what `consume` took, handed out in the same order. */
  again(): DryRunNumbers {
    return new DryRunNumbers(this.committed, this.knex, this.engine, this.taken);
  }
}
