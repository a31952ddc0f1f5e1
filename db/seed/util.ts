/**
 * Small helpers of the seed: calendar arithmetic on YYYY-MM-DD strings (UTC, no clock), and
 * decimals tagged with the scale of the column they are written to.
 */
import { Dec } from '../../src/storage/decimal';

/** A decimal headed for a DECIMAL(p, scale) column. */
export class Scaled {
  constructor(
    readonly value: Dec,
    readonly scale: number,
  ) {}
}

const round = (v: Dec | number | string, places: number) => {
  const d = v instanceof Dec ? v : new Dec(v);
  return d.decimalPlaces() <= places ? d : d.toDecimalPlaces(places, Dec.ROUND_HALF_UP);
};

const ZERO2 = new Scaled(new Dec(0), 2);
const ZERO4 = new Scaled(new Dec(0), 4);
const isZero = (v: Dec | number | string) => (v instanceof Dec ? v.isZero() : Number(v) === 0);
/** decimal(14,2) money. */
export const money = (v: Dec | number | string) => (isZero(v) ? ZERO2 : new Scaled(round(v, 2), 2));
/** decimal(14,4) quantities. */
export const qty = (v: Dec | number | string) => (isZero(v) ? ZERO4 : new Scaled(round(v, 4), 4));
/** decimal(12,4) unit prices and rates. */
export const price = (v: Dec | number | string) => (isZero(v) ? ZERO4 : new Scaled(round(v, 4), 4));
/** decimal(15,3) cost codes. */
export const code = (v: Dec | number | string) => new Scaled(round(v, 3), 3);
/** decimal(10,2) hours. */
export const hours = (v: Dec | number | string) => new Scaled(round(v, 2), 2);
/** decimal(7,4) percentages. */
export const pct = (v: Dec | number | string) => new Scaled(round(v, 4), 4);

export const ZERO = new Dec(0);
export const r2 = (v: Dec) => v.toDecimalPlaces(2, Dec.ROUND_HALF_UP);
export const r4 = (v: Dec) => v.toDecimalPlaces(4, Dec.ROUND_HALF_UP);
export const sum = (values: Iterable<Dec>) => {
  let s = ZERO;
  for (const v of values) s = s.plus(v);
  return s;
};

const DAY = 86_400_000;

export function parseDate(d: string): number {
  return Date.UTC(Number(d.slice(0, 4)), Number(d.slice(5, 7)) - 1, Number(d.slice(8, 10)));
}

export function formatDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

const dayCache = new Map<string, string>();

/** `d` plus `n` days (memoized: the simulation asks for the same few hundred dates over and over). */
export function addDays(d: string, n: number): string {
  const k = `${d}|${n}`;
  let out = dayCache.get(k);
  if (out === undefined) {
    out = formatDate(parseDate(d) + n * DAY);
    if (dayCache.size > 100_000) dayCache.clear();
    dayCache.set(k, out);
  }
  return out;
}

export function daysBetween(a: string, b: string): number {
  return Math.round((parseDate(b) - parseDate(a)) / DAY);
}

/** Day of week, 0 Sunday .. 6 Saturday. */
export function weekday(d: string): number {
  return new Date(parseDate(d)).getUTCDay();
}

/** Timestamp text in the form the audit columns use on every engine: YYYY-MM-DD HH:MM:SS. */
export function stamp(d: string, minuteOfDay: number): string {
  const h = Math.floor(minuteOfDay / 60) % 24;
  const m = minuteOfDay % 60;
  return `${d} ${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:00`;
}

export function lastDayOfMonth(year: number, month: number): string {
  return formatDate(Date.UTC(year, month, 0));
}
