/**
 * Step 2: the plan becomes SQL (knex builders). Dialect-specific pieces (long lists, LIKE,
 * encodings) come from the QueryDialect; nothing here branches on the engine.
 *
 * Page plan ("deferred join"): for page 1 a plain ordered LIMIT; for deeper pages the
 * OFFSET runs over the keys only (`SELECT key ... ORDER BY ... OFFSET n`), which an index on
 * the ordering columns plus key (and the filter columns) answers without reading rows, and
 * only the page's rows are then read back by key (`WHERE key IN (that subquery)`).
 */
import type { Knex } from 'knex';
import type { ChildDef, FieldDef } from '../../catalog/types';
import type { ExactText, ListColumn, QueryDialect, SqlFragment } from '../../storage/dialect';
import { INLINE_PARAM_BUDGET } from '../../storage/parameter-budget';
import type { Condition, QueryPlan, TypedValue } from './types';

/** Alias of the filtered table. */
export const BASE = 'b';
/** Alias of the table read back for the page (deferred join). */
const ROWS = 'r';

/** Lists up to this length are inlined as parameters; longer lists travel as one JSON parameter. */
export const INLINE_LIST_MAX = 64;
/** Keys per child statement (one statement per collection for any page up to 1000 rows). */
export const CHILD_KEY_CHUNK = 1000;

type Db = Knex | Knex.Transaction;

export interface SqlContext {
  qd: QueryDialect;
  /** Table alias qualifying columns. */
  alias: string;
  /**
   * Parameters still available for inlined lists in this statement; the extra parameter of an
   * exact text comparison (QueryDialect.exactText) is taken from it too, and past it such a
   * comparison takes one parameter (a list of one).
   */
  budget: number;
}

export function col(alias: string, column: string): string {
  return `${alias}.${column}`;
}

export function encode(qd: QueryDialect, field: FieldDef, v: TypedValue): unknown {
  return qd.encodeValue(field.kind, v.value, field.scale);
}

type Mode = 'and' | 'or';

function rawOf(f: SqlFragment): [string, Knex.RawBinding[]] {
  return [f.sql, f.bindings as Knex.RawBinding[]];
}

function raw(qb: Knex.QueryBuilder, mode: Mode, f: SqlFragment): void {
  if (mode === 'and') qb.whereRaw(...rawOf(f));
  else qb.orWhereRaw(...rawOf(f));
}

/** A field's column as a list compares it (`inList`, `inTuples`). */
function listColumn(field: FieldDef, column: string): ListColumn {
  return { column, kind: field.kind, ...(field.scale !== undefined ? { scale: field.scale } : {}) };
}

/**
 * The dialect's exact text comparison for a text field, where the engine's own `=` is not exact
 * (SQL Server: QueryDialect.exactText); undefined otherwise: the plain comparison is exact.
 */
function exactTextOf(ctx: SqlContext, field: FieldDef): ExactText | undefined {
  return field.kind === 'string' ? ctx.qd.exactText : undefined;
}

/** Adds `cond` to `qb`, joined with AND or OR to what is already there. */
export function applyCondition(qb: Knex.QueryBuilder, cond: Condition, ctx: SqlContext, mode: Mode = 'and'): void {
  const where = mode === 'and' ? 'where' : 'orWhere';
  switch (cond.kind) {
    case 'and':
    case 'or': {
      const inner = cond.kind;
      qb[where](function group(this: Knex.QueryBuilder) {
        for (const item of cond.items) applyCondition(this, item, ctx, inner);
      });
      return;
    }
    case 'compare': {
      const exact = exactTextOf(ctx, cond.field);
      const column = col(ctx.alias, cond.field.column);
      const value = encode(ctx.qd, cond.field, cond.value);
      if (exact && cond.op === '<>') raw(qb, mode, exact.differs(column, value as string));
      else if (exact && cond.op === '=') {
        if (exact.extraParametersPerValue <= ctx.budget) {
          ctx.budget -= exact.extraParametersPerValue;
          raw(qb, mode, exact.equals(column, value as string));
        } else raw(qb, mode, ctx.qd.inList(listColumn(cond.field, column), [value])); // one parameter
      } else qb[where](column, cond.op, value as Knex.Value);
      return;
    }
    case 'like':
      raw(qb, mode, ctx.qd.like(col(ctx.alias, cond.field.column), cond.pattern, cond.negate));
      return;
    case 'in': {
      const values = cond.values.map((v) => encode(ctx.qd, cond.field, v));
      const column = col(ctx.alias, cond.field.column);
      const exact = exactTextOf(ctx, cond.field);
      const size = values.length * (1 + (exact?.extraParametersPerValue ?? 0));
      if (values.length <= INLINE_LIST_MAX && size <= ctx.budget) {
        ctx.budget -= size;
        if (exact) raw(qb, mode, exact.inValues(column, values as string[]));
        else if (mode === 'and') qb.whereIn(column, values as Knex.Value[]);
        else qb.orWhereIn(column, values as Knex.Value[]);
      } else {
        raw(qb, mode, ctx.qd.inList(listColumn(cond.field, column), values));
      }
      return;
    }
    case 'inPairs': {
      const tuples = cond.pairs.map((t) => t.map((v, i) => encode(ctx.qd, cond.fields[i]!, v)));
      const exact = cond.fields.map((f) => exactTextOf(ctx, f));
      const size = tuples.length * cond.fields.reduce((n, _, i) => n + 1 + (exact[i]?.extraParametersPerValue ?? 0), 0);
      if (tuples.length <= INLINE_LIST_MAX && size <= ctx.budget) {
        // An OR of ANDs: portable (no row values), fine for short lists.
        ctx.budget -= size;
        qb[where](function pairs(this: Knex.QueryBuilder) {
          for (const t of tuples) {
            this.orWhere(function pair(this: Knex.QueryBuilder) {
              cond.fields.forEach((f, i) => {
                const e = exact[i];
                if (e) this.whereRaw(...rawOf(e.equals(col(ctx.alias, f.column), t[i] as string)));
                else this.where(col(ctx.alias, f.column), t[i] as Knex.Value);
              });
            });
          }
        });
      } else {
        const columns = cond.fields.map((f) => listColumn(f, col(ctx.alias, f.column)));
        raw(qb, mode, ctx.qd.inTuples(columns, tuples));
      }
      return;
    }
  }
}

function filtered(db: Db, qd: QueryDialect, plan: QueryPlan): Knex.QueryBuilder {
  const qb = db({ [BASE]: plan.entity.table });
  if (plan.where) applyCondition(qb, plan.where, { qd, alias: BASE, budget: INLINE_PARAM_BUDGET });
  return qb;
}

/** `SELECT count(*) AS n FROM table b WHERE ...` */
export function countQuery(db: Db, qd: QueryDialect, plan: QueryPlan): Knex.QueryBuilder {
  return filtered(db, qd, plan).count({ n: '*' });
}

/**
 * Storage columns to read for the page: the selected fields, and the key when children attach or
 * when asked (`withKey`: a value that cannot be read names its record by the key).
 */
export function pageColumns(plan: QueryPlan, options: { withKey?: boolean } = {}): string[] {
  const columns = new Set(plan.fields.map((f) => f.column));
  if (plan.children.length > 0 || options.withKey) columns.add(plan.entity.keyColumn);
  if (columns.size === 0) columns.add(plan.entity.keyColumn);
  return [...columns];
}

/** The page's rows, ordered, with the unique tiebreak. */
export function pageQuery(db: Db, qd: QueryDialect, plan: QueryPlan, options: { withKey?: boolean } = {}): Knex.QueryBuilder {
  const columns = pageColumns(plan, options);
  if (plan.offset === 0) {
    const qb = filtered(db, qd, plan).select(columns.map((c) => col(BASE, c)));
    for (const t of plan.order) qb.orderBy(col(BASE, t.column), t.direction);
    return qb.limit(plan.pageSize);
  }
  // The keys of the page by OFFSET (an index-only scan where an index covers ordering, key and
  // filter columns), then the page's rows by key. `key IN (subquery)` rather than a join keeps
  // every planner from driving the join from the big side.
  const key = plan.entity.keyColumn;
  const keys = filtered(db, qd, plan).select(col(BASE, key));
  for (const t of plan.order) keys.orderBy(col(BASE, t.column), t.direction);
  keys.limit(plan.pageSize).offset(plan.offset);
  const qb = db({ [ROWS]: plan.entity.table })
    .select(columns.map((c) => col(ROWS, c)))
    .whereIn(col(ROWS, key), keys);
  for (const t of plan.order) qb.orderBy(col(ROWS, t.column), t.direction);
  return qb;
}

/** Child rows of the given parents, one statement per chunk of keys (one for any page). */
export function childQueries(db: Db, child: ChildDef, parentKeys: unknown[]): Knex.QueryBuilder[] {
  const columns = new Set(Object.values(child.fields).map((f) => f.column));
  columns.add(child.parentColumn);
  const out: Knex.QueryBuilder[] = [];
  for (let i = 0; i < parentKeys.length; i += CHILD_KEY_CHUNK) {
    const chunk = parentKeys.slice(i, i + CHILD_KEY_CHUNK);
    out.push(
      db({ c: child.table })
        .select([...columns].map((c) => col('c', c)))
        .whereIn(col('c', child.parentColumn), chunk as Knex.Value[])
        .orderBy(col('c', child.parentColumn))
        .orderBy(col('c', child.orderColumn)),
    );
  }
  return out;
}
