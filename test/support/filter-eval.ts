/**
 * In-memory evaluation of a filter tree over published records (JSON values), independent of
 * the SQL the engine generates: the oracle of the query tests.
 *   - a comparison with a null field value is false (SQL semantics, also for != and NOT LIKE)
 *   - LIKE: `%` is the only wildcard, case-insensitive for all of Unicode as PostgreSQL's ILIKE
 *     folds it: each code point lower-cased on its own (Unicode's simple mapping: İ is i, a final Σ
 *     is σ), then compared exactly (decision 0463)
 *   - dates compare as YYYY-MM-DD text, numbers as numbers
 */
export type Json = string | number | boolean | null;

export interface Leaf {
  field?: string;
  operator: string;
  value?: Json;
  values?: Json[];
  fields?: string[];
  pairs?: Array<Record<string, Json>>;
}

export interface Node {
  and?: Node[];
  or?: Node[];
  match?: Leaf;
}

function likeRegex(pattern: string): RegExp {
  const body = pattern
    .split('%')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  // No `i` flag: the text is folded first (foldCase), then compared exactly.
  return new RegExp(`^${body}$`, 'su');
}

/** Each code point lower-cased alone (so no context rule applies), İ to i: PostgreSQL's lower(). */
export function foldCase(s: string): string {
  let out = '';
  for (const ch of s) out += ch === '\u0130' ? 'i' : ch.toLowerCase();
  return out;
}

function same(a: Json | undefined, b: Json | undefined): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return false;
  if (typeof a === 'string' && typeof b === 'string' && /^[0-9a-f-]{36}$/i.test(a) && /^[0-9a-f-]{36}$/i.test(b)) return a.toLowerCase() === b.toLowerCase();
  return a === b;
}

export function evaluate(node: Node, record: Record<string, unknown>): boolean {
  if (node.and) return node.and.every((n) => evaluate(n, record));
  if (node.or) return node.or.some((n) => evaluate(n, record));
  const m = node.match!;
  const op = m.operator.trim().replace(/\s+/g, ' ').toUpperCase();
  if (op === 'INPAIRS') {
    return m.pairs!.some((pair) => m.fields!.every((f) => same(record[f] as Json, pair[f])));
  }
  const v = record[m.field!] as Json | undefined;
  if (v === null || v === undefined) return false;
  switch (op) {
    case '=':
      return same(v, m.value);
    case '!=':
    case '<>':
      return !same(v, m.value);
    case '>':
      return (v as number | string) > (m.value as number | string);
    case '<':
      return (v as number | string) < (m.value as number | string);
    case '>=':
      return (v as number | string) >= (m.value as number | string);
    case '<=':
      return (v as number | string) <= (m.value as number | string);
    case 'LIKE':
      return likeRegex(foldCase(String(m.value))).test(foldCase(String(v)));
    case 'NOT LIKE':
      return !likeRegex(foldCase(String(m.value))).test(foldCase(String(v)));
    case 'IN':
      return m.values!.some((x) => same(v, x));
    default:
      throw new Error(`operator ${m.operator}`);
  }
}
