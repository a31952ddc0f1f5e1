/**
 * Fuzzy match: the records of an entity whose match fields are within `maxDistance` edits of
 * `matchString`, both sides normalised (normalize.ts). Distance of a record = the smallest
 * over the requested match fields. Answer: the selected fields plus `distance`, closest first,
 * ties by key, at most MATCH_RESULT_CAP records (and whether more matched).
 *
 * Plan, in one snapshot: with a change token (SQLite, PostgreSQL) the exact in-memory index
 * (index-cache.ts) gives the candidates, each distinct normalised value in the length window
 * scored once; `filters` are then checked in SQL over the ordered candidates until the cap is
 * reached. Without a token (SQL Server) candidate rows are read in key order in batches
 * (keyset), with only the key and the match columns, pre-filtered by `filters` in SQL, pruned
 * by length and scored with the bounded Levenshtein into a best list whose bound tightens as it
 * fills. The winners' selected columns are read at the end by key.
 */
import type { Knex } from 'knex';
import type { EntityDef, FieldDef } from '../../catalog/types';
import { ApiProblem } from '../../errors/problem';
import { isStorableText } from '../../catalog/bounds';
import type { QueryDialect, SnapshotReader } from '../../storage/dialect';
import { Issues } from '../../errors/issues';
import { withheldIssue } from '../../catalog/pii';
import { entityUnavailable, unavailableIssue } from '../../catalog/installed';
import { filterDepthProblem, resolveFilter } from '../query/filters';
import { entitySubject, recordDecoder } from '../query/envelope';
import { applyCondition, BASE, col } from '../query/sql';
import { INLINE_PARAM_BUDGET } from '../../storage/parameter-budget';
import { keyOf } from '../query/children';
import type { Condition, FilterNode } from '../query/types';
import { boundedLevenshtein } from './levenshtein';
import { normalise } from './normalize';
import type { MatchRequest, MatchResult } from './types';
import { matchIndex, type MatchIndex } from './index-cache';
import type { PlanOptions } from '../query/plan';

/** Most records a match answers with (closest first); the answer says when more matched (`truncated`). */
export const MATCH_RESULT_CAP = 100;
/** Hits looked for: one past the cap tells a cut answer from a whole one. */
const HITS_WANTED = MATCH_RESULT_CAP + 1;
/** Candidate rows read per statement. */
export const MATCH_BATCH = 5000;
export const MAX_DISTANCE_LIMIT = 10;

export interface MatchPlan {
  entity: EntityDef;
  target: string;
  matchFields: FieldDef[];
  select: FieldDef[];
  maxDistance: number;
  where: Condition | null;
}

export function planMatch(entity: EntityDef, body: MatchRequest, options: PlanOptions): MatchPlan {
  const gone = entityUnavailable(entity);
  if (gone) throw gone;
  const issues = new Issues();
  if (!body || typeof body !== 'object') throw new ApiProblem('VALIDATION_FAILED', 'The body must be a match request object.');
  for (const k of ['matchString', 'matchFields', 'select', 'maxDistance'] as const) {
    if (body[k] === undefined) issues.add('VALIDATION_FAILED', k, 'required', 'required');
  }
  if (body.matchString !== undefined && typeof body.matchString !== 'string') issues.add('VALIDATION_FAILED', 'matchString', 'type', 'must be a string');
  else if (typeof body.matchString === 'string' && !isStorableText(body.matchString)) {
    // Same text rule as stored values (bounds.ts): the SQL Server path binds it nowhere today, but
    // a NUL or lone surrogate is never a meaningful name to match.
    issues.add('VALIDATION_FAILED', 'matchString', 'range', 'must not contain NUL characters or unpaired UTF-16 surrogates');
  }
  if (body.maxDistance !== undefined && (!Number.isInteger(body.maxDistance) || body.maxDistance < 1 || body.maxDistance > MAX_DISTANCE_LIMIT)) {
    issues.add('VALIDATION_FAILED', 'maxDistance', 'range', `must be a whole number from 1 to ${MAX_DISTANCE_LIMIT}`);
  }
  const matchFields: FieldDef[] = [];
  if (Array.isArray(body.matchFields)) {
    body.matchFields.forEach((name, i) => {
      const field = typeof name === 'string' && entity.matchFields.includes(name) ? entity.fields[name] : undefined;
      if (!field) {
        if (withheldIssue(entity, name, `matchFields[${i}]`, issues)) return;
        if (unavailableIssue(entity, name, `matchFields[${i}]`, issues)) return;
        issues.add('UNKNOWN_FIELD', `matchFields[${i}]`, 'unknown_field', `"${String(name)}" is not a match field of ${entity.entity} (match fields: ${entity.matchFields.join(', ')})`);
      } else if (!matchFields.includes(field)) matchFields.push(field);
    });
  } else if (body.matchFields !== undefined) issues.add('VALIDATION_FAILED', 'matchFields', 'type', 'must be an array of field names');
  const select: FieldDef[] = [];
  if (Array.isArray(body.select)) {
    body.select.forEach((name, i) => {
      const field = typeof name === 'string' && Object.prototype.hasOwnProperty.call(entity.fields, name) ? entity.fields[name] : undefined;
      if (!field && withheldIssue(entity, name, `select[${i}]`, issues)) return;
      if (!field && unavailableIssue(entity, name, `select[${i}]`, issues)) return;
      if (!field) issues.add('UNKNOWN_FIELD', `select[${i}]`, 'unknown_field', `"${String(name)}" is not a field of ${entity.entity}`);
      else if (!select.includes(field)) select.push(field);
    });
  } else if (body.select !== undefined) issues.add('VALIDATION_FAILED', 'select', 'type', 'must be an array of field names');
  let where: Condition | null = null;
  if (body.filters !== undefined) {
    const tooDeep = filterDepthProblem(body.filters, options.maxFilterDepth);
    if (tooDeep) throw tooDeep;
    where = resolveFilter(entity, body.filters as FilterNode, issues);
  }
  const known = new Set(['matchString', 'matchFields', 'select', 'maxDistance', 'filters']);
  for (const k of Object.keys(body)) if (!known.has(k)) issues.add('VALIDATION_FAILED', k, 'unknown_field', 'unknown field');
  issues.throwIfAny();
  return { entity, target: normalise(body.matchString), matchFields, select, maxDistance: body.maxDistance, where };
}

interface Hit {
  key: unknown;
  sortKey: string;
  distance: number;
}

/** Best-first list of at most `cap` hits ordered by (distance, key). */
class BestList {
  readonly hits: Hit[] = [];
  constructor(private readonly cap: number) {}

  /** The hits, best first. */
  result(): Hit[] {
    if (this.cap === Number.POSITIVE_INFINITY) this.hits.sort((a, b) => (BestList.before(a, b) ? -1 : BestList.before(b, a) ? 1 : 0));
    return this.hits;
  }

  static before(a: Hit, b: Hit): boolean {
    return a.distance < b.distance || (a.distance === b.distance && a.sortKey < b.sortKey);
  }

  /** Largest distance still able to enter. */
  bound(maxDistance: number): number {
    return this.hits.length < this.cap ? maxDistance : this.hits[this.hits.length - 1]!.distance;
  }

  offer(hit: Hit): void {
    const hits = this.hits;
    if (this.cap === Number.POSITIVE_INFINITY) {
      // Unbounded: collect, sorted once in result().
      hits.push(hit);
      return;
    }
    if (hits.length >= this.cap && !BestList.before(hit, hits[hits.length - 1]!)) return;
    // Binary search for the insertion point.
    let lo = 0;
    let hi = hits.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (BestList.before(hit, hits[mid]!)) hi = mid;
      else lo = mid + 1;
    }
    hits.splice(lo, 0, hit);
    if (hits.length > this.cap) hits.pop();
  }
}

/** Scores one row: the smallest distance over the match fields, or `bound + 1`. */
function score(target: string, values: ReadonlyArray<string | null | undefined>, bound: number): number {
  let distance = bound + 1;
  for (const v of values) {
    if (v === null || v === undefined) continue;
    if (Math.abs(v.length - target.length) >= distance) continue;
    const d = boundedLevenshtein(target, v, distance - 1);
    if (d < distance) distance = d;
    if (distance === 0) break;
  }
  return distance;
}

/**
 * Candidates from the in-memory index: every distinct value within the length window is scored
 * once; a row's distance is its best over the match fields. The best `cap` (all within
 * maxDistance when cap is Infinity).
 */
function scoreIndex(index: MatchIndex, plan: MatchPlan, cap: number): Hit[] {
  const { target, maxDistance } = plan;
  // Best distance per row reached (few rows: a map, not an array over the whole table).
  const distance = new Map<number, number>();
  for (const f of plan.matchFields) {
    const column = index.columns.get(f.column)!;
    const from = column.byLength[Math.max(0, target.length - maxDistance)] ?? column.values.length;
    const to = column.byLength[Math.min(column.byLength.length - 1, target.length + maxDistance + 1)] ?? column.values.length;
    const { values, rowStart, rowsFlat } = column;
    for (let v = from; v < to; v++) {
      const d = boundedLevenshtein(target, values[v]!, maxDistance);
      if (d > maxDistance) continue;
      for (let r = rowStart[v]!, end = rowStart[v + 1]!; r < end; r++) {
        const row = rowsFlat[r]!;
        const current = distance.get(row);
        if (current === undefined || d < current) distance.set(row, d);
      }
    }
  }
  const best = new BestList(cap);
  for (const [row, d] of distance) {
    const key = index.keys.at(row);
    best.offer({ key, sortKey: keyOf(key), distance: d });
  }
  return best.result();
}

/** Candidates by reading the rows (pre-filtered in SQL) in key order, in batches. */
async function scoreStream(reader: SnapshotReader, qd: QueryDialect, plan: MatchPlan, cap: number): Promise<Hit[]> {
  const { entity, target } = plan;
  const key = entity.keyColumn;
  const columns = [...new Set([key, ...plan.matchFields.map((f) => f.column)])];
  const best = new BestList(cap);
  const values: Array<string | null | undefined> = new Array(plan.matchFields.length);
  let after: unknown;
  for (;;) {
    const qb = reader.db({ [BASE]: entity.table }).select(columns.map((c) => col(BASE, c)));
    if (plan.where) applyCondition(qb, plan.where, { qd, alias: BASE, budget: INLINE_PARAM_BUDGET });
    if (after !== undefined) qb.where(col(BASE, key), '>', after as Knex.Value);
    const rows = await reader.all(qb.orderBy(col(BASE, key), 'asc').limit(MATCH_BATCH));
    for (const row of rows) {
      const bound = best.bound(plan.maxDistance);
      plan.matchFields.forEach((f, i) => {
        const raw = row[f.column];
        if (raw === null || raw === undefined) values[i] = null;
        else {
          const text = String(raw);
          // Normalising never lengthens ASCII text: a raw ASCII value this short cannot come close.
          values[i] = text.length + bound < target.length && /^[\x00-\x7f]*$/.test(text) ? null : normalise(text);
        }
      });
      const d = score(target, values, bound);
      if (d <= bound) best.offer({ key: row[key], sortKey: keyOf(row[key]), distance: d });
    }
    if (rows.length < MATCH_BATCH) break;
    after = rows[rows.length - 1]![key];
  }
  return best.result();
}

/** The candidates (in order) that satisfy the pre-filter, up to `limit`; checked in SQL by key. */
async function applyPrefilter(reader: SnapshotReader, qd: QueryDialect, plan: MatchPlan, candidates: Hit[], limit: number): Promise<Hit[]> {
  const key = plan.entity.keyColumn;
  const keyField = { column: col(BASE, key), kind: 'uuid' as const };
  const out: Hit[] = [];
  let chunk = 500;
  for (let i = 0; i < candidates.length && out.length < limit; i += chunk, chunk = Math.min(chunk * 4, 20_000)) {
    const slice = candidates.slice(i, i + chunk);
    const qb = reader.db({ [BASE]: plan.entity.table }).select(col(BASE, key));
    applyCondition(qb, plan.where!, { qd, alias: BASE, budget: INLINE_PARAM_BUDGET });
    qb.whereRaw(...fragment(qd.inList(keyField, slice.map((h) => h.key))));
    const passing = new Set((await reader.all(qb)).map((r) => keyOf(r[key])));
    for (const h of slice) if (passing.has(h.sortKey) && out.length < limit) out.push(h);
  }
  return out;
}

function fragment(f: { sql: string; bindings: unknown[] }): [string, Knex.RawBinding[]] {
  return [f.sql, f.bindings as Knex.RawBinding[]];
}

/**
 * The match answer, and whether it was cut at MATCH_RESULT_CAP (`truncated`: more records matched;
 * the HTTP surface says so in a header, the body keeps the contract's shape).
 */
export async function executeMatch(knex: Knex, qd: QueryDialect, plan: MatchPlan): Promise<MatchResult & { truncated: boolean }> {
  const { entity } = plan;
  const key = entity.keyColumn;
  let truncated = false;
  // asOf: the clock before the snapshot is taken, as the read envelope's (query/envelope.ts readEnvelope says why).
  const asOf = new Date();
  const data = await qd.readSnapshot(knex, async (reader) => {
    const token = await reader.changeToken();
    const index = token === undefined ? undefined : await matchIndex(knex, reader, entity, plan.matchFields.map((f) => f.column), token);
    let hits: Hit[];
    if (index) {
      // The index holds every row: with a pre-filter, all candidates in order, then the filter in SQL.
      hits = scoreIndex(index, plan, plan.where ? Number.POSITIVE_INFINITY : HITS_WANTED);
      if (plan.where) hits = await applyPrefilter(reader, qd, plan, hits, HITS_WANTED);
    } else {
      hits = await scoreStream(reader, qd, plan, HITS_WANTED);
    }
    truncated = hits.length > MATCH_RESULT_CAP;
    if (truncated) hits = hits.slice(0, MATCH_RESULT_CAP);
    if (hits.length === 0) return [];
    const wanted = [...new Set([key, ...plan.select.map((f) => f.column)])];
    const rows = await reader.all(
      reader.db({ [BASE]: entity.table })
        .select(wanted.map((c) => col(BASE, c)))
        .whereIn(
          col(BASE, key),
          hits.map((h) => h.key as Knex.Value),
        ),
    );
    const byKey = new Map(rows.map((r) => [keyOf(r[key]), r]));
    const decode = recordDecoder(qd, plan.select, entitySubject(entity));
    const out: MatchResult['data'] = [];
    for (const hit of hits) {
      const row = byKey.get(hit.sortKey);
      if (row) out.push({ ...decode(row), distance: hit.distance });
    }
    return out;
  });
  return { asOf: asOf.toISOString(), data, truncated };
}

export async function runMatch(knex: Knex, qd: QueryDialect, entity: EntityDef, body: MatchRequest, options: PlanOptions): Promise<MatchResult & { truncated: boolean }> {
  return executeMatch(knex, qd, planMatch(entity, body, options));
}
