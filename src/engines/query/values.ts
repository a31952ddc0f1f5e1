/**
 * Checks a JSON filter value against a field's kind and turns it into a TypedValue.
 * Returns a message when the value does not fit (the caller names the path).
 */
import type { FieldKind } from '../../catalog/types';
import { decFromJson } from '../../storage/decimal';
import type { TypedValue } from './types';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;

/** True when YYYY-MM-DD names a real calendar date (2026-02-30 does not). */
export function isCalendarDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1) return false;
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return d <= days;
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

export type Typed = { ok: true; value: TypedValue } | { ok: false; code: 'type' | 'format'; message: string };

export function typeValue(kind: FieldKind, raw: unknown): Typed {
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
      return Number.isNaN(d.getTime()) ? wrong('format') : { ok: true, value: { kind, value: d } };
    }
  }
}
