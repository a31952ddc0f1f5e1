/**
 * Employee personal data (the spec, Payroll: "pay rates, salary, birth date and contact details"),
 * as published field names per entity. This list is the one place that says what is PII: a key
 * created with scopes but without `pii` reads the entity through `withoutPii`, which removes these
 * fields from reads and matches, and the query and match engines answer 400 PII_FIELD_WITHHELD
 * when such a key names one in select, orderBy, filters or matchFields (`withheldIssue`).
 */
import type { EntityDef } from './types';
import type { Issues } from '../errors/issues';

export const PII_FIELDS: Readonly<Record<string, readonly string[]>> = {
  employees: ['address1', 'city', 'state', 'postalCode', 'phone', 'email', 'birthDate', 'payRate', 'salary'],
};

const cache = new WeakMap<EntityDef, EntityDef>();

/** The entity as a key without `pii` sees it (the same object when the entity has no PII). */
export function withoutPii(entity: EntityDef): EntityDef {
  const pii = PII_FIELDS[entity.entity];
  if (!pii || pii.length === 0) return entity;
  let view = cache.get(entity);
  if (!view) {
    const fields = Object.fromEntries(Object.entries(entity.fields).filter(([name]) => !pii.includes(name)));
    const requestExtras = Object.fromEntries(Object.entries(entity.requestExtras).filter(([, extra]) => !pii.includes(extra.field)));
    view = { ...entity, fields, requestExtras, matchFields: entity.matchFields.filter((f) => !pii.includes(f)), withheld: pii };
    cache.set(entity, view);
  }
  return view;
}

/** Adds PII_FIELD_WITHHELD and answers true when `name` is a field withheld from this view. */
export function withheldIssue(entity: EntityDef, name: unknown, path: string, issues: Issues): boolean {
  if (typeof name !== 'string' || !entity.withheld?.includes(name)) return false;
  issues.add('PII_FIELD_WITHHELD', path, 'pii_scope', `"${name}" is employee personal data; this API key was created without the pii scope`);
  return true;
}
