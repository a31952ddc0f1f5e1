import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { Dec } from './decimal';
import type { Dialect } from './dialect';
import { classifyChangedCell, guardedChange, outermost, rememberChangedCells, type ColumnBound, type UnstorableCell } from './computed-changes';
import type { NumberAllocator } from './numbers';
import { StatementBatch } from './statement-batch';
import { compiledInsert } from './compiled-statements';

/**
 * Ledger balances (lgrbal: debit and credit totals per account, fiscal year and period), added
 * to by every posting that writes a journal.
 *
 * ONE upsert per posting, correct under concurrency on every engine:
 *   PostgreSQL, SQLite  INSERT ... ON CONFLICT (lgract, postyr, actprd) DO UPDATE SET dbttot = lgrbal.dbttot + excluded.dbttot, ...
 *   SQL Server          MERGE ... WITH (HOLDLOCK), one statement per row, sent as one batch
 * Rows go in (account, year, period) order, so two postings touching the same balances take
 * their row locks in the same order and never deadlock on them.
 *
 * Record numbers: a new row needs a `recnum` (unique). A plain read first tells which rows do
 * not exist yet; only then are numbers taken from the `lgrbal` counter inside the transaction
 * (the counter row is locked before any balance row, and only by postings that create a row:
 * the first posting to an account in a period). A row predicted missing that another posting
 * created meanwhile is simply added to (ON CONFLICT / MATCHED); its number is a gap, which is
 * harmless. A row predicted present carries its own record number, so should it ever be
 * missing (rows are never deleted) the insert fails on NOT NULL/unique instead of inventing one.
 * Earlier code read the existing rows between an UPDATE and an INSERT: under READ COMMITTED the
 * read could see rows just committed by another posting and the insert became empty (a 500).
 */

export interface BalanceChange {
  account: number;
  year: number;
  period: number;
  debit: Dec;
  credit: Dec;
  /**
   * The request field behind the change (`lines[2]`), named should the cell's total be pushed past
   * its column (docs/decisions/0441): a cell keeps its first change's.
   */
  field?: string;
}

/** The largest magnitude a debit total and a credit total hold (the catalog's column types, through the engine's limits). */
export interface BalanceBounds {
  debit: Dec;
  credit: Dec;
}

export interface BalanceWriteOptions {
  dialect: Dialect;
  numbers: NumberAllocator;
  /** updusr / insusr (30 characters). */
  user: string;
  /** upddte, in the engine's form. */
  now: Date | string;
  /** Past these, a total is refused (NULL in the upsert) rather than stored or overflowing. */
  bounds: BalanceBounds;
}

/** One row of the upsert: the sums of a balance cell and the record number used should it be new. */
export interface BalanceUpsertRow {
  id: string;
  recordNumber: number;
  account: number;
  year: number;
  period: number;
  debit: Dec;
  credit: Dec;
}

const MONEY_SCALE = 2;
/** SQL Server accepts 2,100 parameters per batch; a row of the MERGE takes 11. */
const MSSQL_ROWS_PER_BATCH = 150;
/** Insert rows per statement on PostgreSQL / SQLite (9 parameters a row). */
const ROWS_PER_INSERT = 200;

const cellKey = (account: number, year: number, period: number) => `${account}/${year}/${period}`;

/** Sums the changes per balance cell, in lock order (account, year, period). */
export function sumBalanceChanges(changes: readonly BalanceChange[]): BalanceChange[] {
  const cells = new Map<string, BalanceChange>();
  for (const c of changes) {
    const key = cellKey(c.account, c.year, c.period);
    const cell = cells.get(key);
    if (cell) {
      cell.debit = cell.debit.plus(c.debit);
      cell.credit = cell.credit.plus(c.credit);
    } else {
      cells.set(key, { account: c.account, year: c.year, period: c.period, debit: new Dec(c.debit), credit: new Dec(c.credit), ...(c.field !== undefined ? { field: c.field } : {}) });
    }
  }
  return [...cells.values()].sort((a, b) => a.account - b.account || a.year - b.year || a.period - b.period);
}

/**
 * Balance cells known to exist, per database (keyed by its NumberAllocator: one per service and
 * database), cell -> record number. A cell row is never deleted by the service, and its record
 * number never changes (the upsert does not touch recnum), so once a committed row was seen its
 * prediction "present, this record number" stays true; the pre-read above is then skipped (one
 * statement less per posting). Only rows read by a transaction that then COMMITTED are remembered:
 * a cell created inside a transaction that rolls back (a dry run, a refusal) must not be predicted
 * present, or a later posting would insert it under a record number the rollback gave back. Cells
 * created by other processes are simply not known yet: the read runs, as before. Should a row ever
 * be deleted from outside, the upsert re-creates it under its old record number (unique: numbers
 * are never handed out twice), which is what the read would have led to as well, with a new number.
 */
const KNOWN_CELLS_MAX = 20_000;
const knownCells = new WeakMap<object, Map<string, number>>();

function knownCellsOf(owner: object): Map<string, number> {
  let cells = knownCells.get(owner);
  if (!cells) {
    cells = new Map();
    knownCells.set(owner, cells);
  }
  return cells;
}

/** Remembers `seen` once `trx` has committed (knex resolves executionPromise on COMMIT, rejects on rollback). */
function rememberAfterCommit(trx: Knex.Transaction, known: Map<string, number>, seen: ReadonlyArray<[string, number]>): void {
  // A savepoint's promise settles at its release: the outermost transaction's commit is what counts.
  const committed = (outermost(trx) as { executionPromise?: Promise<unknown> }).executionPromise;
  if (!committed) return;
  committed.then(
    () => {
      if (known.size + seen.length > KNOWN_CELLS_MAX) known.clear();
      for (const [key, recnum] of seen) known.set(key, recnum);
    },
    () => undefined,
  );
}

/** Forgets the cells known to exist (tests that delete balance rows by hand). */
export function forgetKnownBalanceCells(owner: object): void {
  knownCells.delete(owner);
}

/** Adds the changes to lgrbal, creating the cells that do not exist yet. */
export async function addToLedgerBalances(trx: Knex.Transaction, changes: readonly BalanceChange[], options: BalanceWriteOptions): Promise<void> {
  const batch = new StatementBatch(trx);
  await queueLedgerBalances(batch, changes, options);
  await batch.flush();
}

/**
 * addToLedgerBalances with the upsert queued in `batch` (sent with the posting's other writes:
 * statement-batch.ts). The pre-read and the record numbers still run at once, on the batch's
 * transaction: queued inserts of other tables cannot change what they see, and a cell that a
 * queued upsert of this same transaction creates is handled by ON CONFLICT / MATCHED like a cell
 * another posting created (see the top of this file).
 */
export async function queueLedgerBalances(batch: StatementBatch, changes: readonly BalanceChange[], options: BalanceWriteOptions): Promise<void> {
  const { trx } = batch;
  const cells = sumBalanceChanges(changes);
  if (cells.length === 0) return;
  // Should the upsert be refused for a total that holds no decimal or that it would push past its
  // column (addedUnlessNotStored), these cells are read again to name it (storage/computed-changes.ts).
  rememberChangedCells(trx, { set: 'ledger-balances', table: 'lgrbal', columns: ['dbttot', 'crdtot'], unstorable: (db, notStored, dialect) => unstorableBalanceCells(db, notStored, dialect, cells, options.bounds) });

  // Which cells exist (a plain read: it only decides how many record numbers to take). Cells this
  // process has seen committed are known without the read (knownCellsOf).
  const known = knownCellsOf(options.numbers);
  const existing = new Map<string, number>();
  const byPeriod = new Map<string, { year: number; period: number; accounts: number[] }>();
  for (const c of cells) {
    const key = cellKey(c.account, c.year, c.period);
    const recnum = known.get(key);
    if (recnum !== undefined) {
      existing.set(key, recnum);
      continue;
    }
    const k = `${c.year}/${c.period}`;
    const group = byPeriod.get(k) ?? { year: c.year, period: c.period, accounts: [] };
    group.accounts.push(c.account);
    byPeriod.set(k, group);
  }
  const seen: Array<[string, number]> = [];
  for (const g of byPeriod.values()) {
    const rows: Array<{ lgract: number | string; recnum: number | string }> = await trx('lgrbal')
      .where({ postyr: g.year, actprd: g.period })
      .whereIn('lgract', g.accounts)
      .select('lgract', 'recnum');
    for (const r of rows) {
      const key = cellKey(Number(r.lgract), g.year, g.period);
      existing.set(key, Number(r.recnum));
      seen.push([key, Number(r.recnum)]);
    }
  }
  if (seen.length > 0) rememberAfterCommit(trx, known, seen);
  const missing = cells.filter((c) => !existing.has(cellKey(c.account, c.year, c.period))).length;
  const range = await options.numbers.allocateIn(trx, 'lgrbal', missing);
  let next = range.first;
  const rows: BalanceUpsertRow[] = cells.map((c) => ({
    id: randomUUID(),
    recordNumber: existing.get(cellKey(c.account, c.year, c.period)) ?? next++,
    account: c.account,
    year: c.year,
    period: c.period,
    debit: c.debit,
    credit: c.credit,
  }));
  for (const statement of ledgerBalanceUpserts(trx, options, rows)) batch.add({ query: statement });
}

/**
 * The upsert statements for the rows (already in lock order), for the engine of `db`. Exported
 * so that the SQL Server form can be compiled and checked without a server.
 */
export function ledgerBalanceUpserts(db: Knex | Knex.Transaction, options: Pick<BalanceWriteOptions, 'dialect' | 'user' | 'now' | 'bounds'>, rows: readonly BalanceUpsertRow[]): Array<Knex.Raw | Knex.QueryBuilder> {
  const { dialect, user, now, bounds } = options;
  const debitBound: ColumnBound = { max: bounds.debit, scale: MONEY_SCALE };
  const creditBound: ColumnBound = { max: bounds.credit, scale: MONEY_SCALE };
  const money = (v: Dec) => dialect.encodeDecimal(v, MONEY_SCALE);
  const out: Array<Knex.Raw | Knex.QueryBuilder> = [];
  if (dialect.engine === 'mssql') {
    // Past the bound the total is NULL, refused by 515 (as a NOT NULL column), named after the
    // rollback like PostgreSQL's and SQLite's (guardedChange); 8115 (overflow) would name no cell.
    const added = (column: 'dbttot' | 'crdtot', bound: ColumnBound) => guardedChange(db, dialect, `t.${column}`, '?? + ??', [`t.${column}`, `s.${column}`], bound).toString();
    const setDebit = added('dbttot', debitBound);
    const setCredit = added('crdtot', creditBound);
    for (let i = 0; i < rows.length; i += MSSQL_ROWS_PER_BATCH) {
      const chunk = rows.slice(i, i + MSSQL_ROWS_PER_BATCH);
      const bindings: unknown[] = [];
      const statements = chunk.map((r) => {
        bindings.push(r.account, r.year, r.period, money(r.debit), money(r.credit), r.recordNumber, r.id, now, user, user, user);
        return (
          'MERGE INTO [lgrbal] WITH (HOLDLOCK) AS t ' +
          'USING (VALUES (?, ?, ?, CAST(? AS DECIMAL(14,2)), CAST(? AS DECIMAL(14,2)), ?, ?)) AS s ([lgract], [postyr], [actprd], [dbttot], [crdtot], [recnum], [_idnum]) ' +
          'ON t.[lgract] = s.[lgract] AND t.[postyr] = s.[postyr] AND t.[actprd] = s.[actprd] ' +
          `WHEN MATCHED THEN UPDATE SET [dbttot] = ${setDebit}, [crdtot] = ${setCredit}, [upddte] = ?, [updusr] = ? ` +
          'WHEN NOT MATCHED THEN INSERT ([_idnum], [recnum], [lgract], [postyr], [actprd], [dbttot], [crdtot], [insusr], [updusr]) ' +
          'VALUES (s.[_idnum], s.[recnum], s.[lgract], s.[postyr], s.[actprd], s.[dbttot], s.[crdtot], ?, ?);'
        );
      });
      out.push(db.raw(statements.join('\n'), bindings as Knex.RawBinding[]));
    }
    return out;
  }
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const chunk = rows.slice(i, i + ROWS_PER_INSERT).map((r) => ({
      _idnum: r.id,
      recnum: r.recordNumber,
      lgract: r.account,
      postyr: r.year,
      actprd: r.period,
      dbttot: money(r.debit),
      crdtot: money(r.credit),
      upddte: now,
      insusr: user,
      updusr: user,
    }));
    // Compiled once per number of rows (storage/compiled-statements.ts): the clause below never
    // changes (its identifiers are part of the text, not bindings).
    out.push(
      compiledInsert('upsert lgrbal adding debits and credits', chunk, () =>
        db('lgrbal')
          .insert(chunk)
          .onConflict(['lgract', 'postyr', 'actprd'])
          .merge({
            dbttot: addedUnlessNotStored(db, dialect, 'dbttot', debitBound),
            crdtot: addedUnlessNotStored(db, dialect, 'crdtot', creditBound),
            upddte: db.raw('??', ['excluded.upddte']),
            updusr: db.raw('??', ['excluded.updusr']),
          }),
      ),
    );
  }
  return out;
}

/**
 * `lgrbal.<column> + excluded.<column>`, or NULL when the stored total is no decimal as this
 * engine stores one (another program wrote text or a fraction on SQLite, NaN or an infinity on
 * PostgreSQL: SQLite's + would read the text as 0 and overwrite it with an invented total,
 * PostgreSQL's NaN would swallow the amounts), or when the sum lies beyond the column (PostgreSQL
 * would refuse it without naming the cell, SQLite store it: docs/decisions/0441). The column is
 * NOT NULL, so the NULL refuses the whole statement, in the same round trip as before: the posting
 * rolls back and the refusal is named after the fact (unstorableBalanceCells below;
 * docs/decisions/0390). SQL Server's MERGE above carries the same CASE.
 */
function addedUnlessNotStored(db: Knex | Knex.Transaction, dialect: Dialect, column: 'dbttot' | 'crdtot', bound: ColumnBound): Knex.Raw {
  const stored = `lgrbal.${column}`;
  return guardedChange(db, dialect, stored, '?? + ??', [stored, `excluded.${column}`], bound);
}

/** Accounts per read of unstorableBalanceCells (one parameter each). */
const ACCOUNTS_PER_READ = 500;

/**
 * The cells of `cells` (queued by one queueLedgerBalances) whose stored dbttot / crdtot is no
 * decimal as this engine stores one (the upsert's own test), or one the queued addition would push
 * past `bounds`, in lock order, debit before credit; each row with its key, account, year and
 * period, and the first change's request field. Read after the rollback through `db`
 * (storage/computed-changes.ts unstorableChangedCells).
 */
async function unstorableBalanceCells(db: Knex, notStored: (column: string) => Knex.Raw, dialect: Dialect, cells: readonly BalanceChange[], bounds: BalanceBounds): Promise<UnstorableCell[]> {
  const queued = new Map(cells.map((c) => [cellKey(c.account, c.year, c.period), c]));
  const byPeriod = new Map<string, { year: number; period: number; accounts: number[] }>();
  for (const c of cells) {
    const k = `${c.year}/${c.period}`;
    const group = byPeriod.get(k) ?? { year: c.year, period: c.period, accounts: [] };
    group.accounts.push(c.account);
    byPeriod.set(k, group);
  }
  const out: UnstorableCell[] = [];
  for (const g of byPeriod.values()) {
    for (let i = 0; i < g.accounts.length; i += ACCOUNTS_PER_READ) {
      const rows: Array<Record<string, unknown>> = await db('lgrbal')
        .where({ postyr: g.year, actprd: g.period })
        .whereIn('lgract', g.accounts.slice(i, i + ACCOUNTS_PER_READ))
        .select('_idnum', 'lgract', 'postyr', 'actprd', 'dbttot', 'crdtot', notStored('dbttot'), notStored('crdtot'))
        .orderBy('lgract');
      for (const row of rows) {
        const change = queued.get(cellKey(Number(row.lgract), g.year, g.period));
        if (!change) continue;
        for (const column of ['dbttot', 'crdtot'] as const) {
          const added = column === 'dbttot' ? change.debit : change.credit;
          const bound: ColumnBound = { max: column === 'dbttot' ? bounds.debit : bounds.credit, scale: MONEY_SCALE };
          const why = classifyChangedCell(dialect, row[column], row[`${column}_not_stored`], bound, (stored) => stored.plus(added));
          if (!why) continue;
          out.push({ set: 'ledger-balances', table: 'lgrbal', column, raw: row[column], row: { _idnum: row._idnum, lgract: Number(row.lgract), postyr: Number(row.postyr), actprd: Number(row.actprd) }, ...why, ...(change.field !== undefined ? { field: change.field } : {}) });
        }
      }
    }
  }
  const n = (c: UnstorableCell, column: string) => c.row[column] as number;
  return out.sort((a, b) => n(a, 'lgract') - n(b, 'lgract') || n(a, 'postyr') - n(b, 'postyr') || n(a, 'actprd') - n(b, 'actprd'));
}
