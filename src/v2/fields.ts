import { ApiProblem } from '../errors/problem';

/**
 * The v2 request fields and what replaced them in v3 (spec, Versioning 3). The one place that
 * knows v2 names: the v2 adapter translates with it (src/v2/translate.ts) and v3 refuses them with
 * it (src/http/middleware/v2-fields.ts).
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
