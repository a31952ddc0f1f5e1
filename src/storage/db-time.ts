import type { Engine } from './database';
import { dateOf } from './query-dialect-common';

/**
 * Timestamps written by the service itself. PostgreSQL and SQL Server take a Date; on SQLite
 * a `datetime` column holds text, so we write `YYYY-MM-DD HH:MM:SS.sss` (UTC), which sorts
 * and compares like the `CURRENT_TIMESTAMP` defaults (`YYYY-MM-DD HH:MM:SS`).
 */
export function toDbTime(engine: Engine, at: Date): Date | string {
  if (engine !== 'sqlite') return at;
  return at.toISOString().replace('T', ' ').replace('Z', '');
}

/** Reads back what a driver returned for a timestamp column (Date, text, or epoch number). */
export function fromDbTime(raw: unknown): Date | null {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date) return raw;
  if (typeof raw === 'number') return new Date(raw);
  const text = String(raw).trim();
  if (text === '') return null;
  if (/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}/.test(text)) return new Date(`${text.replace(' ', 'T')}${/[zZ]|[+-]\d{2}:?\d{2}$/.test(text) ? '' : 'Z'}`);
  return new Date(text);
}

/**
 * A `date` column value as YYYY-MM-DD, the same calendar date whatever the process's time zone.
 * SQLite returns text; the drivers that return a Date put the date at different instants:
 *   PostgreSQL  node-postgres parses DATE as LOCAL midnight: read back with local getters;
 *   SQL Server  tedious (useUTC, its default) returns DATE as UTC midnight: read with UTC getters
 *               (local getters put it on the day before when the server's zone is behind UTC).
 * The one decoding of the query dialects (query-dialect-common.ts dateOf, decision 0420).
 */
export function toIsoDate(raw: unknown, engine: Engine): string | null {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date) {
    const date = dateOf(raw, datesAreLocal(engine));
    return typeof date === 'string' ? date : null;
  }
  return String(raw).slice(0, 10);
}

/** Whether the engine's driver returns a `date` column as a Date at local midnight (else UTC midnight, or text). */
export function datesAreLocal(engine: Engine): boolean {
  return engine === 'postgres';
}
