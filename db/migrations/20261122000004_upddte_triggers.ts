/**
 * `upddte` is set on every update by a trigger, as in the accounting system: the `lastUpdated`
 * change stamp then finds edits made by anyone (the posting code, the seed, a DBA's UPDATE), not
 * only by code that remembers to set it. An UPDATE that sets `upddte` itself keeps its value.
 *
 * Triggers exist on every entity table and line table (not on the infrastructure tables).
 */
import type { Knex } from 'knex';
import type { Engine } from '../../src/storage/database';
import { engineOf } from '../../src/storage/dialect';
import { steps as coreSteps } from './20261122000002_ledger_ap_jobcost_core';
import { steps as entitySteps } from './20261122000003_entities';

export const TABLES: readonly string[] = [...coreSteps, ...entitySteps].map((s) => s.table);

const PG_FUNCTION = 'books_set_upddte';

/** The statements that create the triggers on `engine`, one statement each. */
export function createStatements(engine: Engine, tables: readonly string[] = TABLES): string[] {
  switch (engine) {
    case 'sqlite':
      return tables.map(
        (t) =>
          `CREATE TRIGGER IF NOT EXISTS "${t}_upddte" AFTER UPDATE ON "${t}" FOR EACH ROW WHEN NEW."upddte" IS OLD."upddte" ` +
          `BEGIN UPDATE "${t}" SET "upddte" = CURRENT_TIMESTAMP WHERE "_idnum" = NEW."_idnum"; END`,
      );
    case 'postgres':
      return [
        `CREATE OR REPLACE FUNCTION ${PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ ` +
          `BEGIN IF NEW.upddte IS NOT DISTINCT FROM OLD.upddte THEN NEW.upddte := now(); END IF; RETURN NEW; END $$`,
        ...tables.flatMap((t) => [
          `DROP TRIGGER IF EXISTS "${t}_upddte" ON "${t}"`,
          `CREATE TRIGGER "${t}_upddte" BEFORE UPDATE ON "${t}" FOR EACH ROW EXECUTE FUNCTION ${PG_FUNCTION}()`,
        ]),
      ];
    case 'mssql':
      // CREATE OR ALTER needs SQL Server 2016 SP1; each trigger is its own batch (one knex.raw each).
      return tables.map(
        (t) =>
          `CREATE OR ALTER TRIGGER [${t}_upddte] ON [${t}] AFTER UPDATE AS BEGIN SET NOCOUNT ON; ` +
          `IF NOT UPDATE([upddte]) UPDATE x SET [upddte] = SYSUTCDATETIME() FROM [${t}] x JOIN inserted i ON x.[_idnum] = i.[_idnum]; END`,
      );
  }
}

export function dropStatements(engine: Engine, tables: readonly string[] = TABLES): string[] {
  switch (engine) {
    case 'sqlite':
      return tables.map((t) => `DROP TRIGGER IF EXISTS "${t}_upddte"`);
    case 'postgres':
      return [...tables.map((t) => `DROP TRIGGER IF EXISTS "${t}_upddte" ON "${t}"`), `DROP FUNCTION IF EXISTS ${PG_FUNCTION}()`];
    case 'mssql':
      return tables.map((t) => `DROP TRIGGER IF EXISTS [${t}_upddte]`);
  }
}

export async function up(knex: Knex): Promise<void> {
  for (const sql of createStatements(engineOf(knex))) await knex.raw(sql);
}

export async function down(knex: Knex): Promise<void> {
  for (const sql of dropStatements(engineOf(knex))) await knex.raw(sql);
}
