/**
 * Building blocks of the migrations. A migration is a list of steps, each creating one table
 * through a knex schema builder. Keeping the builders as data (instead of awaiting them inside
 * `up`) lets the same migration run against a live database (`applySteps`) and be compiled to
 * SQL without a connection (`compileSteps`, used to check the SQL Server DDL).
 *
 * These helpers are part of already-applied migrations: do not change what they emit. Add a new
 * helper (or a new migration) instead.
 */
import type { Knex } from 'knex';
import { dialectFor, engineOf } from '../../../src/storage/dialect';

export interface TableStep {
  /** Table created by the step (checked with hasTable, dropped by `down`). */
  table: string;
  build(knex: Knex): Knex.SchemaBuilder;
}

/** Columns (and their indexes) added to a table an earlier migration created. */
export interface AlterStep {
  table: string;
  build(knex: Knex): Knex.SchemaBuilder;
}

export type TableBody = (t: Knex.CreateTableBuilder, knex: Knex) => void;

/** Exact decimal column: DECIMAL(p, s) on PostgreSQL and SQL Server, scaled bigint on SQLite. */
export function dec(knex: Knex, t: Knex.CreateTableBuilder, name: string, precision: number, scale: number): Knex.ColumnBuilder {
  return dialectFor(engineOf(knex)).decimalColumn(t, name, precision, scale);
}

/**
 * Default of a timestamp column: the current time in UTC. SQL Server's CURRENT_TIMESTAMP is the
 * host's local time (datetime2 has no zone), so it gets SYSUTCDATETIME(); PostgreSQL stores
 * timestamptz and SQLite's CURRENT_TIMESTAMP is already UTC.
 */
export function utcNow(knex: Knex): Knex.Raw {
  return engineOf(knex) === 'mssql' ? knex.raw('SYSUTCDATETIME()') : knex.fn.now();
}

/** insdte / upddte (set on insert; upddte on every update) and the users who did it. */
export function auditColumns(t: Knex.CreateTableBuilder, knex: Knex): void {
  t.datetime('insdte').notNullable().defaultTo(utcNow(knex));
  t.datetime('upddte').notNullable().defaultTo(utcNow(knex));
  t.string('insusr', 30).nullable();
  t.string('updusr', 30).nullable();
}

export interface EntityTableOptions {
  /** Transaction table: entdte, usrnme, actprd (0 to 12), postyr. */
  transaction?: boolean;
  /** Header that posts to the ledger: lgrrec (the ledger transaction's record number). */
  ledger?: boolean;
}

/** A top-level table: `_idnum` uuid primary key and a unique `recnum`, then the body, then the standard columns. */
export function entityTable(table: string, options: EntityTableOptions, body: TableBody): TableStep {
  return {
    table,
    build: (knex) =>
      knex.schema.createTable(table, (t) => {
        t.uuid('_idnum').notNullable().primary(`${table}_pk`).defaultTo(knex.fn.uuid());
        t.integer('recnum').notNullable();
        body(t, knex);
        if (options.transaction) {
          t.date('entdte').nullable();
          t.string('usrnme', 30).nullable();
          t.smallint('actprd').notNullable().checkBetween([0, 12], `${table}_actprd_ck`);
          t.integer('postyr').notNullable();
        }
        if (options.ledger) t.integer('lgrrec').nullable();
        auditColumns(t, knex);
        t.unique(['recnum'], { indexName: `${table}_recnum_uq`, useConstraint: true });
        if (options.transaction) t.index(['postyr', 'actprd'], `${table}_postyr_actprd_idx`);
        if (options.transaction) t.index(['insdte'], `${table}_insdte_idx`);
        if (options.ledger) t.index(['lgrrec'], `${table}_lgrrec_idx`);
      }),
  };
}

/** A line table: `_idnum` primary key, `_idref` to the header's `_idnum` (cascading delete), `linnum` unique per header. */
export function lineTable(table: string, parent: string, body: TableBody): TableStep {
  return {
    table,
    build: (knex) =>
      knex.schema.createTable(table, (t) => {
        t.uuid('_idnum').notNullable().primary(`${table}_pk`).defaultTo(knex.fn.uuid());
        t.uuid('_idref').notNullable();
        t.integer('linnum').notNullable();
        body(t, knex);
        auditColumns(t, knex);
        t.foreign('_idref', `${table}_idref_fk`).references('_idnum').inTable(parent).onDelete('CASCADE');
        t.unique(['_idref', 'linnum'], { indexName: `${table}_idref_linnum_uq`, useConstraint: true });
      }),
  };
}

/** Creates the tables that do not exist yet, in order (safe to run again). */
export async function applySteps(knex: Knex, steps: readonly TableStep[]): Promise<void> {
  for (const step of steps) {
    if (await knex.schema.hasTable(step.table)) continue;
    await step.build(knex);
  }
}

/** Drops the tables in reverse order. */
export async function dropSteps(knex: Knex, steps: readonly TableStep[]): Promise<void> {
  for (const step of [...steps].reverse()) await knex.schema.dropTableIfExists(step.table);
}

/** The SQL the steps would run on `knex`'s dialect, without a connection. */
export function compileSteps(knex: Knex, steps: readonly TableStep[]): string[] {
  return steps.map((step) => step.build(knex).toString());
}
