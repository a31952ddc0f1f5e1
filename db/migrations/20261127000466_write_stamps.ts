/**
 * PostgreSQL: a transaction's change stamps (`insdte` by default, `upddte` by default and by the
 * trigger of 20261122000004) are the start of its first statement that stamps a row, no longer the
 * start of the transaction (now()). A transaction that reads for a while and writes later then
 * stamps its rows when it begins to write: change-event detection waits for the transactions that
 * are writing (src/storage/open-writes.ts), and a stamp older than a transaction's first write
 * would fall in a window read before it committed (docs/decisions/0466-detection-waits-for-open-writes.md).
 * Every row the transaction stamps still carries the same value, as with now(): a document and
 * its lines never fall in two detection windows.
 *
 * The value is kept for the transaction in a setting of its own (`books.write_stamp`, set with
 * set_config(..., true): gone at commit or rollback). Other engines: nothing to change (SQLite's
 * CURRENT_TIMESTAMP and SQL Server's SYSUTCDATETIME() are the writing statement's already).
 */
import type { Knex } from 'knex';
import { engineOf } from '../../src/storage/dialect';
import { TABLES } from './20261122000004_upddte_triggers';
import type { TableStep } from './support/schema';

export const steps: TableStep[] = [];

const TRIGGER_FUNCTION = 'books_set_upddte';
export const STAMP_FUNCTION = 'books_write_stamp';

function defaults(stamp: string): string[] {
  return TABLES.map((t) => `ALTER TABLE "${t}" ALTER COLUMN "insdte" SET DEFAULT ${stamp}, ALTER COLUMN "upddte" SET DEFAULT ${stamp}`);
}

function trigger(stamp: string): string {
  return (
    `CREATE OR REPLACE FUNCTION ${TRIGGER_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ ` +
    `BEGIN IF NEW.upddte IS NOT DISTINCT FROM OLD.upddte THEN NEW.upddte := ${stamp}; END IF; RETURN NEW; END $$`
  );
}

export async function up(knex: Knex): Promise<void> {
  if (engineOf(knex) !== 'postgres') return;
  await knex.raw(
    `CREATE OR REPLACE FUNCTION ${STAMP_FUNCTION}() RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS $$ ` +
      `DECLARE s text := current_setting('books.write_stamp', true); ` +
      // clock_timestamp(): the moment of the first stamped write (a DO block or a procedure that
      // waits before it writes is not stamped at its start). Kept as UTC ISO 8601 text, which reads
      // back the same under every DateStyle and TimeZone (the session's own text form does not).
      `BEGIN IF s IS NULL OR s = '' THEN s := to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'); ` +
      `PERFORM set_config('books.write_stamp', s, true); END IF; ` +
      `RETURN s::timestamptz; END $$`,
  );
  // Schema-qualified: a session whose search_path leaves out public still stamps.
  await knex.raw(trigger(`public.${STAMP_FUNCTION}()`));
  for (const sql of defaults(`public.${STAMP_FUNCTION}()`)) await knex.raw(sql);
}

export async function down(knex: Knex): Promise<void> {
  if (engineOf(knex) !== 'postgres') return;
  // As 20261122000004 made them: the trigger's now(), the columns' CURRENT_TIMESTAMP.
  await knex.raw(trigger('now()'));
  for (const sql of defaults('CURRENT_TIMESTAMP')) await knex.raw(sql);
  await knex.raw(`DROP FUNCTION IF EXISTS ${STAMP_FUNCTION}()`);
}
