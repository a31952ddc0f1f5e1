/**
 * Batched, engine-aware row writer for the seed.
 *
 * - Rows are buffered per table and written as multi-row INSERTs whose size is derived from
 *   the column count and the engine's parameter limit (SQLite 32766, PostgreSQL 65535,
 *   SQL Server 2100 parameters and 1000 rows per VALUES list).
 * - Decimal values (decimal.js `Dec`) are encoded through the dialect with the column's scale
 *   (from the entity catalog, PostgreSQL's information schema, or an explicit override), so
 *   SQLite stores scaled integers and the exact engines DECIMAL text: never a float.
 * - Every write happens inside `group()`, one transaction per batch group; buffers are flushed
 *   in table-registration order (parents before children) so foreign keys hold at every
 *   statement.
 * - The live table shape is read once per table: columns the seed provides but the schema lacks
 *   are dropped and reported; NOT NULL columns without a default that the seed does not know
 *   get a neutral value and are reported too.
 */
import type { Knex } from 'knex';
import { Dec } from '../../src/storage/decimal';
import { dialectFor, engineOf, type Dialect } from '../../src/storage/dialect';
import type { Engine } from '../../src/storage/database';
import { Scaled } from './util';

export interface ColumnInfo {
  name: string;
  type: string;
  nullable: boolean;
  hasDefault: boolean;
  /** Decimal places for DECIMAL columns when the engine reports them. */
  scale?: number;
  /** Maximum length of a varchar column (strings are cut to it, the same way on every engine). */
  maxLength?: number;
  primaryKey: boolean;
}

export type Row = Record<string, unknown>;

export interface WriterNotes {
  /** table -> columns the seed wanted to write but the table does not have. */
  droppedColumns: Record<string, string[]>;
  /** table -> NOT NULL columns without default the seed did not provide (filled with a neutral value). */
  filledColumns: Record<string, string[]>;
  /** tables the seed wanted to write that do not exist. */
  missingTables: string[];
  /** table.column decimals whose scale was not known (encoded with scale 2). */
  unknownScales: string[];
  /** table.column decimals the seed meant for another scale than the catalog's (the catalog's is used). */
  scaleMismatches: string[];
}

const PARAM_LIMIT: Record<Engine, number> = { sqlite: 32766, postgres: 65535, mssql: 2100 };
const ROW_LIMIT: Record<Engine, number> = { sqlite: 5000, postgres: 5000, mssql: 1000 };
/** Rows per prepared multi-row insert on SQLite (reused for every full chunk). */
const SQLITE_ROWS_PER_STATEMENT = 200;

export interface WriterOptions {
  /** table -> column -> decimal scale, normally compiled from the entity catalog. */
  scales: Map<string, Map<string, number>>;
  onProgress?: (line: string) => void;
  /** Start of the run, for elapsed times in progress lines. */
  startedAt?: number;
}

export class BatchWriter {
  readonly engine: Engine;
  readonly dialect: Dialect;
  readonly notes: WriterNotes = { droppedColumns: {}, filledColumns: {}, missingTables: [], unknownScales: [], scaleMismatches: [] };
  /** Rows written per table, in first-write order. */
  readonly counts = new Map<string, number>();
  /** Highest `recnum` written per table (for the number sequences). */
  readonly maxRecnum = new Map<string, number>();

  private readonly shapes = new Map<string, Map<string, ColumnInfo> | null>();
  private readonly buffers = new Map<string, Row[]>();
  private readonly order: string[] = [];
  private db: Knex | Knex.Transaction;

  /** The connection or transaction of the current group. */
  get executor(): Knex | Knex.Transaction {
    return this.db;
  }
  private readonly startedAt: number;
  private lastProgress = new Map<string, number>();
  private readonly unknownScaleSeen = new Set<string>();

  constructor(
    private readonly knex: Knex,
    private readonly options: WriterOptions,
  ) {
    this.engine = engineOf(knex);
    this.dialect = dialectFor(this.engine);
    this.db = knex;
    this.startedAt = options.startedAt ?? Date.now();
  }

  /** Reads the shapes of the given tables (call before generating, so generators can adapt). */
  async describe(tables: readonly string[]): Promise<void> {
    const wanted = tables.filter((t) => !this.shapes.has(t));
    const shapes = await readShapes(this.knex, this.engine, wanted);
    for (const t of wanted) this.shapes.set(t, shapes.get(t) ?? null);
  }

  hasTable(table: string): boolean {
    const shape = this.shapes.get(table);
    if (shape === undefined) throw new Error(`writer: describe(${table}) first`);
    return shape !== null;
  }

  hasColumn(table: string, column: string): boolean {
    return this.shapes.get(table)?.has(column) ?? false;
  }

  columns(table: string): ColumnInfo[] {
    return [...(this.shapes.get(table)?.values() ?? [])];
  }

  /** Buffers one row; `Dec` values are encoded with the column's scale at flush time. */
  add(table: string, row: Row): void {
    let buf = this.buffers.get(table);
    if (!buf) {
      if (!this.shapes.has(table)) throw new Error(`writer: describe(${table}) first`);
      buf = [];
      this.buffers.set(table, buf);
      this.order.push(table);
    }
    buf.push(row);
  }

  /** Runs `fn` in one transaction and flushes everything it buffered before committing. */
  async group<T>(fn: () => Promise<T> | T): Promise<T> {
    if (this.db !== this.knex) throw new Error('writer: groups do not nest');
    return this.knex.transaction(async (trx) => {
      this.db = trx;
      this.writtenInGroup = 0;
      try {
        const out = await fn();
        await this.flushAll();
        return out;
      } finally {
        this.db = this.knex;
      }
    });
  }

  /** Rows buffered and not yet written. */
  pendingRows(): number {
    let n = 0;
    for (const rows of this.buffers.values()) n += rows.length;
    return n + this.writtenInGroup;
  }

  private writtenInGroup = 0;
  /** Time spent in the database and statements run (diagnostics). */
  dbNanos = 0n;
  statements = 0;

  /** Flushes every buffer (in registration order) when any of them holds a full chunk. */
  async checkpoint(): Promise<void> {
    for (const [table, rows] of this.buffers) {
      if (rows.length >= this.chunkRows(table, rows)) {
        await this.flushAll();
        return;
      }
    }
  }

  async flushAll(): Promise<void> {
    for (const table of this.order) {
      const rows = this.buffers.get(table);
      if (rows && rows.length) {
        this.buffers.set(table, []);
        await this.write(table, rows);
      }
    }
  }

  /** Progress lines for every table written so far (call at the end of a phase). */
  report(tables?: readonly string[]): void {
    const elapsed = ((Date.now() - this.startedAt) / 1000).toFixed(1);
    for (const t of tables ?? this.order) {
      const n = this.counts.get(t) ?? 0;
      if (n && this.lastProgress.get(t) !== n) {
        this.lastProgress.set(t, n);
        this.options.onProgress?.(`${t.padEnd(8)} ${String(n).padStart(9)} rows  ${elapsed.padStart(7)} s`);
      }
    }
  }

  private readonly encodedZero = new Map<number, string | number>();
  private readonly encoded = new Map<string, string | number>();

  /**
   * dialect.encodeDecimal, remembered per scale and value: amounts repeat a lot (zeros, rates,
   * quantities, prices; about 85% of the values of a seed) and the encoding is a costly part of
   * a row.
   */
  private encode(value: Dec, scale: number): string | number {
    if (value.isZero()) {
      let z = this.encodedZero.get(scale);
      if (z === undefined) {
        z = this.dialect.encodeDecimal(value, scale);
        this.encodedZero.set(scale, z);
      }
      return z;
    }
    const k = `${scale}:${value.toString()}`;
    let e = this.encoded.get(k);
    if (e === undefined) {
      e = this.dialect.encodeDecimal(value, scale);
      if (this.encoded.size > 500_000) this.encoded.clear();
      this.encoded.set(k, e);
    }
    return e;
  }

  private readonly prepared = new WeakMap<object, Map<string, { run(params: unknown[]): unknown }>>();

  /**
   * Prepared statements on the group's SQLite connection (better-sqlite3): a multi-row insert of
   * the chunk size (from the column count and SQLite's 32766 parameters) and a one-row insert.
   */
  private async sqliteStatements(head: string, tuple: string, columns: number) {
    const conn = (await (this.db as unknown as { client: { acquireConnection(): Promise<unknown> } }).client.acquireConnection()) as {
      prepare(sql: string): { run(params: unknown[]): unknown };
    };
    let cache = this.prepared.get(conn);
    if (!cache) {
      cache = new Map();
      this.prepared.set(conn, cache);
    }
    const rows = Math.max(1, Math.min(SQLITE_ROWS_PER_STATEMENT, Math.floor(PARAM_LIMIT.sqlite / columns)));
    const get = (n: number) => {
      const sql = head + new Array(n).fill(tuple).join(', ');
      let st = cache!.get(sql);
      if (!st) {
        st = conn.prepare(sql);
        cache!.set(sql, st);
      }
      return st;
    };
    return { rows, full: get(rows), one: get(1) };
  }

  private chunkRows(table: string, rows: Row[]): number {
    const cols = Math.max(1, Object.keys(rows[0] ?? {}).length);
    return Math.max(1, Math.min(ROW_LIMIT[this.engine], Math.floor((PARAM_LIMIT[this.engine] - 1) / cols)));
  }

  private scaleOf(table: string, column: string, info: ColumnInfo, intended?: number): number {
    const key = `${table}.${column}`;
    const fromCatalog = this.options.scales.get(table)?.get(column);
    const known = fromCatalog ?? info.scale;
    if (known !== undefined) {
      if (intended !== undefined && intended !== known && !this.unknownScaleSeen.has(key)) {
        this.unknownScaleSeen.add(key);
        this.notes.scaleMismatches.push(`${key}: seed ${intended}, schema ${known}`);
      }
      return known;
    }
    if (intended !== undefined) return intended;
    if (!this.unknownScaleSeen.has(key)) {
      this.unknownScaleSeen.add(key);
      this.notes.unknownScales.push(key);
    }
    return 2;
  }

  private async write(table: string, rows: Row[]): Promise<void> {
    const shape = this.shapes.get(table);
    if (!shape) {
      if (!this.notes.missingTables.includes(table)) this.notes.missingTables.push(table);
      return;
    }
    // Column list: union of the keys the seed provides that the table has, plus required fillers.
    const wanted = new Set<string>();
    for (const r of rows) for (const k of Object.keys(r)) wanted.add(k);
    const cols: ColumnInfo[] = [];
    for (const k of wanted) {
      const info = shape.get(k);
      if (info) cols.push(info);
      else {
        const list = (this.notes.droppedColumns[table] ??= []);
        if (!list.includes(k)) list.push(k);
      }
    }
    const fillers: ColumnInfo[] = [];
    for (const info of shape.values()) {
      if (!wanted.has(info.name) && !info.nullable && !info.hasDefault && !info.primaryKey) {
        fillers.push(info);
        const list = (this.notes.filledColumns[table] ??= []);
        if (!list.includes(info.name)) list.push(info.name);
      }
    }
    const all = [...cols, ...fillers];
    const per = Math.max(1, Math.min(ROW_LIMIT[this.engine], Math.floor((PARAM_LIMIT[this.engine] - 1) / all.length)));
    const q = (id: string) => (this.engine === 'mssql' ? `[${id}]` : `"${id}"`);
    const head = `insert into ${q(table)} (${all.map((c) => q(c.name)).join(', ')}) values `;
    const tuple = `(${all.map(() => '?').join(', ')})`;
    // The scale each decimal column is written with (catalog, else the engine's), looked up once.
    const catalogScales = this.options.scales.get(table);
    const knownScales = cols.map((c) => catalogScales?.get(c.name) ?? c.scale);
    const sqlite = this.engine === 'sqlite' ? await this.sqliteStatements(head, tuple, all.length) : null;
    for (let start = 0; start < rows.length; start += sqlite ? sqlite.rows : per) {
      const slice = rows.slice(start, start + (sqlite ? sqlite.rows : per));
      const bindings: unknown[] = [];
      for (const r of slice) {
        for (let i = 0; i < cols.length; i++) {
          const c = cols[i]!;
          const v = r[c.name];
          if (v instanceof Scaled) {
            const known = knownScales[i];
            if (known === undefined || known === v.scale) bindings.push(this.encode(v.value, v.scale));
            else bindings.push(this.encode(v.value.toDecimalPlaces(this.scaleOf(table, c.name, c, v.scale)), known));
          } else if (v instanceof Dec) bindings.push(this.encode(v, this.scaleOf(table, c.name, c)));
          else if (v === undefined) bindings.push(null);
          else if (typeof v === 'boolean' && this.engine !== 'postgres') bindings.push(v ? 1 : 0);
          else if (typeof v === 'string' && c.maxLength !== undefined && v.length > c.maxLength) bindings.push(v.slice(0, c.maxLength));
          else bindings.push(v);
        }
        for (const c of fillers) bindings.push(neutralValue(c));
      }
      const t0 = process.hrtime.bigint();
      if (sqlite) {
        // SQLite: the same prepared multi-row statement for every full chunk, one-row statements for the rest.
        if (slice.length === sqlite.rows) sqlite.full.run(bindings);
        else for (let i = 0; i < bindings.length; i += all.length) sqlite.one.run(bindings.slice(i, i + all.length));
      } else {
        const sql = head + new Array(slice.length).fill(tuple).join(', ');
        await this.db.raw(sql, bindings as Knex.RawBinding[]);
      }
      this.dbNanos += process.hrtime.bigint() - t0;
      this.statements++;
    }
    if (shape.has('recnum')) {
      let max = this.maxRecnum.get(table) ?? 0;
      for (const r of rows) if (typeof r.recnum === 'number' && r.recnum > max) max = r.recnum;
      this.maxRecnum.set(table, max);
    }
    this.writtenInGroup += rows.length;
    const before = this.counts.get(table) ?? 0;
    this.counts.set(table, before + rows.length);
    // A progress line every 100k rows of a big table.
    if (Math.floor((before + rows.length) / 100_000) > Math.floor(before / 100_000)) this.report([table]);
  }
}

export interface WriterUpdate {
  /** Key column matched against the first value of each row. */
  key: string;
  /** Columns set, in the order of the remaining values. */
  columns: string[];
  rows: unknown[][];
}

/**
 * Updates many rows by key in batches: UPDATE ... FROM (VALUES ...) joined on the key
 * (SQLite 3.33+, PostgreSQL, SQL Server), with casts where PostgreSQL cannot infer types.
 */
export async function batchUpdate(writer: BatchWriter, db: Knex | Knex.Transaction, table: string, u: WriterUpdate): Promise<void> {
  const engine = writer.engine;
  const shape = new Map(writer.columns(table).map((c) => [c.name, c] as const));
  const cols = [u.key, ...u.columns];
  for (const c of cols) if (!shape.has(c)) throw new Error(`batchUpdate: ${table}.${c} does not exist`);
  const per = Math.max(1, Math.min(ROW_LIMIT[engine], Math.floor((PARAM_LIMIT[engine] - 1) / cols.length)));
  const q = (id: string) => (engine === 'mssql' ? `[${id}]` : `"${id}"`);
  const cast = (c: string) => {
    if (engine !== 'postgres') return '';
    const info = shape.get(c)!;
    return `::${info.type === 'USER-DEFINED' ? 'text' : info.type}`;
  };
  const v = (k: number) => (engine === 'mssql' ? `v.c${k + 1}` : `v.column${k + 1}${cast(cols[k]!)}`);
  for (let start = 0; start < u.rows.length; start += per) {
    const slice = u.rows.slice(start, start + per);
    const tuple = `(${cols.map(() => '?').join(', ')})`;
    const values = new Array(slice.length).fill(tuple).join(', ');
    const bindings: unknown[] = [];
    for (const row of slice) {
      row.forEach((value, k) => {
        const col = cols[k]!;
        if (value instanceof Scaled) {
          const info = shape.get(col)!;
          const scale = info.scale ?? value.scale;
          bindings.push(writer.dialect.encodeDecimal(value.value.toDecimalPlaces(scale), scale));
        } else bindings.push(value);
      });
    }
    const sets = u.columns.map((c, k) => `${q(c)} = ${v(k + 1)}`).join(', ');
    const sql =
      engine === 'mssql'
        ? `update t set ${u.columns.map((c, k) => `t.${q(c)} = v.c${k + 2}`).join(', ')} from ${q(table)} t join (values ${values}) as v(${cols.map((_, k) => `c${k + 1}`).join(', ')}) on t.${q(u.key)} = v.c1`
        : `update ${q(table)} set ${sets} from (values ${values}) as v where ${q(table)}.${q(u.key)} = ${v(0)}`;
    await db.raw(sql, bindings as Knex.RawBinding[]);
  }
}

function neutralValue(c: ColumnInfo): unknown {
  const t = c.type.toLowerCase();
  if (/bool/.test(t)) return false;
  if (/int|dec|num|real|float|double|money/.test(t)) return 0;
  if (/timestamp|datetime/.test(t)) return '2026-01-01 00:00:00';
  if (/date/.test(t)) return '2026-01-01';
  if (/uuid|uniqueidentifier/.test(t)) return '00000000-0000-4000-8000-000000000000';
  return '';
}

/** Columns of the given tables, in one query (missing tables are absent from the result). */
async function readShapes(knex: Knex, engine: Engine, tables: readonly string[]): Promise<Map<string, Map<string, ColumnInfo>>> {
  const out = new Map<string, Map<string, ColumnInfo>>();
  const shape = (t: string) => {
    let m = out.get(t);
    if (!m) {
      m = new Map();
      out.set(t, m);
    }
    return m;
  };
  if (tables.length === 0) return out;
  const wanted = new Set(tables);
  if (engine === 'sqlite') {
    const rows = (await knex.raw(
      `select m.name as tbl, p.name, p.type, p."notnull" as "notnull", p.dflt_value, p.pk from sqlite_master m join pragma_table_info(m.name) p where m.type = 'table'`,
    )) as Array<{ tbl: string; name: string; type: string; notnull: number; dflt_value: unknown; pk: number }>;
    for (const r of rows) {
      if (!wanted.has(r.tbl)) continue;
      const len = /char\s*\((\d+)\)/i.exec(r.type);
      shape(r.tbl).set(r.name, {
        name: r.name,
        type: r.type,
        ...(len ? { maxLength: Number(len[1]) } : {}),
        nullable: !r.notnull,
        hasDefault: r.dflt_value !== null,
        primaryKey: r.pk > 0 && /int/i.test(r.type),
      });
    }
    return out;
  }
  const rows = (await knex('information_schema.columns')
    .select('table_name', 'column_name', 'data_type', 'is_nullable', 'column_default', 'numeric_scale', 'character_maximum_length')
    .modify((qb) => {
      if (engine === 'postgres') qb.whereRaw('table_schema = current_schema()');
    })) as Array<Record<string, any>>;
  for (const r of rows) {
    const table = String(r.table_name ?? r.TABLE_NAME);
    if (!wanted.has(table)) continue;
    const type = String(r.data_type ?? r.DATA_TYPE);
    const scale = r.numeric_scale ?? r.NUMERIC_SCALE;
    const def = r.column_default ?? r.COLUMN_DEFAULT;
    const len = r.character_maximum_length ?? r.CHARACTER_MAXIMUM_LENGTH;
    shape(table).set(String(r.column_name ?? r.COLUMN_NAME), {
      name: String(r.column_name ?? r.COLUMN_NAME),
      type,
      nullable: String(r.is_nullable ?? r.IS_NULLABLE).toUpperCase() === 'YES',
      hasDefault: def !== null && def !== undefined,
      scale: /numeric|decimal/i.test(type) && scale !== null && scale !== undefined ? Number(scale) : undefined,
      maxLength: len !== null && len !== undefined && Number(len) > 0 ? Number(len) : undefined,
      primaryKey: false,
    });
  }
  return out;
}
