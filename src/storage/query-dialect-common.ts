import type { Knex } from 'knex';
import { DATA_TOKEN_SQL } from './data-change-log';
import { UNREADABLE, type DecodedValue, type Row, type SnapshotReader, type ValueKind } from './dialect-types';

/**
 * What the engines' query dialects share: the decoding of stored values every engine decodes
 * alike (dates, timestamps, integers, legacy booleans, exact decimals as text), LIKE escaping,
 * and the snapshot reader over a knex transaction (PostgreSQL, SQL Server).
 */

/** A reader over a knex transaction (PostgreSQL, SQL Server). */
export function transactionReader(trx: Knex.Transaction, token: (trx: Knex.Transaction) => Promise<string | undefined>): SnapshotReader {
  return {
    db: trx,
    all: async (query) => (await query) as Row[],
    column: async (query) => ((await query) as Row[]).map((row) => Object.values(row)[0]),
    changeToken: () => token(trx),
  };
}


/** The data change counter as a token (a string: PostgreSQL's bigint arrives as text, SQLite's as a number). */
export function tokenOf(row: Row | undefined): string | undefined {
  const n = row?.n;
  return n === null || n === undefined ? undefined : String(n);
}

/** `_`, `[` (SQL Server) and the escape character itself are literals; `%` stays the wildcard. */
export function escapeLike(pattern: string): string {
  return pattern.replace(/[!_[\]]/g, (c) => `!${c}`);
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** A Date (or epoch milliseconds) that names an instant; UNREADABLE for an invalid one (pg's 'infinity' arrives as Infinity). */
function instantOf(raw: Date | number): Date | typeof UNREADABLE {
  const d = raw instanceof Date ? raw : new Date(raw);
  return Number.isNaN(d.getTime()) ? UNREADABLE : d;
}

/** Text of a `date` column: the date, alone or at the head of a timestamp's text (not '0044-03-15 BC'). */
const DATE_TEXT = /^\d{4}-\d{2}-\d{2}(?:$|[T ]\d{2}:\d{2})/;

/**
 * A driver date as YYYY-MM-DD, reading the calendar fields in the given zone. A year outside
 * 1..9999 (pg: 10000, or a BC date) comes out in a form the read check refuses.
 */
export function dateOf(raw: unknown, local: boolean): string | null | typeof UNREADABLE {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date || typeof raw === 'number') {
    const d = instantOf(raw);
    if (d === UNREADABLE) return UNREADABLE;
    return local
      ? `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`
      : `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  }
  if (typeof raw !== 'string') return UNREADABLE;
  // The date alone (the read check looks at it), or at the head of a timestamp's text.
  if (raw.length === 10) return raw;
  return DATE_TEXT.test(raw) ? raw.slice(0, 10) : UNREADABLE;
}

/** A driver timestamp as ISO 8601 UTC; zone-less text (SQLite CURRENT_TIMESTAMP) is UTC. */
function dateTimeOf(raw: unknown): string | null | typeof UNREADABLE {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date || typeof raw === 'number' || typeof raw === 'bigint') {
    const d = instantOf(typeof raw === 'bigint' ? Number(raw) : raw);
    return d === UNREADABLE ? UNREADABLE : d.toISOString();
  }
  if (typeof raw !== 'string') return UNREADABLE;
  const text = raw.trim();
  let iso = text.includes('T') ? text : text.replace(' ', 'T');
  if (/^\d{4}-\d{2}-\d{2}$/.test(iso)) iso += 'T00:00:00';
  if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(iso)) iso += 'Z';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? UNREADABLE : d.toISOString();
}

/** Integer text (PostgreSQL's bigint arrives as text); `Number('')` would be 0. */
const INTEGER_TEXT = /^-?\d+$/;

function integerOf(raw: unknown): number | null | typeof UNREADABLE {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'bigint') return Number(raw);
  return typeof raw === 'string' && INTEGER_TEXT.test(raw) ? Number(raw) : UNREADABLE;
}

const TRUE_TEXT = new Set(['1', 't', 'true']);
const FALSE_TEXT = new Set(['0', 'f', 'false']);

/**
 * A legacy boolean column as the driver returns it (PostgreSQL boolean, SQL Server bit, SQLite
 * 0/1, any other number as a bit (-1 is a legacy true), text 't'/'true'/'1' and 'f'/'false'/'0'
 * in any case from older builds): the one decoding, for reads and for the posting engines' checks
 * (inactive flags, taxable, automatic close). Other text is UNREADABLE, never false.
 */
export function decodeLegacyBoolean(raw: unknown): boolean | null | typeof UNREADABLE {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'boolean') return raw;
  if (typeof raw === 'number') return Number.isNaN(raw) ? UNREADABLE : raw !== 0;
  if (typeof raw === 'bigint') return raw !== 0n;
  if (typeof raw !== 'string') return UNREADABLE;
  const text = raw.toLowerCase();
  return TRUE_TEXT.has(text) ? true : FALSE_TEXT.has(text) ? false : UNREADABLE;
}

/** Decimal text as PostgreSQL's NUMERIC and exact drivers return it ('NaN' parses to NaN, which the read check refuses). */
const DECIMAL_TEXT = /^-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$|^NaN$/i;

/**
 * The kinds every engine decodes alike. Decimals here are an exact engine's (PostgreSQL's text,
 * SQL Server's number): SQLite decodes its scaled integers itself.
 */
export function decodeCommon(kind: ValueKind, raw: unknown, localDates: boolean): DecodedValue {
  if (raw === null || raw === undefined) return null;
  switch (kind) {
    case 'decimal':
      // Number(text) is Number(decodeDecimal(raw).toFixed()): the double nearest the exact decimal.
      if (typeof raw === 'number') return raw;
      return typeof raw === 'string' && DECIMAL_TEXT.test(raw) ? Number(raw) : UNREADABLE;
    case 'integer':
      return integerOf(raw);
    case 'boolean':
      return decodeLegacyBoolean(raw);
    case 'date':
      return dateOf(raw, localDates);
    case 'datetime':
      return dateTimeOf(raw);
    case 'uuid':
      return typeof raw === 'string' ? raw.toLowerCase() : UNREADABLE;
    default:
      // SQLite may hand a number from a column without TEXT affinity; a blob is no text.
      if (typeof raw === 'string') return raw;
      return typeof raw === 'number' || typeof raw === 'bigint' ? String(raw) : UNREADABLE;
  }
}

/** 10^0 .. 10^22: every one exact as a double. */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * A scaled integer (SQLite decimal storage) as the JSON number of its exact decimal.
 * For a safe integer n and 10^scale exact (scale <= 22), IEEE division is correctly rounded: n / 10^scale
 * is the double nearest to the exact decimal, i.e. the very number Number("<digits>.<digits>") parses, without
 * the four strings per value that building that text cost (a read's largest garbage after the JSON;
 * decision 0039). `+ 0` turns -0 into 0, as the text form gives.
 */
export function scaledToNumber(n: number, scale: number): number {
  if (scale <= 0) return n;
  if (scale < POWERS_OF_TEN.length && Number.isSafeInteger(n)) return n / POWERS_OF_TEN[scale]! + 0;
  const digits = String(Math.abs(n)).padStart(scale + 1, '0');
  return Number(`${n < 0 ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`);
}

export function jsonScalar(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  return v;
}

/** The data change counter as a transaction's snapshot sees it (PostgreSQL, SQL Server). */
export async function counterToken(trx: Knex.Transaction): Promise<string | undefined> {
  const result = (await trx.raw(DATA_TOKEN_SQL)) as { rows?: Row[] } | Row[];
  return tokenOf(Array.isArray(result) ? result[0] : result.rows?.[0]);
}
