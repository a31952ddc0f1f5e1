import type { EntityDef, FieldDef, FieldKind } from '../catalog/types';
import { ApiProblem } from '../errors/problem';
import { Issues } from '../errors/issues';
import { filterDepthProblem, resolveFilter } from '../engines/query/filters';
import { planQuery, type PlanOptions } from '../engines/query/plan';
import type { Condition, FilterNode, OrderTerm, QueryPlan, QueryRequest } from '../engines/query/types';

/**
 * The service's own lists (POST /webhook-endpoints/query, /webhook-deliveries/query) speak the
 * query language of every other `/query`: `select`, `filters`, `orderBy`, `page`, planned by the
 * query engine (src/engines/query/plan.ts) over a description of the events tables in the
 * catalog's shape, and answered in the read envelope. An integrator needs no second language.
 *
 * What is not the engine's: list-valued fields (an endpoint's `eventTypes`, a delivery's
 * `attemptLog`) can be selected but not filtered or ordered; the shorthand request fields these
 * operations had before (`status`, `endpointId`, `since`, `until`) stay, AND-ed with `filters`;
 * deleted endpoints are never listed; the default order is the operation's own (endpoints oldest
 * first, deliveries newest first). Records are rendered by the events routes as before and cut to
 * `select`.
 */

const field = (name: string, column: string, kind: FieldKind, sqlType: string, nullable = false): FieldDef => ({ name, column, kind, sqlType, nullable });

export interface ListDef {
  /** The published fields, as an entity of the catalog (storage columns of the events tables). */
  entity: EntityDef;
  /** Published list-valued fields: selectable, not filterable or orderable. */
  selectOnly: readonly string[];
  /** Order when the request has no `orderBy`. */
  defaultOrder: readonly OrderTerm[];
}

const base = (entity: string, table: string, schema: string, queryOperationId: string, requestSchema: string, fields: FieldDef[]): EntityDef => ({
  entity,
  schema,
  table,
  tag: 'Events',
  queryOperationId,
  requestSchema,
  keyColumn: 'id',
  fields: Object.fromEntries(fields.map((f) => [f.name, f])),
  children: {},
  changeStamps: {},
  matchFields: [],
  requestExtras: {},
});

/** Webhook endpoints (`whkept`, db/migrations/20261124000010_webhooks.ts). */
export const ENDPOINT_LIST: ListDef = {
  entity: base('webhook-endpoints', 'whkept', 'WebhookEndpointListed', 'queryWebhookEndpoints', 'WebhookEndpointQueryRequest', [
    field('id', 'id', 'uuid', 'uniqueidentifier'),
    field('url', 'url', 'string', 'nvarchar(2048)'),
    field('description', 'description', 'string', 'nvarchar(500)', true),
    field('status', 'state', 'string', 'nvarchar(20)'),
    field('statusReason', 'state_reason', 'string', 'nvarchar(200)', true),
    field('ownerKeyId', 'owner_key_id', 'uuid', 'uniqueidentifier'),
    // Set and cleared together with the previous secret (a rotation).
    field('previousSecretExpiresAt', 'previous_secret_until', 'datetime', 'datetime2', true),
    field('createdAt', 'created_at', 'datetime', 'datetime2'),
    field('updatedAt', 'updated_at', 'datetime', 'datetime2'),
  ]),
  selectOnly: ['eventTypes'],
  defaultOrder: [
    { column: 'created_at', direction: 'asc' },
    { column: 'id', direction: 'asc' },
  ],
};

/** The delivery log (`whkdlv`; the attempts are `whkatt`). */
export const DELIVERY_LIST: ListDef = {
  entity: {
    ...base('webhook-deliveries', 'whkdlv', 'WebhookDeliveryListed', 'queryWebhookDeliveries', 'WebhookDeliveryQueryRequest', [
      field('id', 'id', 'uuid', 'uniqueidentifier'),
      field('endpointId', 'endpoint_id', 'uuid', 'uniqueidentifier'),
      field('eventId', 'event_id', 'string', 'nvarchar(60)'),
      field('eventType', 'event_type', 'string', 'nvarchar(60)'),
      field('status', 'status', 'string', 'nvarchar(20)'),
      field('attempts', 'attempts', 'integer', 'int'),
      field('createdAt', 'created_at', 'datetime', 'datetime2'),
      // Null once the delivery is no longer pending (store.recordAttempt).
      field('nextAttemptAt', 'next_attempt_at', 'datetime', 'datetime2', true),
      field('lastAttemptAt', 'last_attempt_at', 'datetime', 'datetime2', true),
      field('lastStatusCode', 'last_status_code', 'integer', 'int', true),
      field('lastError', 'last_error', 'string', 'nvarchar(500)', true),
    ]),
    // The shorthand fields of the delivery log, each one condition AND-ed with `filters`.
    requestExtras: {
      endpointId: { field: 'endpointId', operator: '=', kind: 'value' },
      status: { field: 'status', operator: '=', kind: 'value' },
      since: { field: 'createdAt', operator: '>=', kind: 'value' },
      until: { field: 'createdAt', operator: '<', kind: 'value' },
    },
  },
  selectOnly: ['attemptLog'],
  defaultOrder: [
    { column: 'created_at', direction: 'desc' },
    { column: 'id', direction: 'asc' },
  ],
};

export interface ListPlan {
  /** The engine's plan: `where` (with the list's own conditions), `order`, page. */
  plan: QueryPlan;
  /** Published fields to answer with, in the order asked; undefined: every field. */
  select: string[] | undefined;
}

/** Fields of BaseQueryRequest these lists do not take (the contract validator refuses them first). */
const NOT_TAKEN = ['children', 'lastUpdated', 'createdSince'];

/**
 * Plans a list request. `extra` is a condition of the operation's own (an endpoint's `status`
 * shorthand, the deleted endpoints left out), AND-ed with the request's.
 */
export function planList(list: ListDef, body: QueryRequest, options: PlanOptions, extra: (issues: Issues) => Condition | null = () => null): ListPlan {
  const { entity, selectOnly } = list;
  const issues = new Issues();
  for (const k of NOT_TAKEN) if (body[k] !== undefined) issues.add('VALIDATION_FAILED', k, 'unknown_field', 'unknown field');
  const select = resolveSelect(list, body.select, issues);
  if (body.filters !== undefined && !filterDepthProblem(body.filters, options.maxFilterDepth)) listFieldsIn(body.filters, 'filters', selectOnly, issues);
  if (Array.isArray(body.orderBy)) {
    body.orderBy.forEach((clause, i) => {
      const name = typeof clause === 'string' ? clause.trim().split(/\s+/)[0] : undefined;
      if (name && selectOnly.includes(name)) issues.add('VALIDATION_FAILED', `orderBy[${i}]`, 'not_orderable', listFieldMessage(name, 'ordered'));
    });
  }
  const own = extra(issues);
  issues.throwIfAny();

  const { select: _select, ...rest } = body;
  void _select;
  const plan = planQuery(entity, rest, options);
  const conditions = [plan.where, own].filter((c): c is Condition => c !== null);
  const where: Condition | null = conditions.length === 0 ? null : conditions.length === 1 ? conditions[0]! : { kind: 'and', items: conditions };
  const ordered = Array.isArray(body.orderBy) && body.orderBy.length > 0;
  return { plan: { ...plan, where, order: ordered ? plan.order : [...list.defaultOrder] }, select };
}

/** A condition on published fields of the list (`status IN (...)` from a shorthand), problems reported at `path`. */
export function listCondition(list: ListDef, node: FilterNode, path: string, issues: Issues): Condition | null {
  const local = new Issues();
  const c = resolveFilter(list.entity, node, local, path);
  if (local.empty) return c;
  try {
    local.throwIfAny();
  } catch (err) {
    for (const e of (err as ApiProblem).errors ?? []) issues.add('VALIDATION_FAILED', path, e.code, e.message ?? 'invalid');
  }
  return null;
}

/** Cuts a rendered record to the selected fields (all when nothing was selected). */
export function project<T extends object>(record: T, select: string[] | undefined): Partial<T> {
  if (!select) return record;
  const out: Record<string, unknown> = {};
  for (const name of select) out[name] = (record as Record<string, unknown>)[name];
  return out as Partial<T>;
}

function resolveSelect(list: ListDef, names: unknown, issues: Issues): string[] | undefined {
  if (names === undefined) return undefined;
  if (!Array.isArray(names)) {
    issues.add('VALIDATION_FAILED', 'select', 'type', 'must be an array of field names');
    return undefined;
  }
  const out: string[] = [];
  names.forEach((name, i) => {
    const known = typeof name === 'string' && (Object.prototype.hasOwnProperty.call(list.entity.fields, name) || list.selectOnly.includes(name));
    if (!known) issues.add('UNKNOWN_FIELD', `select[${i}]`, 'unknown_field', `"${String(name)}" is not a field of ${list.entity.entity}`);
    else if (!out.includes(name)) out.push(name);
  });
  return out;
}

function listFieldMessage(name: string, use: 'filtered' | 'ordered'): string {
  return `"${name}" is a list: it can be selected, not ${use}`;
}

/** Issues for match leaves of `node` that name a list-valued field (the engine would call it unknown). */
function listFieldsIn(node: unknown, path: string, selectOnly: readonly string[], issues: Issues): void {
  if (!node || typeof node !== 'object' || Array.isArray(node)) return;
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if ((key === 'and' || key === 'or') && Array.isArray(value)) value.forEach((item, i) => listFieldsIn(item, `${path}.${key}[${i}]`, selectOnly, issues));
    if (key === 'match' && value && typeof value === 'object') {
      const leaf = value as { field?: unknown; fields?: unknown };
      if (typeof leaf.field === 'string' && selectOnly.includes(leaf.field)) issues.add('VALIDATION_FAILED', `${path}.match.field`, 'not_filterable', listFieldMessage(leaf.field, 'filtered'));
      if (Array.isArray(leaf.fields)) {
        leaf.fields.forEach((f, i) => {
          if (typeof f === 'string' && selectOnly.includes(f)) issues.add('VALIDATION_FAILED', `${path}.match.fields[${i}]`, 'not_filterable', listFieldMessage(f, 'filtered'));
        });
      }
    }
  }
}

/**
 * POST /webhook-endpoints/query: deleted endpoints are never listed; the `status` shorthand (a list
 * of states) is `status IN (...)`.
 */
export function planEndpointList(body: QueryRequest & { status?: unknown }, options: PlanOptions): ListPlan {
  const { status, ...query } = body;
  const statusField = ENDPOINT_LIST.entity.fields.status!;
  return planList(ENDPOINT_LIST, query, options, (issues) => {
    const notDeleted: Condition = { kind: 'compare', field: statusField, op: '<>', value: { kind: 'string', value: 'deleted' } };
    if (status === undefined) return notDeleted;
    const states = Array.isArray(status) ? status : [status];
    const chosen = listCondition(ENDPOINT_LIST, { match: { field: 'status', operator: 'IN', values: states as string[] } }, 'status', issues);
    return chosen ? { kind: 'and', items: [notDeleted, chosen] } : null;
  });
}

/** POST /webhook-deliveries/query: every delivery of the log (kept 30 days); the shorthands are request extras. */
export function planDeliveryList(body: QueryRequest, options: PlanOptions): ListPlan {
  return planList(DELIVERY_LIST, body, options);
}
