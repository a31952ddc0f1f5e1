/**
 * Bad-value requests generated from the contract (generated/openapi.public.yaml, whose JSON twin
 * is the document the validator loads: contractDocument) for every operation: a valid base body, then one slot of it (a property at
 * any depth, present or not, or the body itself) replaced by a value outside that slot's schema,
 * or, for queries, a filter whose value falls outside the column of the field it compares
 * against. Used by test/http/bad-values-property.test.ts (bounded) and bench/fuzz.ts (long run).
 *
 * Each case says whether it must fail (`mustFail`: the value breaks the schema or the column
 * rule) or may legitimately succeed (a control character is storable text).
 */
import fc from 'fast-check';
import { OPERATIONS } from '../../generated/operations';
import { CATALOG } from '../../generated/catalog';
import type { EntityDef, FieldDef, OperationInfo } from '../../src/catalog/types';
import { LIKE_PATTERN_MAX_CHARACTERS, parseColumnType } from '../../src/catalog/bounds';
import { contractDocument } from '../../src/http/openapi-document';
import { apInvoice, journal } from './posting-fixture';

type Json = Record<string, any>;

// The JSON twin, as the validator loads it (parsing the YAML cost half a second of each file using this).
const DOC: Json = contractDocument();
const SCHEMAS: Json = DOC.components.schemas;

/** Tables a posting writes to: their row counts must not move when a write is refused. */
export const POSTING_TABLES = ['lgrtrn', 'lgtnln', 'acpinv', 'apivln', 'jobcst', 'lgrbal'] as const;

export const WRITE_OPERATIONS = new Set(['postLedgerTransaction', 'postApInvoice']);

/** A schema with $ref followed (siblings kept) and allOf merged, enough for request bodies. */
export function deref(schema: Json | undefined): Json {
  let s: Json = schema ?? {};
  for (let i = 0; i < 20 && s.$ref; i += 1) {
    const { $ref, ...rest } = s;
    s = { ...SCHEMAS[String($ref).replace('#/components/schemas/', '')], ...rest };
  }
  if (Array.isArray(s.allOf)) {
    const merged: Json = { ...s, allOf: undefined };
    for (const part of s.allOf) {
      const p = deref(part);
      merged.properties = { ...(merged.properties ?? {}), ...(p.properties ?? {}) };
      if (p.pattern && !merged.pattern) merged.extraPattern = p.pattern;
    }
    s = merged;
  }
  return s;
}

function requestSchema(op: OperationInfo): Json | undefined {
  const content = DOC.paths[op.path]?.[op.method.toLowerCase()]?.requestBody?.content?.['application/json'];
  return content ? deref(content.schema) : undefined;
}

function types(schema: Json): string[] {
  if (Array.isArray(schema.type)) return schema.type;
  if (schema.type) return [schema.type];
  if (schema.enum) return [...new Set(schema.enum.map((v: unknown) => (v === null ? 'null' : typeof v)))] as string[];
  return [];
}

export interface BadValue {
  value: unknown;
  /** The value is outside the schema (or the column): the answer must be 4xx. */
  mustFail: boolean;
  label: string;
  /** A filter value for this operator rather than `=` (a LIKE pattern). */
  operator?: string;
}

const NUMBERS: Array<[number, string]> = [
  [2 ** 31, '2^31'],
  [-(2 ** 31) - 1, '-2^31-1'],
  [2 ** 53, '2^53'],
  [1e308, '1e308'],
  [-1e308, '-1e308'],
];
const SAMPLES_BY_TYPE: Record<string, unknown> = { string: 'x', number: 1.5, integer: 7, boolean: true, null: null, object: { a: 1 }, array: [1] };

/** Values outside `schema` (and a few that probe the engines without breaking the schema). */
export function badValuesFor(raw: Json): BadValue[] {
  const schema = deref(raw);
  const accepted = types(schema);
  const out: BadValue[] = [];
  if (accepted.length > 0) {
    for (const [type, value] of Object.entries(SAMPLES_BY_TYPE)) {
      const takes = accepted.includes(type) || (type === 'integer' && accepted.includes('number'));
      if (!takes) out.push({ value, mustFail: true, label: `wrong type ${type}` });
    }
  }
  if (accepted.includes('integer') || accepted.includes('number')) {
    for (const [n, label] of NUMBERS) {
      const outside = (typeof schema.maximum === 'number' && n > schema.maximum) || (typeof schema.minimum === 'number' && n < schema.minimum);
      if (outside) out.push({ value: n, mustFail: true, label });
      else out.push({ value: n, mustFail: false, label: `${label} (in schema)` });
    }
    out.push({ value: 1e-308, mustFail: accepted.includes('integer') && !accepted.includes('number'), label: '1e-308' });
  }
  if (accepted.includes('string')) {
    const text = schema.pattern === '^[^\\u0000\\uD800-\\uDFFF]*$' || schema.extraPattern === '^[^\\u0000\\uD800-\\uDFFF]*$';
    const patterned = text || typeof schema.pattern === 'string';
    out.push({ value: 'a\u0000b', mustFail: patterned, label: 'NUL' });
    out.push({ value: '\ud800x', mustFail: text, label: 'lone high surrogate' });
    out.push({ value: 'x\udc00', mustFail: text, label: 'lone low surrogate' });
    out.push({ value: 'a\u0001\u001fb', mustFail: false, label: 'control characters' });
    if (typeof schema.maxLength === 'number') out.push({ value: 'x'.repeat(schema.maxLength + 1), mustFail: true, label: `maxLength+1 (${schema.maxLength + 1})` });
    else out.push({ value: 'x'.repeat(20_000), mustFail: false, label: 'long string' });
    if (schema.format === 'date') {
      for (const d of ['2026-02-30', '0000-01-01', '10000-01-01', '2026-13-01']) out.push({ value: d, mustFail: true, label: `date ${d}` });
    }
    if (schema.format === 'date-time') {
      for (const d of ['2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '9999-12-31T23:00:00-05:00']) out.push({ value: d, mustFail: true, label: `date-time ${d}` });
    }
  }
  return out;
}

export interface Slot {
  path: Array<string | number>;
  schema: Json;
}

/** Every place of `body` a value can be put, with its schema (present properties recursed into). */
export function slotsOf(schema: Json, body: unknown, at: Array<string | number> = [], out: Slot[] = []): Slot[] {
  const s = deref(schema);
  out.push({ path: at, schema: s });
  if (at.length > 6) return out;
  if (s.properties && body && typeof body === 'object' && !Array.isArray(body)) {
    for (const [name, sub] of Object.entries<Json>(s.properties)) {
      if (name === 'filters') {
        out.push({ path: [...at, name], schema: { type: 'object' } });
        continue;
      }
      const value = (body as Json)[name];
      if (value === undefined) out.push({ path: [...at, name], schema: deref(sub) });
      else slotsOf(sub, value, [...at, name], out);
    }
  }
  if (s.items && Array.isArray(body)) body.slice(0, 2).forEach((item, i) => slotsOf(s.items, item, [...at, i], out));
  return out;
}

export function setAt(body: unknown, at: Array<string | number>, value: unknown): unknown {
  if (at.length === 0) return value;
  const copy: any = structuredClone(body);
  let node = copy;
  for (const key of at.slice(0, -1)) node = node[key];
  node[at[at.length - 1]!] = value;
  return copy;
}

let serial = 0;
const runTag = Math.random().toString(36).slice(2, 7).toUpperCase();

/** A valid body of `op` (fresh document numbers for writes). */
export function baseBody(op: OperationInfo): unknown {
  if (op.operationId === 'postLedgerTransaction') return journal(`BV${runTag}${(serial += 1)}`);
  if (op.operationId === 'postApInvoice') return apInvoice(`BV${runTag}${(serial += 1)}`);
  const schema = requestSchema(op);
  if (!schema) return undefined;
  if (op.path.endsWith('/query')) return { page: { pageNumber: 1, pageSize: 5 } };
  return structuredClone(schema.example ?? {});
}

/** Bad values for a filter comparing against `field`, by its column type. */
export function badFilterValues(field: FieldDef): BadValue[] {
  const column = parseColumnType(field.sqlType);
  const must = (value: unknown, label: string): BadValue => ({ value, mustFail: true, label });
  switch (column.kind) {
    case 'integer':
      return [must(column.max + 1, `${column.sql} max+1`), must(column.min - 1, `${column.sql} min-1`), must(2 ** 53, '2^53'), must(1e308, '1e308'), must(1.5, '1.5')];
    case 'decimal':
      return [must(1e308, '1e308'), must(-1e308, '-1e308'), must(10 ** (column.precision - column.scale), `10^${column.precision - column.scale}`), must(1e-308, '1e-308')];
    case 'string':
      return [
        must('a\u0000b', 'NUL'),
        must('\ud800', 'lone surrogate'),
        ...(column.maxLength !== undefined ? [must('x'.repeat(column.maxLength + 1), `${column.sql} +1`)] : []),
        { ...must(`%${'x'.repeat(LIKE_PATTERN_MAX_CHARACTERS)}`, `LIKE pattern of ${LIKE_PATTERN_MAX_CHARACTERS + 1} characters`), operator: 'LIKE' },
      ];
    case 'date':
      return ['2026-02-30', '0000-01-01', '10000-01-01'].map((d) => must(d, `date ${d}`));
    case 'datetime':
      return ['2026-02-30T00:00:00Z', '0000-01-01', '9999-12-31T23:00:00-05:00'].map((d) => must(d, `datetime ${d}`));
    case 'uuid':
      return [must('not-a-uuid\u0000', 'bad uuid')];
    case 'boolean':
      return [must(2 ** 31, 'number for boolean')];
  }
}

export interface Case {
  op: OperationInfo;
  /** Query string (dry runs). */
  query: string;
  /** Idempotency-Key header, when the case sends one. */
  idempotencyKey?: string;
  /** The raw JSON text sent (lone surrogates travel as \ud800 escapes). */
  body: string;
  mustFail: boolean;
  /** When set, the problem must name a field starting with it (errors[].field). */
  field?: string;
  label: string;
}

const QUERY_ENTITY = new Map<string, EntityDef>(Object.values(CATALOG).map((e) => [e.queryOperationId, e]));

function filterCase(entity: EntityDef, field: FieldDef, bad: BadValue, shape: number): { body: Json; field: string } {
  const good = (f: FieldDef) => (f.kind === 'string' ? 'a' : f.kind === 'date' ? '2026-01-01' : f.kind === 'datetime' ? '2026-01-01' : f.kind === 'boolean' ? true : f.kind === 'uuid' ? '00000000-0000-4000-8000-000000000000' : 1);
  const operator = bad.operator ?? '=';
  // An operator of its own (LIKE) has no list form: the two shapes with a single value.
  const s = shape % 4;
  switch (bad.operator === undefined ? s : s === 1 ? 0 : s === 2 ? 3 : s) {
    case 0:
      return { body: { filters: { match: { field: field.name, operator, value: bad.value } } }, field: 'filters.match.value' };
    case 1:
      return { body: { filters: { match: { field: field.name, operator: 'IN', values: [good(field), bad.value] } } }, field: 'filters.match.values[1]' };
    case 2:
      return { body: { filters: { match: { fields: [field.name], operator: 'inPairs', pairs: [{ [field.name]: good(field) }, { [field.name]: bad.value }] } } }, field: `filters.match.pairs[1].${field.name}` };
    default:
      return { body: { filters: { and: [{ match: { field: 'recordNumber', operator: '>', value: 0 } }, { match: { field: field.name, operator, value: bad.value } }] } }, field: 'filters.and[1].match.value' };
  }
}

/** One case of `op`, chosen by the integers the property supplies. */
export function buildCase(op: OperationInfo, pick: { slot: number; value: number; variant: number; field: number }): Case {
  const entity = QUERY_ENTITY.get(op.operationId);
  const write = WRITE_OPERATIONS.has(op.operationId);
  const variant = write ? pick.variant % 3 : 0; // 0 dry run, 1 real without key, 2 real with key
  const query = variant === 0 && write ? '?dryRun=true' : '';
  const idempotencyKey = variant === 2 ? `bv-${runTag}-${(serial += 1)}` : undefined;
  const base = baseBody(op);
  if (entity && pick.variant % 2 === 0) {
    const fields = Object.values(entity.fields);
    const field = fields[pick.field % fields.length]!;
    const bads = badFilterValues(field);
    const bad = bads[pick.value % bads.length]!;
    const { body, field: at } = filterCase(entity, field, bad, pick.slot);
    return { op, query, body: JSON.stringify(body), mustFail: true, field: at, label: `${op.operationId} filter ${field.name} ${bad.label} shape ${pick.slot % 4}` };
  }
  const schema = requestSchema(op) ?? {};
  const slots = slotsOf(schema, base).filter((s) => badValuesFor(s.schema).length > 0);
  const slot = slots[pick.slot % slots.length]!;
  const bads = badValuesFor(slot.schema);
  const bad = bads[pick.value % bads.length]!;
  const body = setAt(base, slot.path, bad.value);
  const named = slot.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('').replace(/^\./, '');
  return {
    op,
    query,
    ...(idempotencyKey ? { idempotencyKey } : {}),
    body: JSON.stringify(body),
    mustFail: bad.mustFail,
    label: `${op.operationId}${query}${idempotencyKey ? ' (key)' : ''} ${named || '(body)'} = ${bad.label}`,
  };
}

/** Operations exercised: every operation with a JSON body. */
export const BODY_OPERATIONS: OperationInfo[] = OPERATIONS.filter((op) => requestSchema(op) !== undefined);

const WRITES = BODY_OPERATIONS.filter((op) => WRITE_OPERATIONS.has(op.operationId));
const OTHERS = BODY_OPERATIONS.filter((op) => !WRITE_OPERATIONS.has(op.operationId));

/** Any case; writes get 40% of them (they are 2 of ~90 operations but hold the money). */
export const caseArbitrary = fc
  .record({
    op: fc.oneof({ arbitrary: fc.constantFrom(...WRITES), weight: 2 }, { arbitrary: fc.constantFrom(...OTHERS), weight: 3 }),
    slot: fc.nat(),
    value: fc.nat(),
    variant: fc.nat(),
    field: fc.nat(),
  })
  .map(({ op, ...pick }) => buildCase(op, pick));
