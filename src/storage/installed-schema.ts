/**
 * The installed schema: which columns of the catalog's tables the accounting database really has.
 * Customers run older builds of the accounting system, whose tables lack columns later builds
 * added (spec, Errors, 422: "a column the installed build lacks"). Each process learns the schema
 * from the database's own catalog at start (`load`), and again whenever the database reports a
 * column or table it does not have while running (`afterMissing`, called by the boundary), and when
 * the maintenance lock is released (an upgrade of the accounting system is done under it).
 *
 * Only this module knows how each engine describes its tables:
 *   SQLite       pragma table_info (as the table-valued function pragma_table_info)
 *   PostgreSQL   information_schema.columns of the connection's current schema
 *   SQL Server   sys.columns joined to sys.tables of the login's default schema
 * What the published fields of a missing column are is the catalog's business
 * (src/catalog/installed.ts); this module answers `lacks(table, column)` and nothing else.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Engine } from './database';
import type { InstalledColumns } from '../catalog/installed';

/** The statement listing (table_name, column_name) of `tables`, for `engine`. */
export function installedColumnsQuery(knex: Knex, engine: Engine, tables: readonly string[]): Knex.QueryBuilder {
  switch (engine) {
    case 'sqlite':
      return knex
        .from(knex.raw('sqlite_master as m, pragma_table_info(m.name) as p'))
        .where('m.type', 'table')
        .whereIn('m.name', [...tables])
        .select({ table_name: 'm.name', column_name: 'p.name' });
    case 'postgres':
      return knex
        .from('information_schema.columns')
        .where('table_schema', knex.raw('current_schema()'))
        .whereIn('table_name', [...tables])
        .select('table_name', 'column_name');
    case 'mssql':
      return knex
        .from({ c: 'sys.columns' })
        .join({ t: 'sys.tables' }, 't.object_id', 'c.object_id')
        .where('t.schema_id', knex.raw('schema_id()'))
        .whereIn('t.name', [...tables])
        .select({ table_name: 't.name', column_name: 'c.name' });
  }
}

/** The catalog's tables and columns (what the service expects), by table. */
export type ExpectedColumns = ReadonlyMap<string, readonly string[]>;

/** A (table, column) the service expects and the installed build lacks (a missing table lacks all its columns). */
export interface MissingColumn {
  table: string;
  column: string;
}

export interface InstalledSchemaOptions {
  knex: Knex;
  engine: Engine;
  logger: Logger;
  /** The tables and columns the service expects (the catalog's: src/catalog/installed.ts expectedColumns). */
  expected: ExpectedColumns;
  /** How a missing column is named in the log (`tkfprt.manprt (parts.manufacturerPartNumber)`). */
  describe?: (missing: MissingColumn) => string;
  /**
   * Least time between two reads set off by reports of one name the known missing columns do not
   * explain (a bare column name, a name outside the catalog): such a burst reads the catalog once.
   */
  minRefreshIntervalMs?: number;
  /** How long an answer waits for the catalog read that a missing column set off (it goes on after). */
  refreshWaitMs?: number;
}

/** What a read of the database's catalog found: what is missing, and what changed since the last read. */
export interface SchemaReading {
  missing: MissingColumn[];
  /** Missing now and not before. */
  newlyMissing: MissingColumn[];
  /** Missing before and present now. */
  restored: MissingColumn[];
}

const registry = new WeakMap<object, InstalledSchema>();

/**
 * The installed schema of the database a knex instance (or one of its transactions) talks to, for
 * the engines that get only a transaction (the posting read-back); undefined when none was
 * registered (then every expected column is taken as present). Keyed by the client's
 * configuration object, which knex shares between an instance and its transactions.
 */
export function installedSchemaOf(db: Knex | Knex.Transaction): InstalledSchema | undefined {
  const config = (db as Knex).client?.config as object | undefined;
  return config ? registry.get(config) : undefined;
}

/** Makes `schema` what installedSchemaOf answers for `knex` and its transactions (the service's, src/services.ts). */
export function registerInstalledSchema(knex: Knex, schema: InstalledSchema): void {
  const config = knex.client?.config as object | undefined;
  if (config) registry.set(config, schema);
}

export class InstalledSchema implements InstalledColumns {
  private present: Map<string, Set<string>> | undefined;
  private missingSet = new Set<string>();
  private missingList: MissingColumn[] = [];
  private inFlight: Promise<SchemaReading> | undefined;
  /** When a report of this (table.)column last set off a read of the catalog. */
  private readFor = new Map<string, number>();
  private gen = 0;
  private readonly minRefreshIntervalMs: number;
  private readonly refreshWaitMs: number;

  constructor(private readonly options: InstalledSchemaOptions) {
    this.minRefreshIntervalMs = options.minRefreshIntervalMs ?? 1000;
    this.refreshWaitMs = options.refreshWaitMs ?? 1000;
  }

  /** Increases each time what is missing changes (views built from it are rebuilt). */
  get generation(): number {
    return this.gen;
  }

  /** True once the database's catalog has been read. */
  get known(): boolean {
    return this.present !== undefined;
  }

  lacks(table: string, column: string): boolean {
    return this.missingSet.has(`${table}.${column}`);
  }

  /** The expected columns the installed build lacks, in catalog order. */
  missing(): readonly MissingColumn[] {
    return this.missingList;
  }

  /**
   * Reads the database's catalog now (start, and after the maintenance lock is released) and logs
   * what the installed build lacks. A failure is logged and changes nothing (every column not known
   * missing is taken as present; the database names one when a statement needs it).
   */
  async load(why = 'start'): Promise<void> {
    try {
      const reading = await this.read();
      const { logger } = this.options;
      if (why === 'start' ? reading.missing.length > 0 : reading.newlyMissing.length + reading.restored.length > 0) {
        logger.warn(
          { missingColumns: reading.missing.map((m) => this.describe(m)), ...(why === 'start' ? {} : { restoredColumns: reading.restored.map((m) => this.describe(m)) }) },
          'the installed build of the accounting database lacks columns the contract publishes: requests that name them answer 422 COLUMN_UNAVAILABLE, reads that do not answer without them',
        );
      } else if (why === 'start') {
        logger.info({ tables: this.options.expected.size }, 'installed schema read: every column the contract publishes is present');
      }
    } catch (err) {
      this.options.logger.warn({ err, why }, 'could not read the installed schema of the accounting database');
    }
  }

  /**
   * After the database reported a missing column or table (`reported`, as far as the driver named
   * it): reads the catalog again, unless what is known missing already explains the report or the
   * same report set off a read less than minRefreshIntervalMs ago (a burst reads it once),
   * waiting at most refreshWaitMs for it, and answers what is known missing then. Never throws.
   */
  async afterMissing(reported: { table?: string; column?: string } = {}): Promise<readonly MissingColumn[]> {
    if (this.explains(reported)) return this.missingList;
    const key = `${reported.table ?? ''}.${reported.column ?? ''}`.toLowerCase();
    const now = Date.now();
    if (!this.inFlight && now - (this.readFor.get(key) ?? 0) < this.minRefreshIntervalMs) return this.missingList;
    if (this.readFor.size >= 1000) this.readFor.clear();
    this.readFor.set(key, now);
    const reading = this.read().then(
      (r) => {
        if (r.newlyMissing.length > 0) {
          this.options.logger.warn({ missingColumns: r.newlyMissing.map((m) => this.describe(m)) }, 'the accounting database reported a missing column: the installed schema was read again');
        }
      },
      (err) => this.options.logger.warn({ err }, 'could not read the installed schema again after a missing column'),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([reading, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.refreshWaitMs)))]);
    clearTimeout(timer);
    return this.missingList;
  }

  /**
   * Whether a known missing column (or table) matches the report. Only a report that names the
   * table: a bare column name (SQLite, SQL Server) may be another table's column of that name.
   */
  private explains(reported: { table?: string; column?: string }): boolean {
    const table = reported.table?.toLowerCase();
    const column = reported.column?.toLowerCase();
    if (table === undefined) return false;
    return this.missingList.some((m) => (table === undefined || m.table.toLowerCase() === table) && (column === undefined || m.column.toLowerCase() === column));
  }

  private describe(m: MissingColumn): string {
    return this.options.describe?.(m) ?? `${m.table}.${m.column}`;
  }

  private read(): Promise<SchemaReading> {
    if (this.inFlight) return this.inFlight;
    const reading = (async () => {
      const { knex, engine, expected } = this.options;
      const rows = (await installedColumnsQuery(knex, engine, [...expected.keys()])) as Array<{ table_name: string; column_name: string }>;
      // No build lacks every table: the catalog was read in another schema than the tables' (SQL
      // Server's default schema of the login, PostgreSQL's search_path). Nothing is marked missing.
      if (rows.length === 0 && expected.size > 0) throw new Error('the database catalog lists none of the expected tables in the default schema: nothing is taken as missing');
      const present = new Map<string, Set<string>>();
      for (const row of rows) {
        // SQL Server and PostgreSQL may report a different case than the migrations used.
        const table = String(row.table_name).toLowerCase();
        let columns = present.get(table);
        if (!columns) present.set(table, (columns = new Set()));
        columns.add(String(row.column_name).toLowerCase());
      }
      return this.apply(present);
    })().finally(() => {
      this.inFlight = undefined;
    });
    this.inFlight = reading;
    return reading;
  }

  private apply(present: Map<string, Set<string>>): SchemaReading {
    const missing: MissingColumn[] = [];
    for (const [table, columns] of this.options.expected) {
      const have = present.get(table.toLowerCase());
      for (const column of columns) if (!have?.has(column.toLowerCase())) missing.push({ table, column });
    }
    const before = this.missingSet;
    const now = new Set(missing.map((m) => `${m.table}.${m.column}`));
    const newlyMissing = missing.filter((m) => !before.has(`${m.table}.${m.column}`));
    const restored = this.missingList.filter((m) => !now.has(`${m.table}.${m.column}`));
    this.present = present;
    if (newlyMissing.length > 0 || restored.length > 0) {
      this.missingSet = now;
      this.missingList = missing;
      this.gen += 1;
    }
    return { missing, newlyMissing, restored };
  }
}
