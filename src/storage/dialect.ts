import type { Knex } from 'knex';
import { Dec, toDec } from './decimal';
import type { Engine } from './database';
import { DATA_TOKEN_SQL } from './data-change-log';

/**
 * Everything that differs between SQLite, PostgreSQL and SQL Server lives here, so the
 * engines above stay dialect-free. Add to this module rather than branching on the engine
 * elsewhere.
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
}

/** 10^0 .. 10^22 as Decs, built once (building 10^scale cost more than the product it scales by). */
const POW10_DECS: readonly Dec[] = Array.from({ length: 23 }, (_, i) => new Dec(10).pow(i));
const pow10 = (scale: number): Dec => POW10_DECS[scale] ?? new Dec(10).pow(scale);

const sqliteDialect: Dialect = {
  engine: 'sqlite',
  encodeDecimal(value, scale) {
    const scaled = value.times(pow10(scale));
    // Comparisons against values finer than the column scale stay exact as a decimal string.
    return scaled.isInteger() ? Number(scaled.toFixed(0)) : scaled.toNumber();
  },
  decodeDecimal(raw, scale) {
    if (raw === null || raw === undefined) return null;
    return toDec(typeof raw === 'bigint' ? raw.toString() : (raw as number | string)).div(pow10(scale));
  },
  decimalColumn(table, name) {
    return table.bigInteger(name);
  },
  // A decimal is stored as its scaled integer (encodeDecimal): anything else is another program's.
  decimalsNotStored: "count(case when typeof(??) not in ('integer', 'null') then 1 end)",
};

function exactDialect(engine: Engine): Dialect {
  return {
    engine,
    encodeDecimal(value, scale) {
      return value.toFixed(scale < 0 ? 0 : Math.max(scale, value.decimalPlaces()));
    },
    decodeDecimal(raw) {
      if (raw === null || raw === undefined) return null;
      return toDec(raw as string);
    },
    decimalColumn(table, name, precision, scale) {
      return table.decimal(name, precision, scale);
    },
    // As text: the literals 'Infinity' are no numeric before PostgreSQL 14. SQL Server's decimal
    // holds no such value: a count that is always 0, still naming the column once like the others.
    decimalsNotStored: engine === 'postgres' ? "count(case when cast(?? as text) in ('NaN', 'Infinity', '-Infinity') then 1 end)" : 'count(case when 1 = 0 then ?? end)',
  };
}

export function dialectFor(engine: Engine): Dialect {
  return engine === 'sqlite' ? sqliteDialect : exactDialect(engine);
}

export function engineOf(knex: Knex): Engine {
  const client = String(knex.client.config.client);
  if (client === 'better-sqlite3' || client === 'sqlite3') return 'sqlite';
  if (client === 'pg' || client === 'postgres' || client === 'postgresql') return 'postgres';
  if (client === 'mssql') return 'mssql';
  throw new Error(`unsupported knex client ${client}`);
}

// ------------------------------------------------------------------------------------------
// Read-side differences (query and match engines). Appended as its own interface so the
// storage dialect above stays small; every engine-specific piece of SQL the read engines
// need is here.
// ------------------------------------------------------------------------------------------

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
  /** `column IN (list)` with the whole list as ONE parameter (JSON), for lists of any length. */
  inList(column: ListColumn, encoded: unknown[]): SqlFragment;
  /**
   * Composite-key lookup with all tuples as ONE parameter (JSON). Never a row-value
   * `(a, b) IN ((..), ..)`, which SQL Server rejects.
   */
  inTuples(columns: ListColumn[], encoded: unknown[][]): SqlFragment;
  /** LIKE with `%` as the only wildcard, case-insensitive on every engine. */
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

/** What better-sqlite3 offers that the SQLite reader uses. */
interface SqliteStatement {
  all(bindings: unknown[]): unknown[];
  get(bindings?: unknown[]): unknown;
  raw(on: boolean): SqliteStatement;
  pluck(on: boolean): SqliteStatement;
  columns(): Array<{ name: string }>;
  readonly reader: boolean;
}

interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
  readonly inTransaction: boolean;
}

/** A prepared read and the constructor of its rows. */
interface PreparedRead {
  all(bindings: unknown[]): Row[];
  get(bindings?: unknown[]): Row | undefined;
  /** The first column of every row. */
  column(bindings: unknown[]): unknown[];
}

/** Prepared statements per SQLite connection (parsing is a large share of a small query). */
const statementCaches = new WeakMap<object, Map<string, PreparedRead>>();
const STATEMENT_CACHE_SIZE = 256;

/**
 * Row constructors by column list. better-sqlite3 builds each row object property by property in
 * C++ (one dictionary-mode object per row: about 2.2 KB for a 26-column row), and the driver's
 * rows were the largest allocation of a read (a third of the bytes of scenario B, 3.4 of the 7.9 MB
 * of a 1,000-invoice page; decision 0039). Read as arrays (`raw`, 0.8 KB) and
 * turned into objects by an object literal with every column name (one shape, allocated at its
 * final size, ~0.25 KB), a row costs about half, and callers still get the same plain objects
 * (a repeated column name: the last one wins, as in the driver's own rows).
 */
const rowFactories = new Map<string, (values: unknown[]) => Row>();

function rowFactory(names: readonly string[]): ((values: unknown[]) => Row) | undefined {
  if (names.some((n) => n === '__proto__')) return undefined;
  const key = names.join('\u0000');
  let factory = rowFactories.get(key);
  if (!factory) {
    const body = names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`).join(', ');
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    factory = new Function('v', `return { ${body} };`) as (values: unknown[]) => Row;
    if (rowFactories.size >= STATEMENT_CACHE_SIZE) rowFactories.clear();
    rowFactories.set(key, factory);
  }
  return factory;
}

/**
 * The statement object is shared: the connection's prepare is wrapped to reuse one statement per
 * SQL text (database.ts), and knex runs the same text through it expecting objects. So array mode
 * is switched on only around each call (better-sqlite3 is synchronous: nothing else runs between).
 */
function preparedRead(stmt: SqliteStatement): PreparedRead {
  const build = stmt.reader ? rowFactory(stmt.columns().map((c) => c.name)) : undefined;
  const column = (bindings: unknown[]): unknown[] => {
    stmt.pluck(true);
    try {
      return stmt.all(bindings);
    } finally {
      stmt.pluck(false);
    }
  };
  if (!build) return { all: (bindings) => stmt.all(bindings) as Row[], get: (bindings) => stmt.get(bindings ?? []) as Row | undefined, column };
  const asArrays = <T>(run: () => T): T => {
    stmt.raw(true);
    try {
      return run();
    } finally {
      stmt.raw(false);
    }
  };
  return {
    all: (bindings) => {
      const rows = asArrays(() => stmt.all(bindings)) as unknown[][];
      for (let i = 0; i < rows.length; i += 1) (rows as unknown[])[i] = build(rows[i]!);
      return rows as unknown as Row[];
    },
    get: (bindings) => {
      const values = asArrays(() => stmt.get(bindings ?? [])) as unknown[] | undefined;
      return values === undefined ? undefined : build(values);
    },
    column,
  };
}

function prepared(conn: SqliteConnection, sql: string): PreparedRead {
  let cache = statementCaches.get(conn);
  if (!cache) {
    cache = new Map();
    statementCaches.set(conn, cache);
  }
  let stmt = cache.get(sql);
  if (!stmt) {
    if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
    stmt = preparedRead(conn.prepare(sql));
    cache.set(sql, stmt);
  }
  return stmt;
}

/** knex's binding conversions for better-sqlite3 (Dates as epoch ms, booleans as 0/1). */
function sqliteBinding(v: unknown): unknown {
  if (v instanceof Date) return v.valueOf();
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

/** A reader over a knex transaction (PostgreSQL, SQL Server). */
function transactionReader(trx: Knex.Transaction, token: (trx: Knex.Transaction) => Promise<string | undefined>): SnapshotReader {
  return {
    db: trx,
    all: async (query) => (await query) as Row[],
    column: async (query) => ((await query) as Row[]).map((row) => Object.values(row)[0]),
    changeToken: () => token(trx),
  };
}


/** The data change counter as a token (a string: PostgreSQL's bigint arrives as text, SQLite's as a number). */
function tokenOf(row: Row | undefined): string | undefined {
  const n = row?.n;
  return n === null || n === undefined ? undefined : String(n);
}

/** `_`, `[` (SQL Server) and the escape character itself are literals; `%` stays the wildcard. */
function escapeLike(pattern: string): string {
  return pattern.replace(/[!_[\]]/g, (c) => `!${c}`);
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** A Date (or epoch milliseconds) that names an instant; UNREADABLE for an invalid one (pg's 'infinity' arrives as Infinity). */
function instantOf(raw: Date | number): Date | typeof UNREADABLE {
  const d = raw instanceof Date ? raw : new Date(raw);
  return Number.isNaN(d.getTime()) ? UNREADABLE : d;
}

/** Text of a `date` column: the date, alone or at the head of a timestamp's text (not '0044-03-15 BC'). */
const DATE_TEXT = /^\d{4}-\d{2}-\d{2}(?:$|[T ]\d{2}:\d{2})/;

/**
 * A driver date as YYYY-MM-DD, reading the calendar fields in the given zone. A year outside
 * 1..9999 (pg: 10000, or a BC date) comes out in a form the read check refuses.
 */
function dateOf(raw: unknown, local: boolean): string | null | typeof UNREADABLE {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date || typeof raw === 'number') {
    const d = instantOf(raw);
    if (d === UNREADABLE) return UNREADABLE;
    return local
      ? `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`
      : `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  }
  if (typeof raw !== 'string') return UNREADABLE;
  // The date alone (the read check looks at it), or at the head of a timestamp's text.
  if (raw.length === 10) return raw;
  return DATE_TEXT.test(raw) ? raw.slice(0, 10) : UNREADABLE;
}

/** A driver timestamp as ISO 8601 UTC; zone-less text (SQLite CURRENT_TIMESTAMP) is UTC. */
function dateTimeOf(raw: unknown): string | null | typeof UNREADABLE {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date || typeof raw === 'number' || typeof raw === 'bigint') {
    const d = instantOf(typeof raw === 'bigint' ? Number(raw) : raw);
    return d === UNREADABLE ? UNREADABLE : d.toISOString();
  }
  if (typeof raw !== 'string') return UNREADABLE;
  const text = raw.trim();
  let iso = text.includes('T') ? text : text.replace(' ', 'T');
  if (/^\d{4}-\d{2}-\d{2}$/.test(iso)) iso += 'T00:00:00';
  if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(iso)) iso += 'Z';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? UNREADABLE : d.toISOString();
}

/** Integer text (PostgreSQL's bigint arrives as text); `Number('')` would be 0. */
const INTEGER_TEXT = /^-?\d+$/;

function integerOf(raw: unknown): number | null | typeof UNREADABLE {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'bigint') return Number(raw);
  return typeof raw === 'string' && INTEGER_TEXT.test(raw) ? Number(raw) : UNREADABLE;
}

const TRUE_TEXT = new Set(['1', 't', 'true']);
const FALSE_TEXT = new Set(['0', 'f', 'false']);

/**
 * A legacy boolean column as the driver returns it (PostgreSQL boolean, SQL Server bit, SQLite
 * 0/1, any other number as a bit (-1 is a legacy true), text 't'/'true'/'1' and 'f'/'false'/'0'
 * in any case from older builds): the one decoding, for reads and for the posting engines' checks
 * (inactive flags, taxable, automatic close). Other text is UNREADABLE, never false.
 */
export function decodeLegacyBoolean(raw: unknown): boolean | null | typeof UNREADABLE {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'boolean') return raw;
  if (typeof raw === 'number') return Number.isNaN(raw) ? UNREADABLE : raw !== 0;
  if (typeof raw === 'bigint') return raw !== 0n;
  if (typeof raw !== 'string') return UNREADABLE;
  const text = raw.toLowerCase();
  return TRUE_TEXT.has(text) ? true : FALSE_TEXT.has(text) ? false : UNREADABLE;
}

/** Decimal text as PostgreSQL's NUMERIC and exact drivers return it ('NaN' parses to NaN, which the read check refuses). */
const DECIMAL_TEXT = /^-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$|^NaN$/i;

/**
 * The kinds every engine decodes alike. Decimals here are an exact engine's (PostgreSQL's text,
 * SQL Server's number): SQLite decodes its scaled integers itself.
 */
function decodeCommon(kind: ValueKind, raw: unknown, localDates: boolean): DecodedValue {
  if (raw === null || raw === undefined) return null;
  switch (kind) {
    case 'decimal':
      // Number(text) is Number(decodeDecimal(raw).toFixed()): the double nearest the exact decimal.
      if (typeof raw === 'number') return raw;
      return typeof raw === 'string' && DECIMAL_TEXT.test(raw) ? Number(raw) : UNREADABLE;
    case 'integer':
      return integerOf(raw);
    case 'boolean':
      return decodeLegacyBoolean(raw);
    case 'date':
      return dateOf(raw, localDates);
    case 'datetime':
      return dateTimeOf(raw);
    case 'uuid':
      return typeof raw === 'string' ? raw.toLowerCase() : UNREADABLE;
    default:
      // SQLite may hand a number from a column without TEXT affinity; a blob is no text.
      if (typeof raw === 'string') return raw;
      return typeof raw === 'number' || typeof raw === 'bigint' ? String(raw) : UNREADABLE;
  }
}

/** 10^0 .. 10^22: every one exact as a double. */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * A scaled integer (SQLite decimal storage) as the JSON number of its exact decimal.
 * For a safe integer n and 10^scale exact (scale <= 22), IEEE division is correctly rounded: n / 10^scale
 * is the double nearest to the exact decimal, i.e. the very number Number("<digits>.<digits>") parses, without
 * the four strings per value that building that text cost (a read's largest garbage after the JSON;
 * decision 0039). `+ 0` turns -0 into 0, as the text form gives.
 */
export function scaledToNumber(n: number, scale: number): number {
  if (scale <= 0) return n;
  if (scale < POWERS_OF_TEN.length && Number.isSafeInteger(n)) return n / POWERS_OF_TEN[scale]! + 0;
  const digits = String(Math.abs(n)).padStart(scale + 1, '0');
  return Number(`${n < 0 ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`);
}

function jsonScalar(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  return v;
}

const sqliteQueryDialect = (base: Dialect): QueryDialect => ({
  engine: 'sqlite',
  // Integers, and decimals as scaled integers (INTEGER storage): better-sqlite3 returns numbers.
  exactNumberKinds: new Set(['integer', 'decimal']),
  encodeValue(kind, value, scale) {
    switch (kind) {
      case 'decimal':
        return base.encodeDecimal(value as Dec, scale ?? 2);
      case 'boolean':
        return value ? 1 : 0;
      case 'datetime': {
        // Stored as text `YYYY-MM-DD HH:MM:SS[.fff]` (UTC), which sorts as time.
        const iso = (value as Date).toISOString();
        const ms = iso.slice(19, 23);
        return iso.slice(0, 10) + ' ' + iso.slice(11, 19) + (ms === '.000' ? '' : ms);
      }
      default:
        return value;
    }
  },
  decodeValue(kind, raw, scale) {
    if (kind === 'decimal') {
      // Same value as Number(decodeDecimal(raw).toFixed()): the scaled integer's digits with the
      // point put back, parsed once. Only a whole number is a scaled integer: INTEGER affinity
      // keeps text and a fraction (REAL) as written, and neither is a value of the column.
      if (typeof raw === 'number' && Number.isSafeInteger(raw)) return scaledToNumber(raw, scale ?? 2);
      return raw === null || raw === undefined ? null : UNREADABLE;
    }
    return decodeCommon(kind, raw, false);
  },
  inList(column, encoded) {
    return { sql: '?? IN (SELECT value FROM json_each(?))', bindings: [column.column, JSON.stringify(encoded.map(jsonScalar))] };
  },
  inTuples(columns, encoded) {
    // json_each over an array of arrays; each element's members are read with ->> by position.
    // A row value IN a subquery, not a correlated EXISTS: SQLite builds the list once and probes
    // it per row (and can seek an index on the first column), where EXISTS re-read the whole
    // array for every row (5,000 pairs over the demo's 4,124 job costs: 13 ms against 9.6 s).
    // `(a, b) IN (SELECT x, y ...)` compares with the same affinity and collation as `a = x`.
    const members = columns.map((_, i) => `j.value ->> ${i}`).join(', ');
    return {
      sql: `(${columns.map(() => '??').join(', ')}) IN (SELECT ${members} FROM json_each(?) AS j)`,
      bindings: [...columns.map((c) => c.column), JSON.stringify(encoded.map((t) => t.map(jsonScalar)))],
    };
  },
  like(column, pattern, negate) {
    // SQLite's LIKE is case-insensitive (ASCII) unless case_sensitive_like is set.
    return { sql: `?? ${negate ? 'NOT LIKE' : 'LIKE'} ? ESCAPE '!'`, bindings: [column, escapeLike(pattern)] };
  },
  async readSnapshot(knex, fn) {
    // The pool's only connection, held for the whole read: a deferred transaction reads one
    // snapshot from its first statement (WAL mode). Statements run on it directly, prepared
    // once per connection (knex only builds them).
    const client = knex.client as { acquireConnection(): Promise<SqliteConnection>; releaseConnection(conn: SqliteConnection): Promise<unknown> };
    const conn = await client.acquireConnection();
    try {
      conn.exec('BEGIN');
      const reader: SnapshotReader = {
        db: knex,
        async all(query) {
          const { sql, bindings } = query.toSQL();
          return prepared(conn, sql).all(bindings.map(sqliteBinding));
        },
        async column(query) {
          const { sql, bindings } = query.toSQL();
          return prepared(conn, sql).column(bindings.map(sqliteBinding));
        },
        async changeToken() {
          return tokenOf(prepared(conn, DATA_TOKEN_SQL).get([]));
        },
      };
      try {
        return await fn(reader);
      } finally {
        if (conn.inTransaction) conn.exec('COMMIT');
      }
    } finally {
      await client.releaseConnection(conn);
    }
  },
});

/** The data change counter as a transaction's snapshot sees it (PostgreSQL, SQL Server). */
async function counterToken(trx: Knex.Transaction): Promise<string | undefined> {
  const result = (await trx.raw(DATA_TOKEN_SQL)) as { rows?: Row[] } | Row[];
  return tokenOf(Array.isArray(result) ? result[0] : result.rows?.[0]);
}

const PG_TYPE: Record<ValueKind, (scale?: number) => string> = {
  uuid: () => 'uuid',
  integer: () => 'bigint',
  string: () => 'text',
  date: () => 'date',
  datetime: () => 'timestamptz',
  decimal: () => 'numeric',
  boolean: () => 'boolean',
};

/** PostgreSQL's DATE type (pg_type.oid). */
const PG_DATE_OID = 1082;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

interface PgTypeParsers {
  getTypeParser(oid: number, format?: string): (value: string) => unknown;
}

let pgReadTypes: PgTypeParsers | undefined;

/**
 * node-postgres's type parsers for a page read at once, but DATE: its `YYYY-MM-DD` text is the
 * published form already, where the driver's parser builds a local-midnight Date that dateOf then
 * takes apart again (on a page of job costs, two dates a row, that round trip was about a fifth
 * of the driver's CPU; decision 0350). Text of another form (a year past 9999, BC) keeps the
 * driver's parser, so its decoding is what it was. The driver is required here, on first use, not
 * at import: loading `pg` loads undici (the global fetch, ~20 MB a process), which a start on
 * SQLite never needs (test/architecture/startup-imports.test.ts); knex has loaded it already here.
 */
function readTypesOfPg(): PgTypeParsers {
  if (!pgReadTypes) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { types } = require('pg') as { types: PgTypeParsers };
    const driverDate = types.getTypeParser(PG_DATE_OID, 'text');
    const dateText = (text: string): unknown => (ISO_DATE.test(text) ? text : driverDate(text));
    pgReadTypes = {
      getTypeParser: (oid, format) => (oid === PG_DATE_OID && format !== 'binary' ? dateText : types.getTypeParser(oid, format)),
    };
  }
  return pgReadTypes;
}

const postgresQueryDialect = (base: Dialect): QueryDialect => ({
  engine: 'postgres',
  // node-postgres returns int4 as a number (int8 and NUMERIC as text, which the count index refuses).
  exactNumberKinds: new Set(['integer']),
  encodeValue(kind, value, scale) {
    switch (kind) {
      case 'decimal':
        return base.encodeDecimal(value as Dec, scale ?? 2);
      case 'datetime':
        return (value as Date).toISOString();
      default:
        return value;
    }
  },
  decodeValue(kind, raw, scale) {
    // NUMERIC arrives as its exact decimal text: parsing it is Number(decodeDecimal(raw).toFixed())
    // ('NaN', which NUMERIC stores, parses to NaN: the read check refuses it).
    if (kind === 'decimal' && typeof raw === 'string') return Number(raw);
    // node-postgres parses DATE into a local-midnight Date ('infinity' into Infinity).
    return decodeCommon(kind, raw, true);
  },
  inList(column, encoded) {
    return {
      sql: `?? IN (SELECT (e.v)::${PG_TYPE[column.kind](column.scale)} FROM jsonb_array_elements_text(?::jsonb) AS e(v))`,
      bindings: [column.column, JSON.stringify(encoded.map(jsonScalar))],
    };
  },
  inTuples(columns, encoded) {
    const defs = columns.map((c, i) => `c${i} ${PG_TYPE[c.kind](c.scale)}`).join(', ');
    const conds = columns.map((_, i) => `?? = p.c${i}`).join(' AND ');
    const rows = encoded.map((t) => Object.fromEntries(t.map((v, i) => [`c${i}`, jsonScalar(v)])));
    return {
      sql: `EXISTS (SELECT 1 FROM jsonb_to_recordset(?::jsonb) AS p(${defs}) WHERE ${conds})`,
      bindings: [JSON.stringify(rows), ...columns.map((c) => c.column)],
    };
  },
  like(column, pattern, negate) {
    return { sql: `?? ${negate ? 'NOT ILIKE' : 'ILIKE'} ? ESCAPE '!'`, bindings: [column, escapeLike(pattern)] };
  },
  readSnapshot(knex, fn) {
    return knex.transaction((trx) => fn(transactionReader(trx, counterToken)), { isolationLevel: 'repeatable read', readOnly: true });
  },
  async readPageAtOnce(knex, { page, count }) {
    // One SELECT sees one snapshot (READ COMMITTED takes one per statement): the token and the
    // count are uncorrelated scalar subqueries of the page's select list, which PostgreSQL runs
    // once a statement (InitPlans), so they agree with the page as in a repeatable-read
    // transaction. The page keeps its own plan and order: wrapping it (a LATERAL join of the
    // one-row token, ordered again outside) cost PostgreSQL about twice the CPU to parse, plan and
    // run (decision 0350). An empty page answers no row, so neither token nor count.
    const read = page.clone().select(knex.raw(`(${DATA_TOKEN_SQL}) as "__token"`)).options({ types: readTypesOfPg() });
    if (count) read.select(knex.raw('? as "__count"', [count]));
    const rows = (await read) as Row[];
    const first = rows[0];
    return {
      token: tokenOf(first === undefined ? undefined : { n: first.__token }),
      ...(count && first !== undefined ? { count: Number(first.__count) } : {}),
      rows,
    };
  },
});

const MSSQL_TYPE: Record<ValueKind, (scale?: number) => string> = {
  uuid: () => 'uniqueidentifier',
  integer: () => 'bigint',
  string: () => 'nvarchar(4000)',
  date: () => 'date',
  datetime: () => 'datetime2',
  decimal: (scale) => `decimal(38, ${scale ?? 2})`,
  boolean: () => 'bit',
};

const mssqlQueryDialect = (base: Dialect): QueryDialect => ({
  engine: 'mssql',
  // tedious returns int as a number; DECIMAL as a rounded double, never compared here.
  exactNumberKinds: new Set(['integer']),
  encodeValue(kind, value, scale) {
    switch (kind) {
      case 'decimal':
        return base.encodeDecimal(value as Dec, scale ?? 2);
      default:
        return value;
    }
  },
  decodeValue(kind, raw, scale) {
    // tedious returns DATE as UTC midnight.
    return decodeCommon(kind, raw, false);
  },
  inList(column, encoded) {
    return {
      sql: `?? IN (SELECT [v] FROM OPENJSON(?) WITH ([v] ${MSSQL_TYPE[column.kind](column.scale)} '$'))`,
      bindings: [column.column, JSON.stringify(encoded.map(jsonScalar))],
    };
  },
  inTuples(columns, encoded) {
    const defs = columns.map((c, i) => `[c${i}] ${MSSQL_TYPE[c.kind](c.scale)} '$.c${i}'`).join(', ');
    const conds = columns.map((_, i) => `?? = [p].[c${i}]`).join(' AND ');
    const rows = encoded.map((t) => Object.fromEntries(t.map((v, i) => [`c${i}`, jsonScalar(v)])));
    return {
      sql: `EXISTS (SELECT 1 FROM OPENJSON(?) WITH (${defs}) AS [p] WHERE ${conds})`,
      bindings: [JSON.stringify(rows), ...columns.map((c) => c.column)],
    };
  },
  like(column, pattern, negate) {
    // Case sensitivity follows the column collation (case-insensitive by default on SQL Server).
    return { sql: `?? ${negate ? 'NOT LIKE' : 'LIKE'} ? ESCAPE '!'`, bindings: [column, escapeLike(pattern)] };
  },
  readSnapshot(knex, fn) {
    // Needs ALLOW_SNAPSHOT_ISOLATION ON (docs/decisions.md).
    return knex.transaction((trx) => fn(transactionReader(trx, counterToken)), { isolationLevel: 'snapshot' });
  },
});

const queryDialects = new Map<Engine, QueryDialect>();

export function queryDialectFor(engine: Engine): QueryDialect {
  let qd = queryDialects.get(engine);
  if (!qd) {
    const base = dialectFor(engine);
    qd = engine === 'sqlite' ? sqliteQueryDialect(base) : engine === 'postgres' ? postgresQueryDialect(base) : mssqlQueryDialect(base);
    queryDialects.set(engine, qd);
  }
  return qd;
}
