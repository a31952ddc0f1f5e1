import type { Knex } from 'knex';
import { Issues } from '../../../errors/issues';
import { Dec } from '../../../storage/decimal';
import { decodeLegacyBoolean, type Dialect } from '../../../storage/dialect';
import { CACHED_COLUMNS, groupRows, type CachedTable, type GroupedTable, type ReferenceCache } from '../../../storage/reference-cache';
import { SCALE } from '../context';

/**
 * Looks up referenced records in bulk (one statement per table) and names every culprit of a
 * write by its JSON path: 404 REFERENCE_NOT_FOUND for records that do not exist, 422
 * BUSINESS_RULE_VIOLATED for records that exist but accept no postings.
 */

export interface Ref<T> {
  /** JSON path of the field that refers: `lines[2].ledgerAccount`. */
  field: string;
  value: T;
}

/** Rows of `table` whose `column` is in the referenced values, keyed by that value (as string). */
export async function loadReferenced<T extends string | number>(
  trx: Knex.Transaction,
  table: string,
  column: string,
  refs: ReadonlyArray<Ref<T>>,
  columns: string[],
): Promise<Map<string, Record<string, any>>> {
  const values = [...new Set(refs.map((r) => r.value))];
  const out = new Map<string, Record<string, any>>();
  for (let i = 0; i < values.length; i += 1000) {
    const chunk = values.slice(i, i + 1000);
    const rows = await trx(table).whereIn(column, chunk).select(...new Set([column, ...columns]));
    for (const row of rows) out.set(String(row[column]), row);
  }
  return out;
}

/**
 * loadReferenced by recnum for the cached reference tables (src/storage/reference-cache.ts:
 * ledger accounts, transaction sources, vendors, jobs, cost types, equipment): through the
 * posting's reference cache when it has one and the columns are cached ones.
 */
export async function loadReferenceRows<T extends string | number>(
  ctx: { trx: Knex.Transaction; references?: ReferenceCache },
  table: CachedTable,
  refs: ReadonlyArray<Ref<T>>,
  columns: string[],
): Promise<Map<string, Record<string, any>>> {
  const cachedColumns: readonly string[] = CACHED_COLUMNS[table];
  if (ctx.references && columns.every((c) => cachedColumns.includes(c))) return ctx.references.rows(ctx.trx, table, refs.map((r) => r.value));
  return loadReferenced(ctx.trx, table, 'recnum', refs, columns);
}

/**
 * The phases of the given jobs, by job number (as string): every phase row (jobnum, phsnum,
 * status), through the posting's reference cache when it has one (one read for all jobs on a miss).
 */
export async function phasesOfJobs(
  ctx: { trx: Knex.Transaction; references?: ReferenceCache },
  jobs: ReadonlyArray<number>,
): Promise<Map<string, ReadonlyArray<Record<string, any>>>> {
  const read = (keys: string[]) => ctx.trx('jobphs').whereIn('jobnum', keys.map(Number)).select('jobnum', 'phsnum', 'status') as Promise<Array<Record<string, any>>>;
  return grouped(ctx, 'jobphs', jobs.map(String), (row) => String(Number(row.jobnum)), read);
}

/** One phase of a job (jobnum, phsnum, status), or undefined: phasesOfJobs for one. */
export async function phaseOf(ctx: { trx: Knex.Transaction; references?: ReferenceCache }, job: number, phase: number): Promise<Record<string, any> | undefined> {
  return (await phasesOfJobs(ctx, [job])).get(String(job))?.find((row) => Number(row.phsnum) === phase);
}

/**
 * Cost code rows (cstcde, inactv) by code at the cost code scale (`toFixed(3)`), through the
 * posting's reference cache when it has one. Codes are decimals: looked up by their encoded value.
 */
async function costCodeRows(
  ctx: { trx: Knex.Transaction; dialect: Dialect; references?: ReferenceCache },
  codes: ReadonlyArray<string>,
): Promise<Map<string, ReadonlyArray<Record<string, any>>>> {
  const { trx, dialect } = ctx;
  const read = (keys: string[]) =>
    trx('cstcde').whereIn('cstcde', [...new Set(keys.map((k) => dialect.encodeDecimal(new Dec(k), SCALE.costCode)))]).select('cstcde', 'inactv') as Promise<Array<Record<string, any>>>;
  return grouped(ctx, 'cstcde', codes, (row) => dialect.decodeDecimal(row.cstcde, SCALE.costCode)!.toFixed(SCALE.costCode), read);
}

/** ReferenceCache.grouped when the posting has a cache, else the same grouping of a direct read. */
async function grouped(
  ctx: { trx: Knex.Transaction; references?: ReferenceCache },
  table: GroupedTable,
  wanted: readonly string[],
  keyOf: (row: Record<string, any>) => string,
  read: (keys: string[]) => Promise<Array<Record<string, any>>>,
): Promise<Map<string, ReadonlyArray<Record<string, any>>>> {
  if (ctx.references) return ctx.references.grouped(ctx.trx, table, wanted, keyOf, read);
  return wanted.length === 0 ? new Map() : groupRows(await read([...new Set(wanted)]), keyOf);
}

/** 404 REFERENCE_NOT_FOUND for every missing reference first, else 422 for every unusable one (src/errors/issues.ts). */
export class ReferenceCheck {
  private readonly issues = new Issues({
    precedence: ['REFERENCE_NOT_FOUND', 'BUSINESS_RULE_VIOLATED'],
    detail: {
      REFERENCE_NOT_FOUND: (list) => `Referenced records do not exist: ${list}.`,
      BUSINESS_RULE_VIOLATED: (list) => `The document cannot be posted: ${list}.`,
    },
  });

  notFound(field: string, what: string): void {
    this.issues.add('REFERENCE_NOT_FOUND', field, 'not_found', `${what} does not exist`);
  }

  notPostable(field: string, why: string, code = 'not_postable'): void {
    this.issues.add('BUSINESS_RULE_VIOLATED', field, code, why);
  }

  /** Throws 404 for missing references first, then 422 for unusable ones. */
  throwIfAny(): void {
    this.issues.throwIfAny();
  }
}

export const isTrue = (v: unknown): boolean => decodeLegacyBoolean(v) === true;

/** A document line's job cost coding, with the index of its input line (for `lines[i].costCode`). */
export interface CostCoding {
  line: { index: number };
  costCode: Dec | null;
  costType: number | null;
}

/**
 * The cost codes and cost types the lines name: each missing one is a 404 and each inactive one a
 * 422 on `lines[i].costCode` / `lines[i].costType` (recorded in `check`). Cost codes are decimals:
 * looked up by their encoded value, matched back at the cost code scale.
 */
export async function checkCostCodesAndTypes(
  ctx: { trx: Knex.Transaction; dialect: Dialect; references?: ReferenceCache },
  check: ReferenceCheck,
  lines: ReadonlyArray<CostCoding>,
): Promise<void> {
  const codeRefs = lines.filter((r) => r.costCode !== null).map((r) => ({ field: `lines[${r.line.index}].costCode`, value: r.costCode!.toFixed(SCALE.costCode) }));
  if (codeRefs.length > 0) {
    const codes = await costCodeRows(ctx, codeRefs.map((c) => c.value));
    for (const ref of codeRefs) {
      const code = codes.get(ref.value)?.[0];
      if (!code) check.notFound(ref.field, `cost code ${new Dec(ref.value).toFixed()}`);
      else if (isTrue(code.inactv)) check.notPostable(ref.field, `cost code ${new Dec(ref.value).toFixed()} is inactive`, 'inactive');
    }
  }
  const typeRefs = lines.filter((r) => r.costType !== null).map((r) => ({ field: `lines[${r.line.index}].costType`, value: r.costType! }));
  const types = await loadReferenceRows(ctx, 'csttyp', typeRefs, ['inactv']);
  for (const ref of typeRefs) {
    const type = types.get(String(ref.value));
    if (!type) check.notFound(ref.field, `cost type ${ref.value}`);
    else if (isTrue(type.inactv)) check.notPostable(ref.field, `cost type ${ref.value} is inactive`, 'inactive');
  }
}
