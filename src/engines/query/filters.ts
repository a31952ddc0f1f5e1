/**
 * Filter tree resolution: published names -> field definitions, operator and value rules,
 * values checked against the field kind. Produces a `Condition` for sql.ts; every problem is
 * reported with the JSON path of its culprit (e.g. `filters.and[1].match.values[3]`).
 */
import type { EntityDef, FieldDef } from '../../catalog/types';
import { ApiProblem } from '../../errors/problem';
import type { Issues } from '../../errors/issues';
import { withheldIssue } from '../../catalog/pii';
import { unavailableIssue } from '../../catalog/installed';
import type { CompareOp, Condition, FilterNode, MatchLeaf, TypedValue } from './types';
import { typeValue } from './values';

/** At most this many match leaves in one tree (each leaf is at least one SQL parameter). */
export const MAX_FILTER_LEAVES = 1000;

type Operator = CompareOp | 'LIKE' | 'NOT LIKE' | 'IN' | 'INPAIRS';

const OPERATORS: Record<string, Operator> = {
  '=': '=',
  '!=': '<>',
  '<>': '<>',
  '>': '>',
  '<': '<',
  '>=': '>=',
  '<=': '<=',
  LIKE: 'LIKE',
  'NOT LIKE': 'NOT LIKE',
  IN: 'IN',
  INPAIRS: 'INPAIRS',
};

const ORDERED_KINDS = new Set(['integer', 'decimal', 'date', 'datetime']);

/** Which value keys each operator takes; any other key present is an error. */
function keysFor(op: Operator): Array<keyof MatchLeaf> {
  if (op === 'IN') return ['field', 'values'];
  if (op === 'INPAIRS') return ['fields', 'pairs'];
  return ['field', 'value'];
}

export function normaliseOperator(raw: unknown): Operator | undefined {
  if (typeof raw !== 'string') return undefined;
  return OPERATORS[raw.trim().replace(/\s+/g, ' ').toUpperCase()];
}

/**
 * Resolves a published field name for filtering or ordering. Dotted names address child
 * collections, which cannot be filtered or ordered.
 */
export function resolveFieldName(entity: EntityDef, name: unknown, path: string, issues: Issues, use: 'filter' | 'order'): FieldDef | undefined {
  if (typeof name !== 'string' || name === '') {
    issues.add('VALIDATION_FAILED', path, 'type', 'must be a field name');
    return undefined;
  }
  const field = Object.prototype.hasOwnProperty.call(entity.fields, name) ? entity.fields[name] : undefined;
  if (field) return field;
  if (withheldIssue(entity, name, path, issues)) return undefined;
  if (unavailableIssue(entity, name, path, issues)) return undefined;
  const dot = name.indexOf('.');
  if (dot > 0 && Object.prototype.hasOwnProperty.call(entity.children, name.slice(0, dot))) {
    issues.add('UNKNOWN_FIELD', path, 'child_field', `"${name}" is a field of the child collection ${name.slice(0, dot)}; child rows cannot be ${use === 'filter' ? 'filtered' : 'ordered'}`);
    return undefined;
  }
  issues.add('UNKNOWN_FIELD', path, 'unknown_field', `"${name}" is not a field of ${entity.entity}`);
  return undefined;
}

interface Walk {
  entity: EntityDef;
  issues: Issues;
  leaves: number;
}

export function resolveFilter(entity: EntityDef, node: FilterNode, issues: Issues, path = 'filters'): Condition | null {
  const walk: Walk = { entity, issues, leaves: 0 };
  const cond = resolveNode(walk, node, path);
  if (walk.leaves > MAX_FILTER_LEAVES) {
    issues.add('VALIDATION_FAILED', path, 'too_large', `at most ${MAX_FILTER_LEAVES} match conditions per filter tree (got ${walk.leaves})`);
  }
  return cond;
}

/**
 * The one and/or nesting rule (MAX_FILTER_DEPTH): 400 FILTER_TOO_DEEP when `node` nests and/or
 * deeper than `maxDepth` levels (a node holding a list of leaves is one level), else undefined.
 * Iterative on purpose, and it stops at the first level too deep: the HTTP guard runs it before
 * the schema validator, which recurses per level and would overflow the stack on a deep enough
 * tree. `field` is `filter` on /api/v2.
 */
export function filterDepthProblem(node: unknown, maxDepth: number, field: 'filters' | 'filter' = 'filters'): ApiProblem | undefined {
  const stack: Array<{ node: unknown; depth: number }> = [{ node, depth: 1 }];
  while (stack.length > 0) {
    const { node: n, depth } = stack.pop()!;
    if (!n || typeof n !== 'object') continue;
    for (const key of ['and', 'or'] as const) {
      const items = (n as Record<string, unknown>)[key];
      if (!Array.isArray(items)) continue;
      if (depth > maxDepth) {
        return new ApiProblem('FILTER_TOO_DEEP', `${field} nest and/or deeper than ${maxDepth} levels.`, {
          errors: [{ field, code: 'too_deep', message: `at most ${maxDepth} levels of and/or` }],
        });
      }
      for (const item of items) stack.push({ node: item, depth: depth + 1 });
    }
  }
  return undefined;
}

function resolveNode(walk: Walk, node: FilterNode, path: string): Condition | null {
  if (!node || typeof node !== 'object' || Array.isArray(node)) {
    walk.issues.add('VALIDATION_FAILED', path, 'type', 'must be an object with one of and, or, match');
    return null;
  }
  const keys = Object.keys(node);
  if (keys.length !== 1) {
    walk.issues.add('VALIDATION_FAILED', path, 'shape', 'must hold exactly one of and, or, match');
    return null;
  }
  const key = keys[0]!;
  if (key === 'and' || key === 'or') {
    const items = node[key];
    if (!Array.isArray(items) || items.length === 0) {
      walk.issues.add('VALIDATION_FAILED', `${path}.${key}`, 'length', 'must be a non-empty array of filter nodes');
      return null;
    }
    const resolved: Condition[] = [];
    items.forEach((item, i) => {
      const c = resolveNode(walk, item, `${path}.${key}[${i}]`);
      if (c) resolved.push(c);
    });
    return { kind: key, items: resolved };
  }
  if (key === 'match') {
    walk.leaves += 1;
    return resolveLeaf(walk, node.match as MatchLeaf, `${path}.match`);
  }
  walk.issues.add('VALIDATION_FAILED', `${path}.${key}`, 'unknown_field', 'unknown field');
  return null;
}

function resolveLeaf(walk: Walk, leaf: MatchLeaf, path: string): Condition | null {
  const { issues, entity } = walk;
  if (!leaf || typeof leaf !== 'object' || Array.isArray(leaf)) {
    issues.add('VALIDATION_FAILED', path, 'type', 'must be an object');
    return null;
  }
  const op = normaliseOperator(leaf.operator);
  if (!op) {
    issues.add('VALIDATION_FAILED', `${path}.operator`, 'enum', 'must be one of =, !=, >, <, >=, <=, LIKE, NOT LIKE, IN, inPairs');
    return null;
  }
  const allowed = keysFor(op);
  let ok = true;
  for (const k of Object.keys(leaf)) {
    if (k === 'operator' || allowed.includes(k as keyof MatchLeaf)) continue;
    issues.add('VALIDATION_FAILED', `${path}.${k}`, 'unexpected', `not allowed with operator ${String(leaf.operator)} (takes ${allowed.join(' and ')})`);
    ok = false;
  }
  for (const k of allowed) {
    if (leaf[k] === undefined) {
      issues.add('VALIDATION_FAILED', `${path}.${k}`, 'required', `required with operator ${String(leaf.operator)}`);
      ok = false;
    }
  }
  if (!ok) return null;

  if (op === 'INPAIRS') return resolvePairs(walk, leaf, path);

  const field = resolveFieldName(entity, leaf.field, `${path}.field`, issues, 'filter');
  if (!field) return null;

  if (op === 'IN') {
    const values = leaf.values;
    if (!Array.isArray(values) || values.length === 0) {
      issues.add('VALIDATION_FAILED', `${path}.values`, 'length', 'must be a non-empty array');
      return null;
    }
    const typed: TypedValue[] = [];
    values.forEach((raw, i) => {
      const t = typeValue(field, raw);
      if (t.ok) typed.push(t.value);
      else issues.add('VALIDATION_FAILED', `${path}.values[${i}]`, t.code, `${field.name} ${t.message}`);
    });
    return typed.length === values.length ? { kind: 'in', field, values: typed } : null;
  }

  if (op === 'LIKE' || op === 'NOT LIKE') {
    if (field.kind !== 'string') {
      issues.add('VALIDATION_FAILED', `${path}.operator`, 'operator', `${op} applies to string fields only; ${field.name} is ${field.kind}`);
      return null;
    }
    if (typeof leaf.value !== 'string') {
      issues.add('VALIDATION_FAILED', `${path}.value`, 'type', `${field.name} LIKE pattern must be a string`);
      return null;
    }
    const t = typeValue(field, leaf.value, { likePattern: true });
    if (!t.ok) {
      issues.add('VALIDATION_FAILED', `${path}.value`, t.code, `${field.name} ${t.message}`);
      return null;
    }
    return { kind: 'like', field, negate: op === 'NOT LIKE', pattern: leaf.value };
  }

  if (op !== '=' && op !== '<>' && !ORDERED_KINDS.has(field.kind)) {
    issues.add('VALIDATION_FAILED', `${path}.operator`, 'operator', `${String(leaf.operator).trim()} applies to numbers and dates only; ${field.name} is ${field.kind}`);
    return null;
  }
  const t = typeValue(field, leaf.value);
  if (!t.ok) {
    issues.add('VALIDATION_FAILED', `${path}.value`, t.code, `${field.name} ${t.message}`);
    return null;
  }
  return { kind: 'compare', field, op, value: t.value };
}

function resolvePairs(walk: Walk, leaf: MatchLeaf, path: string): Condition | null {
  const { issues, entity } = walk;
  const names = leaf.fields;
  const pairs = leaf.pairs;
  if (!Array.isArray(names) || names.length === 0) {
    issues.add('VALIDATION_FAILED', `${path}.fields`, 'length', 'must be a non-empty array of field names');
    return null;
  }
  if (!Array.isArray(pairs) || pairs.length === 0) {
    issues.add('VALIDATION_FAILED', `${path}.pairs`, 'length', 'must be a non-empty array of objects');
    return null;
  }
  const fields: FieldDef[] = [];
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (typeof name === 'string' && seen.has(name)) {
      issues.add('VALIDATION_FAILED', `${path}.fields[${i}]`, 'unique', `"${name}" is listed twice`);
      return;
    }
    seen.add(String(name));
    const f = resolveFieldName(entity, name, `${path}.fields[${i}]`, issues, 'filter');
    if (f) fields.push(f);
  });
  if (fields.length !== names.length) return null;

  const tuples: TypedValue[][] = [];
  let ok = true;
  pairs.forEach((pair, i) => {
    const at = `${path}.pairs[${i}]`;
    if (!pair || typeof pair !== 'object' || Array.isArray(pair)) {
      issues.add('VALIDATION_FAILED', at, 'type', 'must be an object with a key for every name in fields');
      ok = false;
      return;
    }
    for (const k of Object.keys(pair)) {
      if (!seen.has(k)) {
        issues.add('VALIDATION_FAILED', `${at}.${k}`, 'unknown_field', `"${k}" is not one of fields (${names.join(', ')})`);
        ok = false;
      }
    }
    const tuple: TypedValue[] = [];
    for (const f of fields) {
      if (!Object.prototype.hasOwnProperty.call(pair, f.name)) {
        issues.add('VALIDATION_FAILED', `${at}.${f.name}`, 'required', `every pair needs a value for ${f.name}`);
        ok = false;
        continue;
      }
      const t = typeValue(f, (pair as Record<string, unknown>)[f.name]);
      if (t.ok) tuple.push(t.value);
      else {
        issues.add('VALIDATION_FAILED', `${at}.${f.name}`, t.code, `${f.name} ${t.message}`);
        ok = false;
      }
    }
    tuples.push(tuple);
  });
  return ok ? { kind: 'inPairs', fields, pairs: tuples } : null;
}
