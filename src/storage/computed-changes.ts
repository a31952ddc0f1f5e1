import type { Knex } from 'knex';
import type { Dialect } from './dialect';
import type { Engine } from './database';
import { notNullRefusal } from './boundary';

/**
 * Changes the database computes from the stored value (`col + ?`, a ledger balance's
 * `lgrbal.dbttot + excluded.dbttot`, `col - ?` down to zero) never read that value in the service:
 * one that is no decimal as this engine stores one (another program's text or fraction on SQLite,
 * NaN or an infinity on PostgreSQL) would be taken as 0 or its numeric prefix, or swallow the
 * amount. Each such change therefore yields NULL for it (`unlessNotStored`), the columns it changes
 * are NOT NULL, and the NULL refuses the statement in the round trip it always took (no read
 * first). The refusal says the column, not the row: each transaction remembers here which cells
 * its computed changes touched (by the outermost transaction: a cascade may change them in a
 * savepoint), and on that failure only, after the rollback, `unstorableChangedCells` reads them
 * again with the same predicate to name the one (docs/decisions/0390, 0391).
 */

/** A cell a computed change met that holds no decimal as this engine stores one. */
export interface UnstorableCell {
  /** Whose cells: the name the registrant gave (opaque here: the engines' published set name). */
  set: string;
  table: string;
  column: string;
  /** The stored value as the driver returned it. */
  raw: unknown;
  /** The row's other columns the registrant selected (its key, its parent's key, ...). */
  row: Record<string, unknown>;
}

/** Cells a computed change touched: which table and columns, and how to read them again. */
export interface ChangedCells {
  set: string;
  table: string;
  columns: readonly string[];
  /**
   * The cells among them whose column holds no decimal as this engine stores one (`notStored`
   * builds the test of a column, `1` when so, aliased `<column>_not_stored`), read through `db`
   * after the rollback, in the registrant's order.
   */
  unstorable(db: Knex, notStored: (column: string) => Knex.Raw): Promise<UnstorableCell[]>;
}

const changedIn = new WeakMap<Knex.Transaction, ChangedCells[]>();

/** The transaction `trx` is a savepoint of (itself when it is none). */
export function outermost(trx: Knex.Transaction): Knex.Transaction {
  type Transactor = { parentTransaction?: Transactor };
  let outer = trx as unknown as Transactor;
  while (outer.parentTransaction) outer = outer.parentTransaction;
  return outer as unknown as Knex.Transaction;
}

/** Remembers, for `trx`'s outermost transaction, cells a computed change is about to touch. */
export function rememberChangedCells(trx: Knex.Transaction, cells: ChangedCells): void {
  const outer = outermost(trx);
  const known = changedIn.get(outer);
  if (known) known.push(cells);
  else changedIn.set(outer, [cells]);
}

/**
 * `expression` (SQL with knex bindings, naming `column`), or NULL when the stored value of
 * `column` is no decimal as this engine stores one. `column` as the statement names it
 * (`lgrbal.dbttot` in an upsert). SQL Server's decimal holds no such value: the test is never true.
 */
export function unlessNotStored(db: Knex | Knex.Transaction, dialect: Dialect, column: string, expression: string, bindings: readonly Knex.RawBinding[]): Knex.Raw {
  return db.raw(`CASE WHEN ${dialect.decimalNotStored} THEN NULL ELSE ${expression} END`, [column, ...bindings]);
}

/**
 * What `trx` (its outermost transaction), refused with `err`, changed by a computed change in the
 * column the refusal names: undefined when `err` is no NOT NULL refusal of such a column (any
 * other failure: nothing is read then).
 */
export function refusedChange(err: unknown, engine: Engine, trx: Knex.Transaction): { column: string; cells: ChangedCells[] } | undefined {
  const refused = notNullRefusal(err, engine);
  if (!refused) return undefined;
  const cells = (changedIn.get(outermost(trx)) ?? []).filter((c) => (refused.table === undefined || refused.table === c.table) && c.columns.includes(refused.column));
  return cells.length > 0 ? { column: refused.column, cells } : undefined;
}

/**
 * The cells of a refusedChange that hold no decimal as this engine stores one, the refused
 * column's first, then in the registrants' order: [] when none does any more (another program
 * corrected it in between). Read through `db`, after the rollback (a failed PostgreSQL
 * transaction reads nothing more).
 */
export async function unstorableChangedCells(refused: { column: string; cells: readonly ChangedCells[] }, db: Knex, dialect: Dialect): Promise<UnstorableCell[]> {
  const notStored = (column: string) => db.raw(`case when ${dialect.decimalNotStored} then 1 else 0 end as ??`, [column, `${column}_not_stored`]);
  const out: UnstorableCell[] = [];
  for (const cells of refused.cells) out.push(...(await cells.unstorable(db, notStored)));
  // Stable: the registrants' order within.
  return out.sort((a, b) => Number(b.column === refused.column) - Number(a.column === refused.column));
}
