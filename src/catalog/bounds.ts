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
 *    has `x-table`). See docs/decisions.md "Value bounds from the storage columns".
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
const TEXT_RE = new RegExp(TEXT_PATTERN, 'u');

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

/** Largest magnitude of DECIMAL(p, s): p - s digits before the point, s after. */
export function decimalMax(precision: number, scale: number): number {
  // e.g. (14, 2) -> 999999999999.99; as a JSON number it rounds to the nearest double, which is
  // what a client's JSON number would parse to anyway.
  return Number(`${'9'.repeat(precision - scale) || '0'}${scale > 0 ? '.' + '9'.repeat(scale) : ''}`);
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

/** True for text every engine stores as given: no NUL, no unpaired surrogate. */
export function isStorableText(s: string): boolean {
  return TEXT_RE.test(s);
}

/**
 * Length as JSON Schema's maxLength counts it: code points (an emoji is 1). SQL Server's nvarchar
 * counts UTF-16 code units (an emoji is 2): see docs/decisions.md for that gap.
 */
export function textLength(s: string): number {
  let n = 0;
  for (const _ of s) n += 1;
  return n;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True when YYYY-MM-DD names a real calendar date from 0001-01-01 to 9999-12-31 (2026-02-30 and 0000-01-01 do not). */
export function isStorableDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  const probe = new Date(Date.UTC(2000, mo, 0));
  probe.setUTCFullYear(y, mo, 0); // setUTCFullYear takes years 0..99 literally, unlike Date.UTC
  return d <= probe.getUTCDate();
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
 * when it does. `likePattern`: a LIKE pattern is not a stored value, so its length is not
 * bounded by the column; it must still be storable text.
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
      if (!options.likePattern && type.maxLength !== undefined && textLength(value) > type.maxLength) {
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
