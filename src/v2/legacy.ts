import type { RequestHandler, Response } from 'express';
import { ApiProblem, type FieldError } from '../errors/problem';

/**
 * The legacy v2 bodies (spec, Versioning 3: "business failures are HTTP errors (no responseType);
 * one problem body instead of mixed bodies" describes what v2 did):
 *   success              200 { responseType: "Success", ... }
 *   business failure     200 { responseType: "Error", message, errorCode, correlationId }
 *   anything else        its HTTP status, { message, errorCode, correlationId, errors? }
 * errorCode is the v3 registry code, so one table (docs/errors.md) serves both surfaces.
 */

/**
 * Statuses that are business outcomes, answered 200 in v2: 404 (v2 had no 404: unknown entity or
 * record), 409 (conflicts: transaction number, lock held by another) and 422 (business rules:
 * closed period, unbalanced journal). docs/decisions/0028-the-frozen-v2-surface-and-the-migration-comparison.md.
 */
const BUSINESS_STATUSES = new Set([404, 409, 422]);

/** RFC 9745: deprecated since 2026-11-01T00:00:00Z, when v3 went out beside it. */
export const DEPRECATION = '@1793491200';
export const LINK = '</openapi.yaml>; rel="successor-version"; type="application/yaml", </v2/openapi.yaml>; rel="service-desc"; type="application/yaml"';
/**
 * No Sunset (RFC 8594): the spec says both "never deleted" and "removal in December 2026", and a
 * Sunset date is a promise clients act on. It is sent only once an operator has fixed the date.
 */
export const SUNSET: string | undefined = undefined;

export const deprecationHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader('Deprecation', DEPRECATION);
  res.setHeader('Link', LINK);
  if (SUNSET) res.setHeader('Sunset', SUNSET);
  next();
};

/** v3 field paths in problems -> the v2 field the client sent. */
const FIELD_BACK: Array<[RegExp, string]> = [
  [/^select(?=$|\[)/, 'selectFields'],
  [/^filters(?=$|[.[])/, 'filter'],
  [/^children(?=$|\[)/, 'withChildren'],
  [/^page\.pageSize$/, 'pageSize'],
  [/^page\.pageNumber$/, 'offset'],
];

export function v2FieldName(field: string): string {
  for (const [re, v2] of FIELD_BACK) if (re.test(field)) return field.replace(re, v2);
  return field;
}

export interface LegacyFailure {
  status: number;
  code: string;
  detail: string;
  errors?: FieldError[];
  headers?: Record<string, string>;
}

export function failureOf(problem: ApiProblem): LegacyFailure {
  return { status: problem.status, code: problem.code, detail: problem.detail, ...(problem.errors ? { errors: problem.errors } : {}), headers: problem.headers };
}

export function sendLegacyFailure(res: Response, failure: LegacyFailure): void {
  const correlationId = String(res.getHeader('X-Correlation-Id') ?? res.locals.correlationId ?? '');
  for (const [name, value] of Object.entries(failure.headers ?? {})) res.setHeader(name, value);
  res.setHeader('X-Error-Code', failure.code);
  res.setHeader('X-Correlation-Id', correlationId);
  res.locals.errorCode = failure.code;
  const message = failure.detail;
  if (BUSINESS_STATUSES.has(failure.status)) {
    res.status(200).json({ responseType: 'Error', message, errorCode: failure.code, correlationId });
    return;
  }
  const errors = failure.errors?.map((e) => ({ ...e, field: v2FieldName(e.field) }));
  res.status(failure.status).json({ message, errorCode: failure.code, correlationId, ...(errors ? { errors } : {}) });
}
