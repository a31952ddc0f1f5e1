/**
 * Change counters kept by triggers (migrations 20261124000041 `refchg` and 20261125000001
 * `datchg`): a table of (id, n) rows, and on every counted table a trigger that adds 1 to a row
 * in the transaction that changes it. What differs between the two counters is which row a
 * change bumps, and on PostgreSQL the trigger function's body; the statements' shape is here.
 *
 * Part of already-applied migrations: what these functions emit must not change for `refchg`.
 */
import type { Knex } from 'knex';
import type { Engine } from '../../../src/storage/database';
import type { TableStep } from './schema';

export interface CounterSpec {
  /** The counter table. */
  counter: string;
  /** Trigger names are `<table>_<suffix>` (SQLite: `<table>_<suffix>_<event>`). */
  suffix: string;
  /** SQLite: the row (id) a change bumps. */
  sqliteRow: string;
  /** SQL Server: the expression of the row a change bumps. */
  mssqlRow: string;
  /** PostgreSQL: the trigger function and its plpgsql body (between BEGIN and END). */
  pgFunction: string;
  pgBody: string;
}

export function counterTableStep(counter: string): TableStep {
  return {
    table: counter,
    build: (knex: Knex) =>
      knex.schema.createTable(counter, (t) => {
        t.integer('id').notNullable().primary();
        t.bigInteger('n').notNullable().defaultTo(0);
      }),
  };
}

/** The statements that create the counting triggers on `tables`, one statement (batch) each. */
export function counterTriggers(spec: CounterSpec, engine: Engine, tables: readonly string[]): string[] {
  const { counter, suffix } = spec;
  switch (engine) {
    case 'sqlite':
      return tables.flatMap((t) =>
        ['INSERT', 'UPDATE', 'DELETE'].map(
          (event) => `CREATE TRIGGER IF NOT EXISTS "${t}_${suffix}_${event.toLowerCase()}" AFTER ${event} ON "${t}" BEGIN UPDATE "${counter}" SET "n" = "n" + 1 WHERE "id" = ${spec.sqliteRow}; END`,
        ),
      );
    case 'postgres':
      return [
        `CREATE OR REPLACE FUNCTION ${spec.pgFunction}() RETURNS trigger LANGUAGE plpgsql AS $$ ${spec.pgBody} $$`,
        ...tables.flatMap((t) => [
          `DROP TRIGGER IF EXISTS "${t}_${suffix}" ON "${t}"`,
          `CREATE TRIGGER "${t}_${suffix}" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "${t}" FOR EACH STATEMENT EXECUTE FUNCTION ${spec.pgFunction}()`,
        ]),
      ];
    case 'mssql':
      // Each trigger its own batch (one knex.raw each); CREATE OR ALTER needs SQL Server 2016 SP1.
      return tables.map(
        (t) =>
          `CREATE OR ALTER TRIGGER [${t}_${suffix}] ON [${t}] AFTER INSERT, UPDATE, DELETE AS BEGIN SET NOCOUNT ON; ` +
          `IF EXISTS (SELECT 1 FROM inserted) OR EXISTS (SELECT 1 FROM deleted) UPDATE [${counter}] SET [n] = [n] + 1 WHERE [id] = ${spec.mssqlRow}; END`,
      );
  }
}

export function dropCounterTriggers(spec: CounterSpec, engine: Engine, tables: readonly string[]): string[] {
  const { suffix } = spec;
  switch (engine) {
    case 'sqlite':
      return tables.flatMap((t) => ['insert', 'update', 'delete'].map((e) => `DROP TRIGGER IF EXISTS "${t}_${suffix}_${e}"`));
    case 'postgres':
      return [...tables.map((t) => `DROP TRIGGER IF EXISTS "${t}_${suffix}" ON "${t}"`), `DROP FUNCTION IF EXISTS ${spec.pgFunction}()`];
    case 'mssql':
      return tables.map((t) => `DROP TRIGGER IF EXISTS [${t}_${suffix}]`);
  }
}
