import type { Dec } from './decimal';
import { DATA_TOKEN_SQL } from './data-change-log';
import { UNREADABLE, type Dialect, type QueryDialect, type Row, type SnapshotReader } from './dialect-types';
import { decodeCommon, escapeLike, jsonScalar, scaledToNumber, tokenOf } from './query-dialect-common';
import { foldCase, SQLITE_ILIKE_FUNCTION } from './sqlite-like';

/**
 * SQLite's query dialect: reads through the connection's own prepared statements (rows built by
 * one object literal a column list), decimals as scaled integers, snapshots as a read
 * transaction on the connection.
 */

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

/** Text of ASCII characters only. */
const ASCII_TEXT = /^[\x00-\x7f]*$/;

/** knex's binding conversions for better-sqlite3 (Dates as epoch ms, booleans as 0/1). */
function sqliteBinding(v: unknown): unknown {
  if (v instanceof Date) return v.valueOf();
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

export const sqliteQueryDialect = (base: Dialect): QueryDialect => ({
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
    // SQLite's own LIKE folds ASCII only; the service's function (sqlite-like.ts) folds all of
    // Unicode as PostgreSQL's ILIKE does, and takes the pattern as sent (`%` its only wildcard).
    // Its call into JavaScript costs a scan twice the time, so it runs only for text that is not
    // ASCII (as many characters as bytes; length stops at a NUL, so text holding one is not). ASCII
    // text folds to ASCII: under a pattern that folds to ASCII SQLite's LIKE, given the folded
    // pattern, answers as the function would; under one that keeps a character that is not ASCII it
    // cannot match.
    // NULL gives NULL either way, so NOT of it too (decision 0463).
    const folded = foldCase(pattern);
    const asciiText = ASCII_TEXT.test(folded);
    return {
      sql: `${negate ? 'NOT ' : ''}(CASE WHEN length(??) = octet_length(??) THEN ${asciiText ? "?? LIKE ? ESCAPE '!'" : '0'} ELSE ${SQLITE_ILIKE_FUNCTION}(??, ?) END)`,
      bindings: [column, column, ...(asciiText ? [column, escapeLike(folded)] : []), column, pattern],
    };
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
