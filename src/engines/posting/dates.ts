/** Calendar arithmetic on YYYY-MM-DD dates (UTC, no time of day), for due dates and the like. */
export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}
