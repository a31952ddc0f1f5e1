/**
 * The one rule for "can this value be stored in (or compared with) this column on every engine".
 *
 * A value's bounds come from its storage column: the SQL Server type of the column as the
 * migrations compile it (db/migrations -> knex mssql -> e.g. `smallint`, `decimal(14, 2)`,
 * `nvarchar(50)`, `date`, `datetime2`). SQL Server is the strictest of the three engines for
 * every type used here (nvarchar counts UTF-16 code units; date/datetime2 start at year 1), so a
 * value within these bounds also fits PostgreSQL and SQLite.
 *
 * Two users, one rule:
 *  - scripts/generate.ts writes `schemaKeywords(type)` into the generated public document (the
 *    document the request validator loads) for every property that carries `x-column`; a write's
 *    input property opts in with `x-column: table.column` (or a bare column under a schema that
 *    has `x-table`). See docs/decisions/0021-value-bounds-from-the-storage-columns.md.
 *  - the query engine (values.ts) calls `checkValue(type, value)` for filter values, whose type is
 *    only known at plan time (the field they compare against).
 */

/** Inclusive integer ranges of the SQL integer types. */
export const INTEGER_RANGES = {
  smallint: { min: -32768, max: 32767 },
  int: { min: -2147483648, max: 2147483647 },
  // bigint's true range exceeds a JSON number's exact range: JavaScript's safe integers.
  bigint: { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER },
  tinyint: { min: 0, max: 255 },
} as const;

/** Dates every engine stores: SQL Server date/datetime2 run from 0001-01-01 to 9999-12-31. */
export const DATE_MIN = '0001-01-01';
export const DATE_MAX = '9999-12-31';
const DATE_MIN_MS = new Date('0001-01-01T00:00:00.000Z').getTime();
const DATE_MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * JSON Schema pattern for stored text: no NUL (PostgreSQL refuses it in text: 22021) and no
 * unpaired UTF-16 surrogate (not encodable as UTF-8). Ajv compiles patterns with the `u` flag, so
 * a paired surrogate (an astral character such as an emoji) is one code point and passes.
 */
export const TEXT_PATTERN = '^[^\\u0000\\uD800-\\uDFFF]*$';

/**
 * The longest LIKE / NOT LIKE pattern, in characters (code points, as JSON Schema's maxLength
 * counts them; openapi.yaml FilterValue declares the same number). A pattern is not a stored
 * value, so its column's length does not bound it (`%` may stand anywhere, repeated), but every
 * engine bounds it: SQL Server refuses a pattern over 8,000 bytes (4,000 UTF-16 code units of
 * nvarchar), SQLite's built-in LIKE one over 50,000 bytes. The query dialects escape `_`, `[`, `]`
 * and `!` with one character more each, and a character outside the Basic Multilingual Plane is
 * two code units: 2,000 characters are at most 4,000 code units once escaped, on every engine.
 * That is 20 times the longest bounded text column (nvarchar(100)): every pattern that can match a
 * value of such a column fits (docs/decisions/0462).
 */
export const LIKE_PATTERN_MAX_CHARACTERS = 2000;

export type ColumnType =
  | { kind: 'integer'; sql: string; min: number; max: number }
  | { kind: 'decimal'; sql: string; precision: number; scale: number }
  | { kind: 'string'; sql: string; maxLength?: number }
  | { kind: 'date'; sql: string }
  | { kind: 'datetime'; sql: string }
  | { kind: 'uuid'; sql: string }
  | { kind: 'boolean'; sql: string };

const parsed = new Map<string, ColumnType>();

/** Parses a compiled SQL Server column type (`decimal(14, 2)`, `nvarchar(max)`, `smallint`...). */
export function parseColumnType(sql: string): ColumnType {
  const hit = parsed.get(sql);
  if (hit) return hit;
  const m = /^([a-z0-9]+)(?:\((\d+|max)(?:,\s*(\d+))?\))?$/i.exec(sql.trim());
  if (!m) throw new Error(`unknown column type ${sql}`);
  const base = m[1]!.toLowerCase();
  let type: ColumnType;
  if (base in INTEGER_RANGES) type = { kind: 'integer', sql, ...INTEGER_RANGES[base as keyof typeof INTEGER_RANGES] };
  else if (base === 'decimal' || base === 'numeric') type = { kind: 'decimal', sql, precision: Number(m[2] ?? 18), scale: Number(m[3] ?? 0) };
  else if (base === 'nvarchar' || base === 'varchar' || base === 'nchar' || base === 'char') {
    type = m[2] && m[2] !== 'max' ? { kind: 'string', sql, maxLength: Number(m[2]) } : { kind: 'string', sql };
  } else if (base === 'text' || base === 'ntext') type = { kind: 'string', sql };
  else if (base === 'date') type = { kind: 'date', sql };
  else if (base === 'datetime2' || base === 'datetimeoffset' || base === 'datetime') type = { kind: 'datetime', sql };
  else if (base === 'uniqueidentifier') type = { kind: 'uuid', sql };
  else if (base === 'bit') type = { kind: 'boolean', sql };
  else throw new Error(`unsupported column type ${sql}`);
  parsed.set(sql, type);
  return type;
}

/** Largest magnitude of DECIMAL(p, s) as exact decimal text: p - s digits before the point, s after. */
export function decimalMaxText(precision: number, scale: number): string {
  return `${'9'.repeat(precision - scale) || '0'}${scale > 0 ? '.' + '9'.repeat(scale) : ''}`;
}

/** Largest magnitude of DECIMAL(p, s): p - s digits before the point, s after. */
export function decimalMax(precision: number, scale: number): number {
  // e.g. (14, 2) -> 999999999999.99; as a JSON number it rounds to the nearest double, which is
  // what a client's JSON number would parse to anyway.
  return Number(decimalMaxText(precision, scale));
}

/**
 * JSON Schema keywords for a property stored in a column of `type` (merged into the property by
 * the generator; tighter bounds already written in openapi.yaml win). Exact decimal places are
 * not a keyword (a float `multipleOf` is unreliable): the engines check them (exactDecimal).
 */
export function schemaKeywords(type: ColumnType): Record<string, unknown> {
  switch (type.kind) {
    case 'integer':
      return { minimum: type.min, maximum: type.max };
    case 'decimal': {
      const max = decimalMax(type.precision, type.scale);
      return { minimum: -max, maximum: max };
    }
    case 'string':
      return { ...(type.maxLength !== undefined ? { maxLength: type.maxLength } : {}), pattern: TEXT_PATTERN };
    default:
      return {};
  }
}

/** True for text every engine stores as given: no NUL, no unpaired surrogate (TEXT_PATTERN, by two native scans). */
export function isStorableText(s: string): boolean {
  return s.indexOf('\u0000') === -1 && (s as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * Length as JSON Schema's maxLength counts it: code points (an emoji is 1). SQL Server's nvarchar
 * counts UTF-16 code units (an emoji is 2): see docs/decisions/0021-value-bounds-from-the-storage-columns.md for that gap.
 */
export function textLength(s: string): number {
  let n = 0;
  for (const _ of s) n += 1;
  return n;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The value of the digits of `text` from `start` to `end`, or -1 when one is not a digit. */
function digitsAt(text: string, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i += 1) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/** True when YYYY-MM-DD names a real calendar date from 0001-01-01 to 9999-12-31 (2026-02-30 and 0000-01-01 do not). */
export function isStorableDate(text: string): boolean {
  // By character codes and arithmetic, no match or Date object: every date a read returns is checked (readValueCheck).
  if (text.length !== 10 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45) return false;
  const y = digitsAt(text, 0, 4);
  const mo = digitsAt(text, 5, 7);
  const d = digitsAt(text, 8, 10);
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  // The proleptic Gregorian calendar (JavaScript's, and every engine's DATE).
  const leap = mo === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return d <= DAYS_IN_MONTH[mo - 1]! + (leap ? 1 : 0);
}

/** True when an instant (ms since epoch) lies within the date range every engine stores. */
export function isStorableInstant(ms: number): boolean {
  return Number.isFinite(ms) && ms >= DATE_MIN_MS && ms <= DATE_MAX_MS;
}

const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** RFC 3339 date-time (the JSON Schema format) that names a real instant in the storable range. */
export function isStorableDateTime(text: string): boolean {
  const m = DATE_TIME.exec(text);
  if (!m || !isStorableDate(m[1]!)) return false;
  if (Number(m[2]) > 23 || Number(m[3]) > 59 || Number(m[4]) > 59) return false;
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) return false;
  return isStorableInstant(new Date(text.replace(' ', 'T')).getTime());
}

/** Decimal places of a finite JSON number as written (1e-7 has 7, 2.50 has 1). */
export function decimalPlaces(n: number): number {
  const [mantissa, exp] = String(n).toLowerCase().split('e');
  const frac = mantissa!.split('.')[1]?.length ?? 0;
  return Math.max(0, frac - Number(exp ?? 0));
}

/**
 * Why `value` (already of the right JSON type for the field) does not fit `type`, or undefined
 * when it does. `likePattern`: a LIKE pattern is not a stored value, so its length is bounded by
 * LIKE_PATTERN_MAX_CHARACTERS rather than by the column; it must still be storable text.
 */
export function checkValue(type: ColumnType, value: unknown, options: { likePattern?: boolean } = {}): string | undefined {
  switch (type.kind) {
    case 'integer':
      if (typeof value !== 'number') return undefined;
      if (!Number.isInteger(value) || value < type.min || value > type.max) {
        return `must be a whole number from ${type.min} to ${type.max} (${type.sql} column)`;
      }
      return undefined;
    case 'decimal': {
      if (typeof value !== 'number') return undefined;
      const max = decimalMax(type.precision, type.scale);
      if (!Number.isFinite(value) || Math.abs(value) > max) return `must be a number from ${-max} to ${max} (${type.sql} column)`;
      if (decimalPlaces(value) > type.scale) return `must have at most ${type.scale} decimal places (${type.sql} column)`;
      return undefined;
    }
    case 'string':
      if (typeof value !== 'string') return undefined;
      if (!isStorableText(value)) return 'must not contain NUL characters or unpaired UTF-16 surrogates';
      if (options.likePattern) {
        // value.length counts UTF-16 code units, never fewer than the code points.
        if (value.length > LIKE_PATTERN_MAX_CHARACTERS && textLength(value) > LIKE_PATTERN_MAX_CHARACTERS) {
          return `must be a LIKE pattern of at most ${LIKE_PATTERN_MAX_CHARACTERS} characters`;
        }
      } else if (type.maxLength !== undefined && textLength(value) > type.maxLength) {
        return `must be at most ${type.maxLength} characters (${type.sql} column)`;
      }
      return undefined;
    case 'date':
      if (typeof value !== 'string') return undefined;
      return isStorableDate(value) ? undefined : `must be a calendar date from ${DATE_MIN} to ${DATE_MAX}`;
    default:
      return undefined;
  }
}

// ------------------------------------------------------------------------------------------
// The same bounds the other way round: values READ from a column (docs/decisions/0370).
// ------------------------------------------------------------------------------------------

/** Lower-case hexadecimal digits by character code. */
const HEX = new Uint8Array(128);
for (const c of '0123456789abcdef') HEX[c.charCodeAt(0)] = 1;

function hexRun(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i += 1) {
    const c = text.charCodeAt(i);
    if (c > 127 || HEX[c] === 0) return false;
  }
  return true;
}

/**
 * The uuid format as the contract's validator checks it (ajv-formats), on the lower-case form a
 * read publishes: by character codes (a regular expression costs half as much again, on every key read).
 */
function isUuid(text: string): boolean {
  return (
    text.length === 36 &&
    text.charCodeAt(8) === 45 &&
    text.charCodeAt(13) === 45 &&
    text.charCodeAt(18) === 45 &&
    text.charCodeAt(23) === 45 &&
    hexRun(text, 0, 8) &&
    hexRun(text, 9, 13) &&
    hexRun(text, 14, 18) &&
    hexRun(text, 19, 23) &&
    hexRun(text, 24, 36)
  );
}

/** A column's bounds as `fitsRead` checks them (one shape for every kind: the check stays monomorphic). */
export interface ReadBounds {
  readonly kind: ColumnType['kind'];
  /** Integers and decimals: the range. */
  readonly min: number;
  readonly max: number;
  /** Text: the length in code points (Infinity: none). */
  readonly maxLength: number;
}

const readBoundsCache = new Map<string, ReadBounds>();

/** The bounds of a column of `type` as a read checks them. */
export function readBounds(type: ColumnType): ReadBounds {
  let bounds = readBoundsCache.get(type.sql);
  if (!bounds) {
    const decimal = type.kind === 'decimal' ? decimalMax(type.precision, type.scale) : undefined;
    bounds = {
      kind: type.kind,
      min: type.kind === 'integer' ? type.min : decimal !== undefined ? -decimal : 0,
      max: type.kind === 'integer' ? type.max : decimal !== undefined ? decimal : 0,
      maxLength: type.kind === 'string' && type.maxLength !== undefined ? type.maxLength : Number.POSITIVE_INFINITY,
    };
    readBoundsCache.set(type.sql, bounds);
  }
  return bounds;
}

/**
 * Whether a value read back from a column, decoded to its published JSON form (not null; the
 * dialect decodes: src/storage/query-dialect-<engine>.ts), is a value the contract publishes for the field: the
 * JSON type of its kind, within the keywords `schemaKeywords` writes for the column (range, digits,
 * length, storable text) and the formats the validator checks (calendar date, date-time, uuid).
 * SQLite's type affinity stores text in an INTEGER column and lets an nvarchar(50) hold 60
 * characters; PostgreSQL stores the date 'infinity' and the year 10000; such a value is not
 * published as something else (the engines answer STORED_VALUE_UNREADABLE instead). Decimal places
 * are the dialect's to check: it sees the stored form (SQLite's scaled integer). Every value of
 * every read passes here: a few comparisons each.
 */
export function fitsRead(bounds: ReadBounds, v: unknown): boolean {
  switch (bounds.kind) {
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v) && v >= bounds.min && v <= bounds.max;
    case 'decimal':
      return typeof v === 'number' && v >= bounds.min && v <= bounds.max;
    case 'string':
      return typeof v === 'string' && (v.length <= bounds.maxLength || textLength(v) <= bounds.maxLength) && isStorableText(v);
    case 'date':
      return typeof v === 'string' && isStorableDate(v);
    case 'datetime':
      return typeof v === 'string' && isStorableDateTime(v);
    case 'uuid':
      return typeof v === 'string' && isUuid(v);
    case 'boolean':
      return typeof v === 'boolean';
  }
}

/** What the contract publishes for a column of `type`, for messages ("a whole number from -32768 to 32767"). */
export function publishedAs(type: ColumnType): string {
  switch (type.kind) {
    case 'integer':
      return `a whole number from ${type.min} to ${type.max}`;
    case 'decimal': {
      const max = decimalMax(type.precision, type.scale);
      return `a number from ${-max} to ${max} with at most ${type.scale} decimal places`;
    }
    case 'string':
      return `text${type.maxLength !== undefined ? ` of at most ${type.maxLength} characters` : ''} without NUL characters or unpaired UTF-16 surrogates`;
    case 'date':
      return `a calendar date from ${DATE_MIN} to ${DATE_MAX}`;
    case 'datetime':
      return `an instant from ${DATE_MIN} to ${DATE_MAX}`;
    case 'uuid':
      return 'a UUID';
    case 'boolean':
      return 'true or false';
  }
}
