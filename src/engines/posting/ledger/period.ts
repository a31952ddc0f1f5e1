import type { Knex } from 'knex';
import { ApiProblem } from '../../../errors/problem';
import { toIsoDate } from '../../../storage/db-time';
import type { Engine } from '../../../storage/database';
import { engineOf } from '../../../storage/dialect';
import type { ReferenceCache } from '../../../storage/reference-cache';

/**
 * Posting period resolution (spec, Writes rule 8), shared by every write.
 *
 *   explicit period + year   honoured when valid: both present, period 0 to 12, a period of the
 *                            ledger setup (a row of fiscal-periods when the company keeps them);
 *                            otherwise 422 PERIOD_INVALID.
 *   derived                  from the endpoint's date field under the ledger-setup policy:
 *                            policy 1 posts to the current (open) period whatever the date;
 *                            policy 2 derives it from the date (the fiscal-periods row whose dates
 *                            hold it, else the fiscal calendar of fiscalYearEndMonth).
 *   later than the open period (current year + period of the ledger setup) -> 422 PERIOD_CLOSED
 *   naming both; an earlier period is accepted and the entry lands there, unless an
 *   administrator locked that period (fiscal-periods status 3) -> 422 PERIOD_CLOSED too.
 *   a period the ledger does not have -> 422 PERIOD_INVALID, derived or explicit alike: when the
 *   company keeps fiscal periods (any fiscal-periods row), the resolved period must be one of
 *   them (period 0 of a year that has periods is its prior-year adjustments); a derived one is
 *   refused naming the date field it came from (docs/decisions/0435). A company without
 *   fiscal-periods rows posts by its fiscal calendar alone.
 */

export interface LedgerSetup {
  fiscalYearEndMonth: number;
  currentYear: number;
  currentPeriod: number;
  /** 1 post to the current period, 2 derive from the document date. */
  periodPolicy: number;
  apControlAccount: number | null;
  retainagePayableAccount: number | null;
  wipAccount: number | null;
  directExpenseAccount: number | null;
  equipmentExpenseAccount: number | null;
}

export interface PostingPeriod {
  period: number;
  year: number;
}

export interface PeriodRequest {
  /** The document date that drives the period (YYYY-MM-DD). */
  date: string;
  /** The request field a refusal names (transactionDate, invoiceDate, ...). */
  dateField: string;
  /**
   * What the date is, for messages, when it is not the named field's own value (payroll: the
   * records' check date, chosen by periodEndDate or recordNumbers). Defaults to dateField.
   */
  dateLabel?: string;
  period?: number | null;
  year?: number | null;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function setupFromRow(row: Record<string, any>): LedgerSetup {
  return {
    fiscalYearEndMonth: Number(row.fscend ?? 12),
    currentYear: Number(row.curyer),
    currentPeriod: Number(row.curprd ?? 1),
    periodPolicy: Number(row.prdplc ?? 1),
    apControlAccount: num(row.apcact),
    retainagePayableAccount: num(row.rtpact),
    wipAccount: num(row.wipact),
    directExpenseAccount: num(row.dexact),
    equipmentExpenseAccount: num(row.eqpact),
  };
}

const missingSetup = () => new ApiProblem('BUSINESS_RULE_VIOLATED', 'The ledger setup of the company is missing; nothing can be posted until it exists.');

/**
 * Years of fiscal-periods rows a resolution may need: around the document date, the explicit
 * year, and the open year (policy 1 resolves to the open period whatever the date; its row is
 * checked like any other).
 */
function fiscalYearsFor(request: Pick<PeriodRequest, 'date' | 'year'>, openYear?: number): number[] {
  const calendarYear = Number(request.date.slice(0, 4));
  const years = [calendarYear - 1, calendarYear, calendarYear + 1];
  for (const year of [request.year, openYear]) {
    if (typeof year === 'number' && Number.isInteger(year) && !years.includes(year)) years.push(year);
  }
  return years;
}

export interface PostingSetup {
  setup: LedgerSetup;
  /** fiscal-periods rows of the years around the document date, the explicit and the open year (see fiscalYearsFor). */
  fiscal: FiscalRow[];
}

/** A fiscal-periods row; its dates decoded as the engine's driver returns them (storage/db-time.ts toIsoDate). */
const fiscalRow = (r: Record<string, any>, engine: Engine): FiscalRow => ({
  year: Number(r.postyr),
  period: Number(r.actprd),
  start: toIsoDate(r.sttdte, engine),
  end: toIsoDate(r.enddte, engine),
  status: Number(r.status),
});

/**
 * The ledger setup and the fiscal periods a posting needs: from the reference cache when given
 * (inside a posting transaction: one counter read when nothing changed), else in one statement.
 */
export async function loadPostingSetup(db: Knex | Knex.Transaction, request: Pick<PeriodRequest, 'date' | 'year'>, cache?: ReferenceCache): Promise<PostingSetup> {
  if (cache && db.isTransaction) {
    const cached = await cache.postingSetup(db as Knex.Transaction);
    if (!cached.setup) throw missingSetup();
    return derivedSetup(cached as CachedSetup, fiscalYearsFor(request, Number(cached.setup.curyer)), engineOf(db as Knex));
  }
  const years = fiscalYearsFor(request);
  const rows = await db('lgrstp as s')
    .leftJoin('fscprd as f', (join) => join.onIn('f.postyr', years).orOn('f.postyr', '=', 's.curyer'))
    .orderBy('s.recnum')
    .select('s.recnum', 's.fscend', 's.curyer', 's.curprd', 's.prdplc', 's.apcact', 's.rtpact', 's.wipact', 's.dexact', 's.eqpact', 'f.postyr', 'f.actprd', 'f.sttdte', 'f.enddte', 'f.status');
  if (rows.length === 0) throw missingSetup();
  const first = rows[0]!.recnum;
  const mine = rows.filter((r: any) => r.recnum === first);
  return { setup: setupFromRow(mine[0]!), fiscal: mine.filter((r: any) => r.postyr !== null && r.postyr !== undefined).map((r: any) => fiscalRow(r, engineOf(db as Knex))) };
}

type CachedSetup = { setup: Record<string, any>; fiscal: Array<Record<string, any>> };

/**
 * The PostingSetup of cached reference rows, per set of years, derived once while those rows are
 * the cache's (they are replaced, never changed, when the reference counter moves): every posting
 * rebuilt it, three years of fiscal periods with their dates, which was most of its CPU here.
 * Frozen: shared by the postings that follow.
 */
const derivedSetups = new WeakMap<CachedSetup, Map<string, PostingSetup>>();

function derivedSetup(cached: CachedSetup, years: readonly number[], engine: Engine): PostingSetup {
  let byYears = derivedSetups.get(cached);
  if (!byYears) derivedSetups.set(cached, (byYears = new Map()));
  const key = years.join(',');
  let derived = byYears.get(key);
  if (!derived) {
    const fiscal = cached.fiscal.filter((r) => years.includes(Number(r.postyr))).map((r) => Object.freeze(fiscalRow(r, engine)));
    derived = Object.freeze({ setup: Object.freeze(setupFromRow(cached.setup)), fiscal: Object.freeze(fiscal) as FiscalRow[] });
    if (byYears.size >= 64) byYears.clear();
    byYears.set(key, derived);
  }
  return derived;
}

/** Fiscal year and period (1 to 12) of a date; the fiscal year is named after the calendar year it ends in. */
export function fiscalPeriodOfDate(date: string, fiscalYearEndMonth: number): PostingPeriod {
  const [y, m] = date.split('-').map(Number) as [number, number];
  const end = Math.min(Math.max(Math.trunc(fiscalYearEndMonth) || 12, 1), 12);
  const period = ((((m - end - 1) % 12) + 12) % 12) + 1;
  const year = m > end ? y + 1 : y;
  return { period, year };
}

/** Orders (year, period) pairs: negative when a is earlier. */
export function comparePeriods(a: PostingPeriod, b: PostingPeriod): number {
  return a.year !== b.year ? a.year - b.year : a.period - b.period;
}

const describe = (p: PostingPeriod) => `period ${p.period} of ${p.year}`;

function periodInvalid(detail: string, fields: string[]): ApiProblem {
  return new ApiProblem('PERIOD_INVALID', detail, { errors: fields.map((field) => ({ field, code: 'period_invalid' })) });
}

export interface FiscalRow {
  year: number;
  period: number;
  start: string | null;
  end: string | null;
  status: number;
}

export async function resolvePostingPeriod(db: Knex | Knex.Transaction, setup: LedgerSetup, request: PeriodRequest, preloaded?: FiscalRow[]): Promise<PostingPeriod> {
  const open: PostingPeriod = { period: setup.currentPeriod, year: setup.currentYear };
  const hasPeriod = request.period !== undefined && request.period !== null;
  const hasYear = request.year !== undefined && request.year !== null;
  if (hasPeriod !== hasYear) {
    const missing = hasPeriod ? 'year' : 'period';
    throw periodInvalid(`period and year are an optional pair: ${missing} is missing.`, [missing]);
  }
  const explicit = hasPeriod && hasYear;
  if (explicit) {
    const period = request.period as number;
    const year = request.year as number;
    if (!Number.isInteger(period) || period < 0 || period > 12) {
      throw periodInvalid(`period ${period} is not a posting period: periods run from 0 (prior-year adjustments) to 12.`, ['period']);
    }
    if (!Number.isInteger(year) || year < 1900 || year > 9999) throw periodInvalid(`year ${year} is not a fiscal year of the ledger.`, ['year']);
  }

  // One read of the fiscal periods around the document date (and the explicit and open years), unless given.
  const rows: FiscalRow[] = preloaded ?? (await db('fscprd').whereIn('postyr', fiscalYearsFor(request, setup.currentYear)).select('postyr', 'actprd', 'sttdte', 'enddte', 'status')).map((r) => fiscalRow(r, engineOf(db as Knex)));

  let resolved: PostingPeriod;
  if (explicit) resolved = { period: request.period as number, year: request.year as number };
  else if (setup.periodPolicy === 2) {
    const holding = rows
      .filter((r) => r.period >= 1 && r.start !== null && r.end !== null && r.start <= request.date && request.date <= r.end)
      .sort((a, b) => a.year - b.year || a.period - b.period)[0];
    resolved = holding ? { period: holding.period, year: holding.year } : fiscalPeriodOfDate(request.date, setup.fiscalYearEndMonth);
  } else resolved = open;

  if (comparePeriods(resolved, open) > 0) {
    const source = explicit ? 'the explicit period and year' : `${request.dateLabel ?? request.dateField} ${request.date}`;
    throw new ApiProblem(
      'PERIOD_CLOSED',
      `The posting period resolved from ${source} is ${describe(resolved)}, later than the open period, ${describe(open)}.`,
      {
        errors: explicit ? [{ field: 'period', code: 'period_closed' }, { field: 'year', code: 'period_closed' }] : [{ field: request.dateField, code: 'period_closed' }],
        extensions: { resolvedPeriod: resolved.period, resolvedYear: resolved.year, openPeriod: open.period, openYear: open.year },
      },
    );
  }

  // Earlier (or equal) periods are accepted, if they are periods of the ledger and not locked. A
  // period derived from a date is held to this as the explicit pair is: a date in a year the
  // ledger has no periods for (1900, 2019 on a ledger of 2025 and 2026) is refused, never posted
  // into a year of its own. Whether the company keeps fiscal periods at all costs a read only
  // when none was found around the date or in the open year.
  const ofYear = rows.filter((r) => r.year === resolved.year);
  const keepsPeriods = rows.length > 0 || Boolean(await db('fscprd').first('recnum'));
  if (keepsPeriods) {
    const row = ofYear.find((r) => r.period === resolved.period);
    if (!row && !(resolved.period === 0 && ofYear.length > 0)) {
      if (explicit) throw periodInvalid(`${describe(resolved)} is not a period of the ledger setup (no such fiscal period).`, ['period', 'year']);
      throw periodInvalid(
        `The posting period resolved from ${request.dateLabel ?? request.dateField} ${request.date} is ${describe(resolved)}, which is not a period of the ledger setup (no such fiscal period).`,
        [request.dateField],
      );
    } else if (row && row.status === 3) {
      throw new ApiProblem('PERIOD_CLOSED', `${describe(resolved)} is locked by an administrator; it accepts no postings.`, {
        errors: explicit ? [{ field: 'period', code: 'period_locked' }] : [{ field: request.dateField, code: 'period_locked' }],
        extensions: { resolvedPeriod: resolved.period, resolvedYear: resolved.year, openPeriod: open.period, openYear: open.year },
      });
    }
  }
  return resolved;
}
