import type { EntityDef } from '../catalog/types';
import { ApiProblem } from '../errors/problem';
import type { QueryRequest } from '../engines/query/types';
import type { MatchRequest } from '../engines/match/types';
import { DEFAULT_PAGE_SIZE } from '../engines/query/plan';
import type { V2Field } from './fields';

/** Request fields v2 reads; anything else is ignored (and logged), as v2 always did. */
const V2_QUERY_FIELDS = new Set<string>(['selectFields', 'withChildren', 'filter', 'orderBy', 'offset', 'pageSize'] satisfies Array<V2Field | 'orderBy' | 'pageSize'>);
const V2_MATCH_FIELDS = new Set<string>(['matchString', 'matchFields', 'selectFields', 'maxDistance', 'filter']);

export interface V2Query {
  request: QueryRequest;
  /** Rows to skip (v2 `offset`), applied to the plan in place of the page number. */
  offset: number;
  ignored: string[];
}

function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new ApiProblem('VALIDATION_FAILED', 'The body must be a JSON object.', { errors: [{ field: 'body', code: 'type', message: 'must be an object' }] });
  return body as Record<string, unknown>;
}

/** v2 query body -> the v3 query request of the same read (names per src/v2/fields.ts). */
export function translateQuery(entity: EntityDef, raw: unknown): V2Query {
  const body = objectBody(raw);
  const request: QueryRequest = {};
  if (body.selectFields !== undefined) request.select = body.selectFields as string[];
  if (body.withChildren === true) request.children = Object.keys(entity.children);
  if (body.filter !== undefined) request.filters = body.filter as QueryRequest['filters'];
  if (body.orderBy !== undefined) request.orderBy = body.orderBy as string[];
  const pageSize = body.pageSize === undefined ? DEFAULT_PAGE_SIZE : body.pageSize;
  request.page = { pageSize: pageSize as number };
  const offset = body.offset === undefined ? 0 : body.offset;
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
    throw new ApiProblem('VALIDATION_FAILED', 'offset: must be a whole number from 0.', { errors: [{ field: 'offset', code: 'range', message: 'must be a whole number from 0' }] });
  }
  return { request, offset, ignored: Object.keys(body).filter((k) => !V2_QUERY_FIELDS.has(k)) };
}

export function translateMatch(raw: unknown): { request: MatchRequest; ignored: string[] } {
  const body = objectBody(raw);
  const request = {
    matchString: body.matchString,
    matchFields: body.matchFields,
    select: body.selectFields,
    maxDistance: body.maxDistance,
    ...(body.filter !== undefined ? { filters: body.filter } : {}),
  } as MatchRequest;
  return { request, ignored: Object.keys(body).filter((k) => !V2_MATCH_FIELDS.has(k)) };
}
