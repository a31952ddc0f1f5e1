/**
 * Calendar arithmetic on YYYY-MM-DD dates (UTC, no time of day), for due dates and the like.
 * Undefined when the result has no YYYY-MM-DD form (a year past 9999 or before 0001: toISOString
 * writes `+010000-02-14`); whether a date can be stored is src/engines/posting/limits.ts's.
 */
export function addDays(date: string, days: number): string | undefined {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  const year = d.getUTCFullYear();
  if (!Number.isFinite(d.getTime()) || year < 1 || year > 9999) return undefined;
  return d.toISOString().slice(0, 10);
}
