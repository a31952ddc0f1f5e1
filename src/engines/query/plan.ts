/**
 * Step 1 of the read pipeline: the validated body becomes a plan, every published name
 * resolved against the catalog. Anything the contract validator cannot know (names of the
 * entity's fields and collections, value kinds, change stamps) is checked here, and the
 * plain rules (page range) are checked again so the engine never depends on the validator.
 */
import type { ChildDef, EntityDef, FieldDef } from '../../catalog/types';
import { ApiProblem } from '../../errors/problem';
import { Issues } from '../../errors/issues';
import { withheldIssue } from '../../catalog/pii';
import { entityUnavailable, unavailableIssue } from '../../catalog/installed';
import { filterDepthProblem, resolveFieldName, resolveFilter } from './filters';
import type { Condition, FilterNode, FilterValue, MatchLeaf, OrderTerm, QueryPlan, QueryRequest } from './types';
import { isCalendarDate } from './values';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;


const BASE_FIELDS = new Set(['select', 'children', 'filters', 'orderBy', 'page', 'lastUpdated', 'createdSince']);

export interface PlanOptions {
  maxFilterDepth: number;
}

export function planQuery(entity: EntityDef, body: QueryRequest, options: PlanOptions): QueryPlan {
  const gone = entityUnavailable(entity);
  if (gone) throw gone;
  const issues = new Issues();

  const children = resolveChildren(entity, body.children, issues);
  const fields = resolveSelect(entity, body.select, children, issues);

  const conditions: Condition[] = [];
  if (body.filters !== undefined) {
    const tooDeep = filterDepthProblem(body.filters, options.maxFilterDepth);
    if (tooDeep) throw tooDeep;
    const c = resolveFilter(entity, body.filters as FilterNode, issues);
    if (c) conditions.push(c);
  }
  conditions.push(...resolveExtras(entity, body, issues));

  const order = resolveOrder(entity, body.orderBy, issues);
  const { pageNumber, pageSize } = resolvePage(body.page, issues);
  const stampDates = checkStampDates(entity, body, issues);

  for (const key of Object.keys(body)) {
    if (!BASE_FIELDS.has(key) && !entity.requestExtras?.[key]) issues.add('VALIDATION_FAILED', key, 'unknown_field', 'unknown field');
  }
  issues.throwIfAny();

  conditions.push(...changeStampConditions(entity, stampDates));

  const where: Condition | null = conditions.length === 0 ? null : conditions.length === 1 ? conditions[0]! : { kind: 'and', items: conditions };
  return { entity, fields, children, where, order, pageNumber, pageSize, offset: (pageNumber - 1) * pageSize };
}

function resolveChildren(entity: EntityDef, names: unknown, issues: Issues): ChildDef[] {
  if (names === undefined) return [];
  if (!Array.isArray(names)) {
    issues.add('VALIDATION_FAILED', 'children', 'type', 'must be an array of collection names');
    return [];
  }
  const valid = Object.keys(entity.children);
  const out: ChildDef[] = [];
  const unknown: string[] = [];
  names.forEach((name, i) => {
    const child = typeof name === 'string' && Object.prototype.hasOwnProperty.call(entity.children, name) ? entity.children[name] : undefined;
    if (!child) {
      if (unavailableIssue(entity, name, `children[${i}]`, issues)) return;
      unknown.push(String(name));
      issues.add('UNKNOWN_CHILD_COLLECTION', `children[${i}]`, 'unknown_child_collection', `"${String(name)}" is not a child collection of ${entity.entity}`);
      return;
    }
    if (!out.includes(child)) out.push(child);
  });
  if (unknown.length > 0) {
    const validText = valid.length === 0 ? `${entity.entity} has no child collections` : `valid: ${valid.join(', ')}`;
    issues.setDetail('UNKNOWN_CHILD_COLLECTION', `Unknown child collection${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `"${u}"`).join(', ')} for ${entity.entity}; ${validText}.`);
  }
  return out;
}

function resolveSelect(entity: EntityDef, names: unknown, children: ChildDef[], issues: Issues): FieldDef[] {
  if (names === undefined) return Object.values(entity.fields);
  if (!Array.isArray(names)) {
    issues.add('VALIDATION_FAILED', 'select', 'type', 'must be an array of field names');
    return [];
  }
  const out: FieldDef[] = [];
  names.forEach((name, i) => {
    const path = `select[${i}]`;
    if (typeof name !== 'string' || name === '') {
      issues.add('VALIDATION_FAILED', path, 'type', 'must be a field name');
      return;
    }
    const field = Object.prototype.hasOwnProperty.call(entity.fields, name) ? entity.fields[name] : undefined;
    if (field) {
      if (!out.includes(field)) out.push(field);
      return;
    }
    const dot = name.indexOf('.');
    const collection = dot > 0 ? name.slice(0, dot) : name;
    const child = Object.prototype.hasOwnProperty.call(entity.children, collection) ? entity.children[collection] : undefined;
    if (!child) {
      if (withheldIssue(entity, name, path, issues)) return;
      if (unavailableIssue(entity, name, path, issues) || unavailableIssue(entity, collection, path, issues)) return;
      issues.add('UNKNOWN_FIELD', path, 'unknown_field', `"${name}" is not a field of ${entity.entity}`);
      return;
    }
    if (dot > 0) {
      const rest = name.slice(dot + 1);
      if (!Object.prototype.hasOwnProperty.call(child.fields, rest)) {
        if (withheldIssue(entity, name, path, issues)) return;
        if (unavailableIssue(entity, name, path, issues)) return;
        issues.add('UNKNOWN_FIELD', path, 'unknown_field', `"${rest}" is not a field of ${entity.entity} ${collection}`);
        return;
      }
    }
    if (!children.includes(child)) {
      issues.add('VALIDATION_FAILED', path, 'child_not_requested', `"${name}" names the child collection ${collection}, which is not requested in children`);
    }
  });
  return out;
}

const ORDER_CLAUSE = /^\s*(\S+)(?:\s+(asc|desc))?\s*$/i;

function resolveOrder(entity: EntityDef, clauses: unknown, issues: Issues): OrderTerm[] {
  const terms: OrderTerm[] = [];
  if (clauses !== undefined) {
    if (!Array.isArray(clauses)) issues.add('VALIDATION_FAILED', 'orderBy', 'type', 'must be an array of "field ASC|DESC"');
    else {
      clauses.forEach((clause, i) => {
        const path = `orderBy[${i}]`;
        const m = typeof clause === 'string' ? ORDER_CLAUSE.exec(clause) : null;
        if (!m) {
          issues.add('VALIDATION_FAILED', path, 'pattern', 'must be "field ASC" or "field DESC"');
          return;
        }
        const field = resolveFieldName(entity, m[1], path, issues, 'order');
        if (!field) return;
        if (terms.some((t) => t.column === field.column)) return;
        terms.push({ column: field.column, direction: (m[2] ?? 'asc').toLowerCase() as 'asc' | 'desc' });
      });
    }
  }
  // The unique tiebreak: pages never overlap or skip rows.
  if (!terms.some((t) => t.column === entity.keyColumn)) terms.push({ column: entity.keyColumn, direction: 'asc' });
  return terms;
}

function resolvePage(page: unknown, issues: Issues): { pageNumber: number; pageSize: number } {
  let pageNumber = 1;
  let pageSize = DEFAULT_PAGE_SIZE;
  if (page === undefined) return { pageNumber, pageSize };
  if (!page || typeof page !== 'object' || Array.isArray(page)) {
    issues.add('VALIDATION_FAILED', 'page', 'type', 'must be an object');
    return { pageNumber, pageSize };
  }
  const p = page as Record<string, unknown>;
  for (const k of Object.keys(p)) if (k !== 'pageNumber' && k !== 'pageSize') issues.add('VALIDATION_FAILED', `page.${k}`, 'unknown_field', 'unknown field');
  if (p.pageNumber !== undefined) {
    if (typeof p.pageNumber !== 'number' || !Number.isSafeInteger(p.pageNumber) || p.pageNumber < 1) {
      issues.add('VALIDATION_FAILED', 'page.pageNumber', 'range', 'must be a whole number from 1');
    } else pageNumber = p.pageNumber;
  }
  if (p.pageSize !== undefined) {
    if (typeof p.pageSize !== 'number' || !Number.isInteger(p.pageSize) || p.pageSize < 1 || p.pageSize > MAX_PAGE_SIZE) {
      issues.add('VALIDATION_FAILED', 'page.pageSize', 'range', `must be a whole number from 1 to ${MAX_PAGE_SIZE} (never clamped)`);
    } else pageSize = p.pageSize;
  }
  if (!Number.isSafeInteger((pageNumber - 1) * pageSize)) issues.add('VALIDATION_FAILED', 'page.pageNumber', 'range', 'is too large');
  return { pageNumber, pageSize };
}

type StampName = 'lastUpdated' | 'createdSince';

function checkStampDates(entity: EntityDef, body: QueryRequest, issues: Issues): Partial<Record<StampName, string>> {
  const out: Partial<Record<StampName, string>> = {};
  for (const name of ['lastUpdated', 'createdSince'] as const) {
    const raw = body[name];
    if (raw === undefined) continue;
    if (typeof raw !== 'string' || !isCalendarDate(raw)) issues.add('VALIDATION_FAILED', name, 'format', 'must be a date YYYY-MM-DD');
    else if (!unavailableIssue(entity, name, name, issues)) out[name] = raw;
  }
  return out;
}

/** Rows stamped on or after the start (00:00 UTC) of the date; 501 where the entity has no such stamp. */
function changeStampConditions(entity: EntityDef, dates: Partial<Record<StampName, string>>): Condition[] {
  const out: Condition[] = [];
  for (const name of ['lastUpdated', 'createdSince'] as const) {
    const date = dates[name];
    if (date === undefined) continue;
    const column = entity.changeStamps[name];
    if (!column) {
      const supported = (Object.keys(entity.changeStamps) as StampName[]).filter((k) => entity.changeStamps[k]);
      throw new ApiProblem(
        'CHANGE_STAMP_UNSUPPORTED',
        `${name} is not supported on ${entity.entity}: it has no ${name === 'lastUpdated' ? 'modification' : 'entered'} date` +
          (supported.length > 0 ? ` (${entity.entity} supports ${supported.join(', ')}).` : '.'),
        { errors: [{ field: name, code: 'unsupported', message: `not available on ${entity.entity}` }] },
      );
    }
    const published = Object.values(entity.fields).find((f) => f.column === column);
    const kind = published?.kind === 'date' ? 'date' : 'datetime';
    const field: FieldDef = { name, column, kind, nullable: true, sqlType: published?.sqlType ?? (kind === 'date' ? 'date' : 'datetime2') };
    out.push({
      kind: 'compare',
      field,
      op: '>=',
      value: kind === 'date' ? { kind: 'date', value: date } : { kind: 'datetime', value: new Date(`${date}T00:00:00Z`) },
    });
  }
  return out;
}

function resolveExtras(entity: EntityDef, body: QueryRequest, issues: Issues): Condition[] {
  const extras = entity.requestExtras;
  if (!extras) return [];
  const out: Condition[] = [];
  for (const [prop, extra] of Object.entries(extras)) {
    const raw = body[prop];
    if (raw === undefined) continue;
    // The field it filters on is one the installed build lacks: reported at the request property.
    if (unavailableIssue(entity, extra.field, prop, issues)) continue;
    let leaf: MatchLeaf;
    if (extra.kind === 'flag') {
      if (typeof raw !== 'boolean') {
        issues.add('VALIDATION_FAILED', prop, 'type', 'must be true or false');
        continue;
      }
      if (!raw) continue;
      leaf = { field: extra.field, operator: extra.operator, ...(extra.value !== undefined ? { value: extra.value } : {}) };
    } else {
      leaf = { field: extra.field, operator: extra.operator, value: raw as FilterValue };
    }
    // Problems are reported at the request property, e.g. `status` rather than a filter path.
    const local = new Issues();
    const c = resolveFilter(entity, { match: leaf }, local, prop);
    if (c && local.empty) out.push(c);
    else {
      try {
        local.throwIfAny();
      } catch (err) {
        const p = err as ApiProblem;
        for (const e of p.errors ?? []) issues.add('VALIDATION_FAILED', prop, e.code, e.message ?? 'invalid');
      }
    }
  }
  return out;
}
