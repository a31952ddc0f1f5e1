/**
 * Checks a JSON filter value against a field's kind and its column's bounds (src/catalog/bounds.ts:
 * the same rule the contract applies to stored fields) and turns it into a TypedValue.
 * Returns a message when the value does not fit (the caller names the path).
 */
import type { FieldDef, FieldKind } from '../../catalog/types';
import { checkValue, isStorableDate, isStorableInstant, parseColumnType } from '../../catalog/bounds';
import { decFromJson } from '../../storage/decimal';
import type { TypedValue } from './types';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;

/** True when YYYY-MM-DD names a real calendar date every engine stores (2026-02-30 and 0000-01-01 do not). */
export function isCalendarDate(text: string): boolean {
  return isStorableDate(text);
}

export function describeKind(kind: FieldKind): string {
  switch (kind) {
    case 'integer':
      return 'a whole number';
    case 'decimal':
      return 'a number';
    case 'string':
      return 'a string';
    case 'boolean':
      return 'true or false';
    case 'uuid':
      return 'a UUID string';
    case 'date':
      return 'a date string YYYY-MM-DD';
    case 'datetime':
      return 'a date-time string (ISO 8601 with zone) or a date YYYY-MM-DD';
  }
}

export type Typed = { ok: true; value: TypedValue } | { ok: false; code: 'type' | 'format' | 'range'; message: string };

/**
 * Types `raw` for `field` and checks it against the field's column bounds (range of int/smallint,
 * DECIMAL(p,s) digits, text length, NUL and unpaired surrogates, storable dates), so a value no
 * engine could bind is a 400 here rather than a driver error. `likePattern`: the value is a LIKE
 * pattern (the text rule, and LIKE_PATTERN_MAX_CHARACTERS instead of the column's length).
 */
export function typeValue(field: Pick<FieldDef, 'kind' | 'sqlType'>, raw: unknown, options: { likePattern?: boolean } = {}): Typed {
  const typed = typeKind(field.kind, raw);
  if (!typed.ok) return typed;
  const outside = checkValue(parseColumnType(field.sqlType), raw, options);
  return outside === undefined ? typed : { ok: false, code: 'range', message: outside };
}

function typeKind(kind: FieldKind, raw: unknown): Typed {
  const wrong = (code: 'type' | 'format' = 'type'): Typed => ({ ok: false, code, message: `must be ${describeKind(kind)}` });
  switch (kind) {
    case 'integer':
      return typeof raw === 'number' && Number.isSafeInteger(raw) ? { ok: true, value: { kind, value: raw } } : wrong();
    case 'decimal':
      return typeof raw === 'number' && Number.isFinite(raw) ? { ok: true, value: { kind, value: decFromJson(raw) } } : wrong();
    case 'string':
      return typeof raw === 'string' ? { ok: true, value: { kind, value: raw } } : wrong();
    case 'boolean':
      return typeof raw === 'boolean' ? { ok: true, value: { kind, value: raw } } : wrong();
    case 'uuid':
      if (typeof raw !== 'string') return wrong();
      return UUID.test(raw) ? { ok: true, value: { kind, value: raw.toLowerCase() } } : wrong('format');
    case 'date':
      if (typeof raw !== 'string') return wrong();
      return isCalendarDate(raw) ? { ok: true, value: { kind, value: raw } } : wrong('format');
    case 'datetime': {
      if (typeof raw !== 'string') return wrong();
      if (isCalendarDate(raw)) return { ok: true, value: { kind, value: new Date(`${raw}T00:00:00Z`) } };
      const m = DATE_TIME.exec(raw);
      if (!m || !isCalendarDate(`${m[1]}-${m[2]}-${m[3]}`) || Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59) {
        return wrong('format');
      }
      const d = new Date(raw.replace(' ', 'T'));
      return isStorableInstant(d.getTime()) ? { ok: true, value: { kind, value: d } } : wrong('format');
    }
  }
}
