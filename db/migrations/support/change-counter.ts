/**
 * Change counters kept by triggers (migrations 20261124000041 `refchg` and 20261125000001
 * `datchg`): a table of (id, n) rows, and on every counted table a trigger that counts the change
 * in the transaction that makes it. What differs between the two counters is the statement a
 * trigger runs (and on PostgreSQL the trigger function's body); the triggers' shape is here.
 *
 * Part of already-applied migrations: what these functions emit must not change for `refchg`.
 */
import type { Knex } from 'knex';
import type { Engine } from '../../../src/storage/database';
import type { TableStep } from './schema';

export interface CounterSpec {
  /** Trigger names are `<table>_<suffix>` (SQLite: `<table>_<suffix>_<event>`). */
  suffix: string;
  /** SQLite: the statement a changed row runs. */
  sqliteStatement: string;
  /** SQL Server: the statement a changing statement runs (when it changed a row). */
  mssqlStatement: string;
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
  const { suffix } = spec;
  switch (engine) {
    case 'sqlite':
      return tables.flatMap((t) =>
        ['INSERT', 'UPDATE', 'DELETE'].map(
          (event) => `CREATE TRIGGER IF NOT EXISTS "${t}_${suffix}_${event.toLowerCase()}" AFTER ${event} ON "${t}" BEGIN ${spec.sqliteStatement}; END`,
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
          `IF EXISTS (SELECT 1 FROM inserted) OR EXISTS (SELECT 1 FROM deleted) ${spec.mssqlStatement}; END`,
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
