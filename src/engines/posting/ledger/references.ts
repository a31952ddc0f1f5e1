import { Issues } from '../../../errors/issues';
import { Dec } from '../../../storage/decimal';
import { CACHED_COLUMNS, groupRows, type CachedTable, type GroupedTable, type ReferenceCache } from '../../../storage/reference-cache';
import { SCALE } from '../context';
import { columnOf, decodeStored, records, tableOf, type RecordsContext, type StoredRecord } from '../records';

/**
 * Looks up referenced records in bulk (one statement per table), in published names (the records
 * module maps them), and names every culprit of a write by its JSON path: 404 REFERENCE_NOT_FOUND
 * for records that do not exist, 422 BUSINESS_RULE_VIOLATED for records that exist but accept no
 * postings.
 */

export interface Ref<T> {
  /** JSON path of the field that refers: `lines[2].ledgerAccount`. */
  field: string;
  value: T;
}

/** A posting's view for lookups: its transaction, and the reference cache when it has one. */
export type LookupContext = RecordsContext & { references?: ReferenceCache };

/** Records of `entityName` whose `keyField` is in the referenced values, with `fields`, keyed by that value (as string). */
export async function loadReferenced<T extends string | number>(
  ctx: RecordsContext,
  entityName: string,
  keyField: string,
  refs: ReadonlyArray<Ref<T>>,
  fields: string[],
): Promise<Map<string, StoredRecord>> {
  const values = [...new Set(refs.map((r) => r.value))];
  const out = new Map<string, StoredRecord>();
  for (let i = 0; i < values.length; i += 1000) {
    const chunk = values.slice(i, i + 1000);
    const rows = await records(ctx, entityName).whereIn(keyField, chunk).all([...new Set([keyField, ...fields])]);
    for (const row of rows) out.set(String(row[keyField]), row);
  }
  return out;
}

/**
 * loadReferenced by record number for the cached reference tables (src/storage/reference-cache.ts:
 * ledger accounts, transaction sources, vendors, jobs, cost types, equipment): through the
 * posting's reference cache when it has one and the fields' columns are cached ones.
 */
export async function loadReferenceRows<T extends string | number>(
  ctx: LookupContext,
  entityName: string,
  refs: ReadonlyArray<Ref<T>>,
  fields: string[],
): Promise<Map<string, StoredRecord>> {
  const table = tableOf(entityName);
  const cachedColumns: readonly string[] | undefined = Object.hasOwn(CACHED_COLUMNS, table) ? CACHED_COLUMNS[table as CachedTable] : undefined;
  if (ctx.references && cachedColumns && fields.every((f) => cachedColumns.includes(columnOf(entityName, f)))) {
    const rows = await ctx.references.rows(ctx.trx, table as CachedTable, refs.map((r) => r.value));
    return new Map([...rows].map(([key, row]) => [key, decodeStored(ctx.dialect, entityName, row)]));
  }
  return loadReferenced(ctx, entityName, 'recordNumber', refs, fields);
}

/**
 * The phases of the given jobs, by job number (as string): every phase (jobNumber, phaseNumber,
 * status), through the posting's reference cache when it has one (one read for all jobs on a miss).
 */
export async function phasesOfJobs(ctx: LookupContext, jobs: ReadonlyArray<number>): Promise<Map<string, ReadonlyArray<StoredRecord>>> {
  const read = (keys: string[]) => records(ctx, 'job-phases').whereIn('jobNumber', keys.map(Number)).all(['jobNumber', 'phaseNumber', 'status']);
  return grouped(ctx, 'job-phases', jobs.map(String), (row) => String(row.jobNumber), read);
}

/** One phase of a job (jobNumber, phaseNumber, status), or undefined: phasesOfJobs for one. */
export async function phaseOf(ctx: LookupContext, job: number, phase: number): Promise<StoredRecord | undefined> {
  return (await phasesOfJobs(ctx, [job])).get(String(job))?.find((row) => row.phaseNumber === phase);
}

/**
 * Cost codes (costCode, inactive) by code at the cost code scale (`toFixed(3)`), through the
 * posting's reference cache when it has one. Codes are decimals: looked up by their encoded value.
 */
async function costCodeRows(ctx: LookupContext, codes: ReadonlyArray<string>): Promise<Map<string, ReadonlyArray<StoredRecord>>> {
  const read = (keys: string[]) => records(ctx, 'cost-codes').whereIn('costCode', uniqueCodes(keys)).all(['costCode', 'inactive']);
  return grouped(ctx, 'cost-codes', codes, (row) => (row.costCode as Dec).toFixed(SCALE.costCode), read);
}

/** One Dec per distinct code (`1.5` and `1.500` are one code). */
function uniqueCodes(keys: readonly string[]): Dec[] {
  const byText = new Map<string, Dec>();
  for (const k of keys) {
    const code = new Dec(k);
    byText.set(code.toFixed(SCALE.costCode), code);
  }
  return [...byText.values()];
}

/**
 * ReferenceCache.grouped when the posting has a cache, else the same grouping of a direct read. The
 * cache keeps the records as read here (published names, decoded), the same fields every time.
 */
async function grouped(
  ctx: LookupContext,
  entityName: string,
  wanted: readonly string[],
  keyOf: (row: StoredRecord) => string,
  read: (keys: string[]) => Promise<StoredRecord[]>,
): Promise<Map<string, ReadonlyArray<StoredRecord>>> {
  if (ctx.references) return ctx.references.grouped(ctx.trx, tableOf(entityName) as GroupedTable, wanted, keyOf, read);
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
  ctx: LookupContext,
  check: ReferenceCheck,
  lines: ReadonlyArray<CostCoding>,
): Promise<void> {
  const codeRefs = lines.filter((r) => r.costCode !== null).map((r) => ({ field: `lines[${r.line.index}].costCode`, value: r.costCode!.toFixed(SCALE.costCode) }));
  if (codeRefs.length > 0) {
    const codes = await costCodeRows(ctx, codeRefs.map((c) => c.value));
    for (const ref of codeRefs) {
      const code = codes.get(ref.value)?.[0];
      if (!code) check.notFound(ref.field, `cost code ${new Dec(ref.value).toFixed()}`);
      else if (code.inactive) check.notPostable(ref.field, `cost code ${new Dec(ref.value).toFixed()} is inactive`, 'inactive');
    }
  }
  const typeRefs = lines.filter((r) => r.costType !== null).map((r) => ({ field: `lines[${r.line.index}].costType`, value: r.costType! }));
  const types = await loadReferenceRows(ctx, 'cost-types', typeRefs, ['inactive']);
  for (const ref of typeRefs) {
    const type = types.get(String(ref.value));
    if (!type) check.notFound(ref.field, `cost type ${ref.value}`);
    else if (type.inactive) check.notPostable(ref.field, `cost type ${ref.value} is inactive`, 'inactive');
  }
}
