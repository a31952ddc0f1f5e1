/**
 * Reference rows a posting reads (ledger setup, fiscal periods, ledger accounts, transaction
 * sources, vendors, jobs, job phases, cost codes, cost types, equipment), cached across requests
 * and never stale: every read goes through a posting transaction, which first reads the reference
 * change counter (table `refchg`, one row, bumped by triggers on those tables in the very
 * transaction that changes them, whoever makes the change: this service, another instance, the
 * desktop system, a DBA; migrations 20261124000041_reference_change_counter,
 * 20261126000001_reference_counter_vendors_jobs, 20261126000002_reference_counter_cost_codes_phases).
 * No posting writes any of them, so postings do not empty the cache. Rows are used only by a
 * transaction that read the counter value they were cached under; a higher value drops everything, a lower one (a
 * transaction that started before a change it does not see) reads the database directly.
 *
 * Why a trigger-kept counter on SQLite too, not `PRAGMA data_version`: data_version moves only
 * when *another* connection commits, so a change made through this process's own connection (one
 * connection on SQLite) would go unseen; the counter sees every change, on every engine, at the
 * cost of one primary-key read per posting (instead of three or four reference reads), a scalar
 * subquery of the posting's lock fence statement (`fenceRider`), so no statement of its own.
 */
import type { Knex } from 'knex';
import type { FenceRider } from './lock-fence';

/**
 * Columns cached per table (recnum first); a caller asking for others bypasses the cache. The key
 * (`_idnum`) last: a cached value that cannot be read names its record (docs/decisions/0370).
 */
export const CACHED_COLUMNS = {
  lgract: ['recnum', 'inactv', 'acttyp', 'subtyp', '_idnum'],
  source: ['recnum', 'inactv', '_idnum'],
  actpay: ['recnum', 'inactv', 'dftact', 'dftcde', 'dfttyp', 'duedys', 'shtnme', 'vndnme', '_idnum'],
  actrec: ['recnum', 'status', '_idnum'],
  csttyp: ['recnum', 'inactv', '_idnum'],
  eqpmnt: ['recnum', '_idnum'],
} as const;

export type CachedTable = keyof typeof CACHED_COLUMNS;

/**
 * Tables cached by another key than recnum, as lists of rows per key (`grouped`): cost codes by
 * their code, job phases by their job. Their columns are the caller's read.
 */
export type GroupedTable = 'cstcde' | 'jobphs';

const MAX_ROWS_PER_TABLE = 100_000;

const FISCAL_COLUMNS = ['postyr', 'actprd', 'sttdte', 'enddte', 'status'] as const;

interface State {
  version: number;
  setup?: Promise<{ setup: Record<string, any> | undefined; fiscal: Array<Record<string, any>> }>;
  /** Rows by table and key (recnum, or a GroupedTable's key); an empty list: no such row. */
  groups: Map<CachedTable | GroupedTable, Map<string, ReadonlyArray<Record<string, any>>>>;
}

/** `rows` as lists by `keyOf(row)`, in their order. */
export function groupRows(rows: ReadonlyArray<Record<string, any>>, keyOf: (row: Record<string, any>) => string): Map<string, Array<Record<string, any>>> {
  const out = new Map<string, Array<Record<string, any>>>();
  for (const row of rows) {
    const key = keyOf(row);
    const list = out.get(key);
    if (list) list.push(row);
    else out.set(key, [row]);
  }
  return out;
}

/** The counter as a scalar subquery (null without the row: not migrated, never cache). */
export const COUNTER_SUBQUERY = '(select n from refchg where id = 1)';

function counterValue(n: unknown): number {
  return n === null || n === undefined ? -1 : Number(n);
}

export class ReferenceCache {
  private state: State = { version: -1, groups: new Map() };
  private readonly versions = new WeakMap<Knex.Transaction, Promise<number>>();
  /** Counter reads and cache hits/misses (tests and the bench read them). */
  readonly stats = { versionReads: 0, hits: 0, misses: 0 };

  /** The counter as `trx` sees it, read once per transaction. */
  version(trx: Knex.Transaction): Promise<number> {
    let v = this.versions.get(trx);
    if (!v) {
      this.stats.versionReads += 1;
      v = trx('refchg')
        .where({ id: 1 })
        .first('n')
        .then((row: { n: number | string } | undefined) => counterValue(row?.n));
      this.versions.set(trx, v);
    }
    return v;
  }

  /** Whether `trx` has read the counter already (or had it handed over by adoptVersion). */
  hasVersion(trx: Knex.Transaction): boolean {
    return this.versions.has(trx);
  }

  /**
   * The counter as read by another statement of `trx` (COUNTER_SUBQUERY in its select list):
   * named-locks.ts reads it with the transaction's first lock, one round trip instead of two.
   */
  adoptVersion(trx: Knex.Transaction, n: unknown): void {
    if (this.versions.has(trx)) return;
    this.stats.versionReads += 1;
    this.versions.set(trx, Promise.resolve(counterValue(n)));
  }

  /**
   * The counter read along with the lock fence, the posting transaction's first statement
   * (storage/lock-fence.ts FenceRider): no statement of its own. Undefined when `trx` has it already.
   */
  fenceRider(trx: Knex.Transaction): FenceRider | undefined {
    if (this.versions.has(trx)) return undefined;
    return { sql: COUNTER_SUBQUERY, take: (n) => this.adoptVersion(trx, n) };
  }

  /** The state valid for `trx`, or undefined when `trx` sees an older counter (read directly then). */
  private async stateFor(trx: Knex.Transaction): Promise<State | undefined> {
    const version = await this.version(trx);
    if (version < 0) return undefined; // no counter row: not migrated, never cache
    if (version > this.state.version) this.state = { version, groups: new Map() };
    return version === this.state.version ? this.state : undefined;
  }

  /** The first ledger-setup row (every column) and every fiscal-periods row. */
  async postingSetup(trx: Knex.Transaction): Promise<{ setup: Record<string, any> | undefined; fiscal: Array<Record<string, any>> }> {
    const load = async () => ({
      setup: (await trx('lgrstp').orderBy('recnum').first()) as Record<string, any> | undefined,
      fiscal: (await trx('fscprd').select(...FISCAL_COLUMNS)) as Array<Record<string, any>>,
    });
    const state = await this.stateFor(trx);
    if (!state) return load();
    if (state.setup) this.stats.hits += 1;
    else {
      this.stats.misses += 1;
      const pending = load();
      state.setup = pending;
      pending.catch(() => {
        if (state.setup === pending) delete state.setup;
      });
    }
    return state.setup!;
  }

  /**
   * Rows of `table` by recnum (as string keys), only those that exist, with the cached columns.
   * Same answer as `trx(table).whereIn('recnum', ids).select(CACHED_COLUMNS[table])`.
   */
  async rows(trx: Knex.Transaction, table: CachedTable, ids: ReadonlyArray<string | number>): Promise<Map<string, Record<string, any>>> {
    const columns = CACHED_COLUMNS[table];
    const read = async (keys: string[]) => {
      const found: Array<Record<string, any>> = [];
      for (let i = 0; i < keys.length; i += 1000) found.push(...((await trx(table).whereIn('recnum', keys.slice(i, i + 1000)).select(...columns)) as Array<Record<string, any>>));
      return found;
    };
    const byId = await this.grouped(trx, table, ids.map(String), (row) => String(row.recnum), read);
    const out = new Map<string, Record<string, any>>();
    for (const [id, list] of byId) if (list[0]) out.set(id, list[0]);
    return out;
  }

  /**
   * Rows of `table` grouped by `keyOf(row)`, for the `wanted` keys: `read(keys)` reads the rows of
   * the keys not cached yet (every row of those keys, with the columns the caller needs, the same
   * columns every time). A key without rows is remembered as an empty list, so a flood of unknown
   * keys is bounded like the rest (MAX_ROWS_PER_TABLE keys a table).
   */
  async grouped(
    trx: Knex.Transaction,
    table: CachedTable | GroupedTable,
    wanted: readonly string[],
    keyOf: (row: Record<string, any>) => string,
    read: (keys: string[]) => Promise<Array<Record<string, any>>>,
  ): Promise<Map<string, ReadonlyArray<Record<string, any>>>> {
    const keys = [...new Set(wanted)];
    if (keys.length === 0) return new Map();
    const state = await this.stateFor(trx);
    if (!state) return groupRows(await read(keys), keyOf);
    let cached = state.groups.get(table);
    if (!cached || cached.size > MAX_ROWS_PER_TABLE) state.groups.set(table, (cached = new Map()));
    const missing = keys.filter((k) => !cached!.has(k));
    if (missing.length === 0) this.stats.hits += 1;
    else {
      this.stats.misses += 1;
      const found = groupRows(await read(missing), keyOf);
      for (const key of missing) cached.set(key, found.get(key) ?? []);
    }
    const out = new Map<string, ReadonlyArray<Record<string, any>>>();
    for (const key of keys) out.set(key, cached.get(key)!);
    return out;
  }
}
