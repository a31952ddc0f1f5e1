import type { Knex } from 'knex';
import type { Dec } from './decimal';
import type { Engine } from './database';

/**
 * The dialects' types: what differs between SQLite, PostgreSQL and SQL Server, as the engines
 * above see it. A leaf module, so that each engine's dialect (query-dialect-<engine>.ts) and
 * dialect.ts, which picks one, share them without an import circle; importers take them from
 * dialect.ts.
 */
export interface Dialect {
  readonly engine: Engine;
  /** Encodes an exact decimal for a DECIMAL(p, scale) column (scaled integer on SQLite). */
  encodeDecimal(value: Dec, scale: number): string | number;
  /** Decodes what the driver returned for a DECIMAL(p, scale) column. */
  decodeDecimal(raw: unknown, scale: number): Dec | null;
  /** Creates a decimal column in a migration. */
  decimalColumn(table: Knex.CreateTableBuilder, name: string, precision: number, scale: number): Knex.ColumnBuilder;
  /**
   * SQL counting the values of a decimal column (`??`, bound once) that are not a value of it as
   * this engine stores one: SQLite keeps any type in any column and sum() reads text as 0, and
   * PostgreSQL's numeric holds NaN and infinities; SQL Server's decimal holds neither (docs/decisions/0370).
   */
  readonly decimalsNotStored: string;
  /**
   * SQL true when the value of a decimal column (`??`, bound once) is not a value of it as this
   * engine stores one (what decimalsNotStored counts; false for NULL). The ledger balance upsert
   * refuses to add to such a cell (storage/balances.ts, docs/decisions/0390).
   */
  readonly decimalNotStored: string;
}

/** Kinds of published fields (same as the catalog's FieldKind). */
export type ValueKind = 'uuid' | 'integer' | 'string' | 'date' | 'datetime' | 'decimal' | 'boolean';

/**
 * What `decodeValue` returns for a stored value that is no value of its field's kind as this
 * engine stores it: text in an INTEGER or decimal column, a fraction in SQLite's scaled-integer
 * decimal, a blob, a timestamp that names no instant ('infinity'). Never thrown, never guessed
 * into a value: the reader names it (STORED_VALUE_UNREADABLE, docs/decisions/0370).
 */
export const UNREADABLE: unique symbol = Symbol('unreadable stored value');

/** A decoded stored value: its published JSON form, null, or UNREADABLE. */
export type DecodedValue = string | number | boolean | null | typeof UNREADABLE;

/** A raw SQL fragment with `?` / `??` placeholders, for knex's whereRaw. */
export interface SqlFragment {
  sql: string;
  bindings: unknown[];
}

/** One column of a multi-column list (inPairs): qualified name, kind and decimal scale. */
export interface ListColumn {
  column: string;
  kind: ValueKind;
  scale?: number;
}

export interface QueryDialect {
  readonly engine: Engine;
  /**
   * Field kinds whose values the driver returns as JavaScript numbers that compare exactly as the
   * database compares them (the count index keeps such a column's values in memory: count-index.ts).
   */
  readonly exactNumberKinds: ReadonlySet<ValueKind>;
  /**
   * Encodes a checked filter value for the driver: `value` is a Dec for decimals, a Date for
   * datetimes, `YYYY-MM-DD` for dates, lower-case text for uuids.
   */
  encodeValue(kind: ValueKind, value: unknown, scale?: number): unknown;
  /**
   * Decodes what the driver returned into the published JSON form (null stays null); UNREADABLE
   * when it is no value of `kind` as this engine stores it. Never throws. Whether a decoded value
   * lies within its column's published bounds is src/catalog/bounds.ts's (fitsRead).
   */
  decodeValue(kind: ValueKind, raw: unknown, scale?: number): DecodedValue;
  /**
   * Text compared exactly (`=`, `!=`, `IN`, `inPairs` on text: the spec's "exact") where the
   * engine's own comparison is not: SQL Server's, under the database's case-insensitive collation
   * with trailing spaces padded (decision 0464). Absent where `=` on text is exact already
   * (PostgreSQL, SQLite: binary comparison), and the query engine then compiles the plain
   * comparison. `inList` and `inTuples` compare text exactly on every engine by themselves.
   */
  readonly exactText?: ExactText;
  /** `column IN (list)` with the whole list as ONE parameter (JSON), for lists of any length. */
  inList(column: ListColumn, encoded: unknown[]): SqlFragment;
  /**
   * Composite-key lookup with all tuples as ONE parameter (JSON). Never a row-value
   * `(a, b) IN ((..), ..)`, which SQL Server rejects.
   */
  inTuples(columns: ListColumn[], encoded: unknown[][]): SqlFragment;
  /**
   * LIKE with `%` as the only wildcard, case-insensitive on every engine for all of Unicode
   * (PostgreSQL's ILIKE; SQL Server's CI collation; on SQLite a function of the service that folds
   * as ILIKE does: sqlite-like.ts, decision 0463).
   */
  like(column: string, pattern: string, negate: boolean): SqlFragment;
  /** Runs `fn` in one read-only snapshot: every statement read through the reader sees the same data. */
  readSnapshot<T>(knex: Knex, fn: (reader: SnapshotReader) => Promise<T>): Promise<T>;
  /**
   * Where the engine can: the change token, the count (when given) and a page in ONE statement, so
   * one snapshot and one round trip instead of a transaction's four (BEGIN, token, page, COMMIT).
   * An empty page answers no row, so neither a token nor a count (run.ts knows what that means).
   */
  readPageAtOnce?(knex: Knex, read: PageAtOnce): Promise<PageRead>;
}

/** Exact text comparisons of an engine whose own are not (QueryDialect.exactText). */
export interface ExactText {
  /**
   * Parameters `equals` and `inValues` take a value beyond the one of a plain comparison: the
   * query engine counts them against the budget of inlined lists (and past it compares through
   * `inList`, one parameter), so a statement stays under SQL Server's 2,100 parameters whatever
   * its filter (src/storage/parameter-budget.ts).
   */
  readonly extraParametersPerValue: number;
  /** `column = value`, exact; a null column does not match, as in SQL. */
  equals(column: string, value: string): SqlFragment;
  /** `column <> value`, exact, one parameter; a null column does not match, as in SQL. */
  differs(column: string, value: string): SqlFragment;
  /** `column IN (values)`, exact, the values inlined as parameters. */
  inValues(column: string, values: string[]): SqlFragment;
}

export interface PageAtOnce {
  /** The page (sql.ts pageQuery). */
  page: Knex.QueryBuilder;
  /** The count of the page's filter (sql.ts countQuery), read in the same statement when given. */
  count?: Knex.QueryBuilder;
}

export interface PageRead {
  /** The change token of the statement's snapshot; undefined when the page is empty. */
  token: string | undefined;
  /** The count, when asked for and the page is not empty. */
  count?: number;
  rows: Row[];
}

export type Row = Record<string, unknown>;

/** Reads inside one snapshot (QueryDialect.readSnapshot). */
export interface SnapshotReader {
  /** Builds statements; run them only through `all` (on SQLite this knex is not the snapshot's). */
  readonly db: Knex;
  /** Runs a built SELECT inside the snapshot. */
  all(query: Knex.QueryBuilder): Promise<Row[]>;
  /** Runs a built SELECT of one column inside the snapshot: its values, without a row object each. */
  column(query: Knex.QueryBuilder): Promise<unknown[]>;
  /**
   * A token equal for two snapshots only when no book data (entity and line tables) can differ
   * between them (keeps reused counts and in-memory match indexes exact): the data change
   * counter, which triggers move in every transaction that changes book data (migration
   * 20261125000001_data_change_counter, src/storage/data-change-log.ts). The service's bookkeeping writes (heartbeats,
   * claims, number blocks) do not move it.
   */
  changeToken(): Promise<string | undefined>;
}
