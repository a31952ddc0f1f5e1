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
  /** Decodes what the driver returned into the published JSON form (null stays null). */
  decodeValue(kind: ValueKind, raw: unknown, scale?: number): string | number | boolean | null;
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
   * `order` and `key` name the page's output columns holding its order values and its key
   * (sql.ts, pageMarks), `directions` are its order terms' directions.
   */
  readPageAtOnce?(knex: Knex, read: PageAtOnce): Promise<PageRead>;
}

export interface PageAtOnce {
  page: Knex.QueryBuilder;
  order: readonly string[];
  directions: ReadonlyArray<'asc' | 'desc'>;
  key: string;
  count?: Knex.QueryBuilder;
}

export interface PageRead {
  token: string | undefined;
  /** The count, when asked for. */
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
 * of a 1,000-invoice page; bench/README.md, "fourth pass"). Read as arrays (`raw`, 0.8 KB) and
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

/** A driver date (JS Date) as YYYY-MM-DD, reading the calendar fields in the given zone. */
function dateOf(raw: unknown, local: boolean): string | null {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date) {
    return local
      ? `${pad(raw.getFullYear(), 4)}-${pad(raw.getMonth() + 1)}-${pad(raw.getDate())}`
      : `${pad(raw.getUTCFullYear(), 4)}-${pad(raw.getUTCMonth() + 1)}-${pad(raw.getUTCDate())}`;
  }
  if (typeof raw === 'number') return new Date(raw).toISOString().slice(0, 10);
  return String(raw).slice(0, 10);
}

/** A driver timestamp as ISO 8601 UTC; zone-less text (SQLite CURRENT_TIMESTAMP) is UTC. */
function dateTimeOf(raw: unknown): string | null {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date) return raw.toISOString();
  if (typeof raw === 'number' || typeof raw === 'bigint') return new Date(Number(raw)).toISOString();
  const text = String(raw).trim();
  let iso = text.includes('T') ? text : text.replace(' ', 'T');
  if (/^\d{4}-\d{2}-\d{2}$/.test(iso)) iso += 'T00:00:00';
  if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(iso)) iso += 'Z';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? text : d.toISOString();
}

function integerOf(raw: unknown): number | null {
  if (raw === null || raw === undefined) return null;
  return typeof raw === 'number' ? raw : Number(raw);
}

/**
 * A legacy boolean column as the driver returns it (PostgreSQL boolean, SQL Server bit, SQLite
 * 0/1, text 't'/'true'/'1' from older builds): the one decoding, for reads and for the posting
 * engines' checks (inactive flags, taxable, automatic close).
 */
export function decodeLegacyBoolean(raw: unknown): boolean | null {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'boolean') return raw;
  if (typeof raw === 'number' || typeof raw === 'bigint') return Number(raw) !== 0;
  return raw === '1' || raw === 't' || raw === 'true';
}

function decodeCommon(
  base: Dialect,
  kind: ValueKind,
  raw: unknown,
  scale: number | undefined,
  localDates: boolean,
): string | number | boolean | null {
  if (raw === null || raw === undefined) return null;
  switch (kind) {
    case 'decimal': {
      const dec = base.decodeDecimal(raw, scale ?? 2);
      return dec === null ? null : Number(dec.toFixed());
    }
    case 'integer':
      return integerOf(raw);
    case 'boolean':
      return decodeLegacyBoolean(raw);
    case 'date':
      return dateOf(raw, localDates);
    case 'datetime':
      return dateTimeOf(raw);
    case 'uuid':
      return String(raw).toLowerCase();
    default:
      return typeof raw === 'string' ? raw : String(raw);
  }
}

/** 10^0 .. 10^22: every one exact as a double. */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * A scaled integer (SQLite decimal storage) as the JSON number of its exact decimal.
 * For a safe integer n and 10^scale exact (scale <= 22), IEEE division is correctly rounded: n / 10^scale
 * is the double nearest to the exact decimal, i.e. the very number Number("<digits>.<digits>") parses, without
 * the four strings per value that building that text cost (a read's largest garbage after the JSON;
 * bench/README.md, "fourth pass"). `+ 0` turns -0 into 0, as the text form gives.
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
    // Fast path, same value as Number(decodeDecimal(raw).toFixed()): the scaled integer's digits
    // with the point put back, parsed once.
    if (kind === 'decimal' && typeof raw === 'number' && Number.isSafeInteger(raw)) return scaledToNumber(raw, scale ?? 2);
    return decodeCommon(base, kind, raw, scale, false);
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
    // NUMERIC arrives as its exact decimal text: parsing it is Number(decodeDecimal(raw).toFixed()).
    if (kind === 'decimal' && typeof raw === 'string') return Number(raw);
    // node-postgres parses DATE into a local-midnight Date.
    return decodeCommon(base, kind, raw, scale, true);
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
  async readPageAtOnce(knex, { page, order: names, directions, key, count }) {
    // One SELECT sees one snapshot (READ COMMITTED takes it per statement): the token, the count
    // and the page agree as they do in a repeatable-read transaction. The page is a LATERAL
    // subquery of the one-row token, so an empty page still answers the token (one row of NULLs,
    // told apart by its key); the order is applied again outside, on the page's order values.
    const inner = page.toSQL();
    const counted = count?.toSQL();
    // Output names come from the catalog's storage columns or are ours (`__o0`, `__k`): identifiers, quoted.
    const quoted = (name: string) => `p."${name.replace(/"/g, '""')}"`;
    const order = names.map((n, i) => `${quoted(n)} ${directions[i] === 'desc' ? 'desc' : 'asc'}`).join(', ');
    const sql =
      `select t.n as "__token"${counted ? ', c.n as "__count"' : ''}, p.* from (${DATA_TOKEN_SQL}) as t` +
      (counted ? ` cross join (${counted.sql}) as c` : '') +
      ` left join lateral (${inner.sql}) as p on true order by ${order}`;
    const result = (await knex.raw(sql, [...(counted?.bindings ?? []), ...inner.bindings] as Knex.RawBinding[])) as { rows: Row[] };
    const first = result.rows[0];
    return {
      token: tokenOf(first === undefined ? undefined : { n: first.__token }),
      ...(counted ? { count: Number(first?.__count ?? 0) } : {}),
      rows: result.rows.filter((r) => r[key] !== null && r[key] !== undefined),
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
    return decodeCommon(base, kind, raw, scale, false);
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
