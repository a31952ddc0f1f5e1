/**
 * POST /events/query: the request body becomes a plan. The query language is every other
 * /query's (src/engines/query): `filters` resolved against the event log's published fields
 * (the same operators, value checks and culprit paths), `select` and `page.pageSize` with the same
 * rules; what is particular to the feed is `after` (a cursor) and `waitSeconds` (long polling).
 */
import type { EntityDef, FieldDef, FieldKind } from '../../catalog/types';
import { ApiProblem } from '../../errors/problem';
import { Issues } from '../../errors/issues';
import { filterDepthProblem, resolveFilter } from '../../engines/query/filters';
import { MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE } from '../../engines/query/plan';
import type { Condition, FilterNode } from '../../engines/query/types';
import { EVENT_TYPES } from '../kinds';
import { decodeCursor, type DecodedCursor } from './cursor';

/** The longest a request may wait for an event (long polling). */
export const MAX_WAIT_SECONDS = 30;

const field = (name: string, column: string, kind: FieldKind, sqlType: string): FieldDef => ({ name, column, kind, nullable: false, sqlType });

/**
 * The event log as the query language sees it: the fields `filters` may name, mapped to the
 * columns of `evtlog` (the document's `data.entity` is filtered as `entity`, and so on).
 */
export const EVENT_LOG: EntityDef = {
  entity: 'events',
  schema: 'ChangeEvent',
  table: 'evtlog',
  tag: 'Events',
  queryOperationId: 'queryEvents',
  requestSchema: 'EventQueryRequest',
  keyColumn: 'seq',
  fields: {
    id: field('id', 'event_id', 'string', 'nvarchar(60)'),
    type: field('type', 'event_type', 'string', 'nvarchar(60)'),
    entity: field('entity', 'entity', 'string', 'nvarchar(40)'),
    source: field('source', 'source', 'string', 'nvarchar(30)'),
    changedBy: field('changedBy', 'changed_by', 'string', 'nvarchar(100)'),
    changedAt: field('changedAt', 'changed_at', 'datetime', 'datetime2'),
    timestamp: field('timestamp', 'detected_at', 'datetime', 'datetime2'),
  },
  children: {},
  changeStamps: {},
  matchFields: [],
  requestExtras: {},
};

/** Names `select` accepts: the document's fields, and those of `data` as dotted paths. */
export const SELECTABLE = ['id', 'type', 'timestamp', 'data', 'data.entity', 'data.source', 'data.changedAt', 'data.changedBy', 'data.record', 'data.unreadableFields'] as const;
export type Selectable = (typeof SELECTABLE)[number];

export interface EventQueryBody {
  after?: string;
  select?: string[];
  filters?: FilterNode;
  page?: { pageSize?: number };
  waitSeconds?: number;
}

export interface EventQueryPlan {
  /** Undefined: from the oldest event kept. */
  cursor: DecodedCursor | undefined;
  /** Undefined: the whole document. */
  select: Selectable[] | undefined;
  where: Condition | null;
  pageSize: number;
  waitMs: number;
  /** The event types the filters can return (for the feeds' last read): all when they do not say. */
  types: ReadonlySet<string>;
}

const BODY_FIELDS = new Set(['after', 'select', 'filters', 'page', 'waitSeconds']);

export function planEventQuery(body: EventQueryBody, keyId: string, options: { maxFilterDepth: number }): EventQueryPlan {
  const issues = new Issues();
  for (const k of Object.keys(body)) if (!BODY_FIELDS.has(k)) issues.add('VALIDATION_FAILED', k, 'unknown_field', 'unknown field');

  let select: Selectable[] | undefined;
  if (body.select !== undefined) {
    if (!Array.isArray(body.select)) issues.add('VALIDATION_FAILED', 'select', 'type', 'must be an array of field names');
    else {
      select = [];
      body.select.forEach((name, i) => {
        if (!(SELECTABLE as readonly unknown[]).includes(name)) {
          issues.add('UNKNOWN_FIELD', `select[${i}]`, 'unknown_field', `"${String(name)}" is not a field of an event (fields: ${SELECTABLE.join(', ')})`);
        } else if (!select!.includes(name as Selectable)) select!.push(name as Selectable);
      });
    }
  }

  let where: Condition | null = null;
  if (body.filters !== undefined) {
    const tooDeep = filterDepthProblem(body.filters, options.maxFilterDepth);
    if (tooDeep) throw tooDeep;
    where = resolveFilter(EVENT_LOG, body.filters, issues);
  }

  let pageSize = DEFAULT_PAGE_SIZE;
  const page = body.page as Record<string, unknown> | undefined;
  if (page !== undefined) {
    if (!page || typeof page !== 'object' || Array.isArray(page)) issues.add('VALIDATION_FAILED', 'page', 'type', 'must be an object');
    else {
      for (const k of Object.keys(page)) if (k !== 'pageSize') issues.add('VALIDATION_FAILED', `page.${k}`, 'unknown_field', 'unknown field (the feed pages by cursor: `after`)');
      const size = page.pageSize;
      if (size !== undefined) {
        if (typeof size !== 'number' || !Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) issues.add('VALIDATION_FAILED', 'page.pageSize', 'range', `must be a whole number from 1 to ${MAX_PAGE_SIZE} (never clamped)`);
        else pageSize = size;
      }
    }
  }

  let waitMs = 0;
  if (body.waitSeconds !== undefined) {
    const w = body.waitSeconds;
    if (typeof w !== 'number' || !Number.isInteger(w) || w < 0 || w > MAX_WAIT_SECONDS) issues.add('VALIDATION_FAILED', 'waitSeconds', 'range', `must be a whole number from 0 to ${MAX_WAIT_SECONDS}`);
    else waitMs = w * 1000;
  }

  if (body.after !== undefined && (typeof body.after !== 'string' || body.after === '')) issues.add('VALIDATION_FAILED', 'after', 'type', 'must be a cursor (page.nextCursor of an earlier answer)');
  issues.throwIfAny();

  const cursor = body.after === undefined ? undefined : decodeCursor(keyId, body.after);
  if (cursor?.kind === 'other-key') {
    throw new ApiProblem('EVENT_CURSOR_NOT_FOUND', 'The cursor in `after` was given to another API key; each key reads the feed from its own cursors.', {
      errors: [{ field: 'after', code: 'other_key', message: 'a cursor of another API key' }],
    });
  }
  return { cursor, select, where, pageSize, waitMs, types: typesNamedBy(body.filters) };
}

/**
 * The event types a filter tree can return, when it says so plainly: a top-level match (or a
 * match of a top-level `and`) on `type` or `entity` with `=` or `IN`. Anything else: every type.
 */
export function typesNamedBy(filters: FilterNode | undefined): ReadonlySet<string> {
  let types = new Set(EVENT_TYPES);
  const leaves = filters?.match ? [filters.match] : (filters?.and ?? []).flatMap((n) => (n.match ? [n.match] : []));
  for (const leaf of leaves) {
    const op = String(leaf.operator).trim().toUpperCase();
    const values = op === '=' ? [leaf.value] : op === 'IN' ? (leaf.values ?? []) : undefined;
    if (!values) continue;
    const named = new Set(values.map(String));
    if (leaf.field === 'type') types = new Set([...types].filter((t) => named.has(t)));
    else if (leaf.field === 'entity') types = new Set([...types].filter((t) => named.has(t.split('.')[0]!)));
  }
  return types;
}

/** The document as `select` asks for it (the whole document when it does not). */
export function selectFields(doc: Record<string, any>, select: readonly Selectable[] | undefined): Record<string, unknown> {
  if (!select) return doc;
  const out: Record<string, any> = {};
  for (const name of select) {
    if (name.startsWith('data.')) {
      const key = name.slice(5);
      out.data = { ...(out.data ?? {}), [key]: doc.data?.[key] };
      // A record comes with the names of the fields left out of it (absent when none).
      if (key === 'record' && doc.data?.unreadableFields) out.data.unreadableFields = doc.data.unreadableFields;
    } else out[name] = doc[name];
  }
  // `data` and `data.x` together: the whole of data wins.
  if (select.includes('data')) out.data = doc.data;
  return out;
}
