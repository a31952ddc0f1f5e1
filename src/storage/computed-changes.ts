import type { Knex } from 'knex';
import type { Dec } from './decimal';
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
 *
 * The same statement refuses a change whose RESULT would lie beyond the column (a ledger balance
 * or a received total that a posting would push past decimal(14, 2)): the change yields NULL then
 * too (`guardedChange`), instead of PostgreSQL's and SQL Server's overflow error, which names no
 * cell, and SQLite's storing the scaled integer past the bound (docs/decisions/0441). After the
 * rollback the registrant reads its cells again and tells which of the two it was.
 */

/** A cell a computed change was refused for: it holds no decimal it can read, or the change would have pushed it past its column. */
export interface UnstorableCell {
  /** Whose cells: the name the registrant gave (opaque here: the engines' published set name). */
  set: string;
  table: string;
  column: string;
  /** The stored value as the driver returned it. */
  raw: unknown;
  /** The row's other columns the registrant selected (its key, its parent's key, ...). */
  row: Record<string, unknown>;
  /**
   * `unreadable`: the stored value is no decimal as this engine stores one, or one beyond its
   * column (SQLite stores any integer); `beyond`: it is a readable decimal, and what the change
   * computes from it lies beyond the column.
   */
  why: 'unreadable' | 'beyond';
  /** `beyond`: the stored value, what the change would have stored, the column's largest magnitude. */
  beyond?: { stored: Dec; after: Dec; bound: Dec };
  /** The request field behind the change, when its registrant knows it (`lines[2]`). */
  field?: string;
}

/** Cells a computed change touched: which table and columns, and how to read them again. */
export interface ChangedCells {
  set: string;
  table: string;
  columns: readonly string[];
  /**
   * The cells among them the change was refused for (`classifyChangedCell`: `notStored` builds the
   * test of a column, `1` when so, aliased `<column>_not_stored`), read through `db` after the
   * rollback, in the registrant's order.
   */
  unstorable(db: Knex, notStored: (column: string) => Knex.Raw, dialect: Dialect): Promise<UnstorableCell[]>;
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

/** A column's largest magnitude (src/catalog/bounds.ts, through the engine's limits) and its scale. */
export interface ColumnBound {
  max: Dec;
  scale: number;
}

/** `bound` as this engine stores it, as SQL text (digits only: it is part of the statement, compiled once per shape). */
function boundLiteral(dialect: Dialect, bound: ColumnBound): string {
  const text = String(dialect.encodeDecimal(bound.max, bound.scale));
  if (!/^[0-9]+(\.[0-9]+)?$/.test(text)) throw new Error(`computed changes: bound ${text} is no decimal literal`);
  return text;
}

/**
 * `expression` (SQL with knex bindings, naming `column`), or NULL when the stored value of
 * `column` is no decimal as this engine stores one, or when `expression` lies beyond `bound`.
 * `column` as the statement names it (`lgrbal.dbttot` in an upsert). SQL Server's decimal holds no
 * undecimal value: its first test is never true; its second replaces the overflow error 8115 (which
 * names no cell) by the NOT NULL refusal 515. The expression is written twice: its bindings are
 * `[...bindings, ...bindings]` after the column's.
 */
export function guardedChange(db: Knex | Knex.Transaction, dialect: Dialect, column: string, expression: string, bindings: readonly Knex.RawBinding[], bound: ColumnBound): Knex.Raw {
  return db.raw(`CASE WHEN ${dialect.decimalNotStored} THEN NULL WHEN abs(${expression}) > ${boundLiteral(dialect, bound)} THEN NULL ELSE ${expression} END`, [column, ...bindings, ...bindings]);
}

/**
 * Why a computed change of a cell read back after the refusal was refused, or undefined when it
 * would not be any more (another program changed the cell in between): `notStored` the column's
 * test as read (`<column>_not_stored`), `raw` its value, `change` what the change computes from
 * the stored decimal.
 */
export function classifyChangedCell(dialect: Dialect, raw: unknown, notStored: unknown, bound: ColumnBound, change: (stored: Dec) => Dec): Pick<UnstorableCell, 'why' | 'beyond'> | undefined {
  if (Number(notStored) === 1) return { why: 'unreadable' };
  if (raw === null || raw === undefined) return undefined;
  const stored = dialect.decodeDecimal(raw, bound.scale);
  if (stored === null) return undefined;
  if (stored.abs().greaterThan(bound.max)) return { why: 'unreadable' };
  const after = change(stored);
  return after.abs().greaterThan(bound.max) ? { why: 'beyond', beyond: { stored, after, bound: bound.max } } : undefined;
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
 * The cells of a refusedChange the change was refused for (UnstorableCell `why`), the refused
 * column's first, then in the registrants' order: [] when none is any more (another program
 * corrected it in between). Read through `db`, after the rollback (a failed PostgreSQL
 * transaction reads nothing more).
 */
export async function unstorableChangedCells(refused: { column: string; cells: readonly ChangedCells[] }, db: Knex, dialect: Dialect): Promise<UnstorableCell[]> {
  const notStored = (column: string) => db.raw(`case when ${dialect.decimalNotStored} then 1 else 0 end as ??`, [column, `${column}_not_stored`]);
  const out: UnstorableCell[] = [];
  for (const cells of refused.cells) out.push(...(await cells.unstorable(db, notStored, dialect)));
  // Stable: the registrants' order within.
  return out.sort((a, b) => Number(b.column === refused.column) - Number(a.column === refused.column));
}
