import type { FieldError } from '../errors/problem';

/** Most entries reported in errors[] (the first ones in document order). */
export const MAX_FIELD_ERRORS = 100;

/** express-openapi-validator's error entry. */
interface ValidatorError {
  path?: string;
  message?: string;
  errorCode?: string;
}

const CODE_BY_KEYWORD: Record<string, string> = {
  additionalProperties: 'unknown_field',
  unevaluatedProperties: 'unknown_field',
  required: 'required',
  type: 'type',
  format: 'format',
  pattern: 'pattern',
  enum: 'enum',
  const: 'enum',
  minimum: 'range',
  maximum: 'range',
  exclusiveMinimum: 'range',
  exclusiveMaximum: 'range',
  minLength: 'length',
  maxLength: 'length',
  minItems: 'length',
  maxItems: 'length',
  minProperties: 'shape',
  maxProperties: 'shape',
  uniqueItems: 'unique',
};

/** `/body/lines/2/debitAmount` -> `lines[2].debitAmount`; `/query/dryRun` -> `query.dryRun`. */
export function toJsonPath(pointer: string): string {
  const parts = pointer.split('/').filter((p) => p !== '').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const where = parts[0];
  const rest = where === 'body' ? parts.slice(1) : parts;
  let out = '';
  for (const part of rest) {
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out === '' ? '(body)' : out;
}

/**
 * One entry per real culprit. Alternatives of oneOf/anyOf produce an error per branch that
 * did not apply; those, and the summary "must match ..." entries, are noise.
 */
export function toFieldErrors(errors: ValidatorError[]): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    const keyword = (e.errorCode ?? '').split('.')[0] ?? '';
    if (keyword === 'oneOf' || keyword === 'anyOf' || keyword === 'if' || keyword === 'not') continue;
    const field = toJsonPath(e.path ?? '');
    const code = CODE_BY_KEYWORD[keyword] ?? 'invalid';
    const key = `${field}|${code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field, code, message: code === 'unknown_field' ? 'unknown field' : (e.message ?? 'invalid') });
  }
  // When an unknown field is among the errors, the type/shape errors of the same object are its echoes.
  const unknownParents = new Set(out.filter((e) => e.code === 'unknown_field').map((e) => parentOf(e.field)));
  const culprits = out.filter((e) => e.code === 'unknown_field' || !(e.code === 'shape' && unknownParents.has(e.field)));
  // A body with thousands of bad values would otherwise answer with thousands of entries.
  return culprits.slice(0, MAX_FIELD_ERRORS);
}

function parentOf(path: string): string {
  const i = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
  return i <= 0 ? '(body)' : path.slice(0, i);
}
