import type { RequestHandler } from 'express';
import { ApiProblem } from '../errors/problem';

/**
 * The v2 request fields and what replaced them in v3 (spec, Versioning 3). The one place that
 * knows v2 names: the v2 adapter translates with it (src/v2/translate.ts) and v3 refuses them with
 * it (rejectV2Fields below, mounted on /api/v3 by src/app.ts).
 */
export const V2_FIELDS = {
  withChildren: 'children',
  offset: 'page.pageNumber',
  filter: 'filters',
  selectFields: 'select',
} as const satisfies Record<string, string>;

export type V2Field = keyof typeof V2_FIELDS;

/** 400 V2_FIELD_REJECTED naming the v3 replacement of every v2 field in a v3 body, or nothing. */
export function v2FieldProblem(body: unknown): ApiProblem | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const found = Object.keys(body).filter((k): k is V2Field => Object.prototype.hasOwnProperty.call(V2_FIELDS, k));
  if (found.length === 0) return undefined;
  const detail = found.map((k) => `${k} is a v2 field; use ${V2_FIELDS[k]} instead`).join('; ');
  return new ApiProblem('V2_FIELD_REJECTED', `${detail}.`, {
    errors: found.map((k) => ({ field: k, code: 'v2_field', message: `use ${V2_FIELDS[k]}` })),
  });
}

const READ_ROUTE = /^\/[^/]+\/(query|match)\/?$/;

/**
 * v2 request fields (withChildren, offset, filter, selectFields) on a v3 read answer 400
 * V2_FIELD_REJECTED naming the v3 replacement. Mounted before the contract validator, whose
 * generic unknown-field error would otherwise answer first. Path relative to /api/v3.
 */
export const rejectV2Fields: RequestHandler = (req, _res, next) => {
  if (req.method !== 'POST' || !READ_ROUTE.test(req.path)) return next();
  const problem = v2FieldProblem(req.body);
  next(problem);
};
