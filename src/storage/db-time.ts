import type { Engine } from './database';

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

/** A `date` column value as YYYY-MM-DD (drivers return Date on PostgreSQL/SQL Server, text on SQLite). */
export function toIsoDate(raw: unknown): string | null {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date) {
    // pg parses DATE as local midnight; format in local time to get the calendar date back.
    const y = raw.getFullYear();
    const m = String(raw.getMonth() + 1).padStart(2, '0');
    const d = String(raw.getDate()).padStart(2, '0');
    return `${y}-${m}-${d}`;
  }
  return String(raw).slice(0, 10);
}
