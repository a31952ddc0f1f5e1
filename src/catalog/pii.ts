/**
 * Employee personal data (the spec, Payroll: "pay rates, salary, birth date and contact details"),
 * as published field names per entity: the employee's own fields, and one person's pay wherever
 * else it is held (payroll records and their timecard lines, paychecks, quarterly earnings, daily
 * payroll lines, benefits and deductions per employee; docs/decisions/0455-pay-outside-employees-is-pii.md
 * says field by field why, and why job costs are not in it). A child collection's field is named
 * `collection.field` (`lines.payRate`). This list is the one place that says what is PII: a key
 * created with scopes but without `pii` reads the entity through `withoutPii`, which removes these
 * fields (child fields included) from reads and matches, and the query and match engines answer
 * 400 PII_FIELD_WITHHELD when such a key names one in select, orderBy, filters or matchFields
 * (`withheldIssue`).
 */
import type { EntityDef, FieldDef } from './types';
import type { Issues } from '../errors/issues';

export const PII_FIELDS: Readonly<Record<string, readonly string[]>> = {
  employees: ['address1', 'city', 'state', 'postalCode', 'phone', 'email', 'birthDate', 'payRate', 'salary'],
  'payroll-records': ['grossPay', 'deductions', 'netPay', 'lines.payRate', 'lines.amount'],
  paychecks: ['grossPay', 'totalDeductions', 'netPay', 'lines.rate', 'lines.amount', 'lines.yearToDate'],
  'employee-earnings': ['grossPay', 'federalWithholding', 'stateWithholding', 'socialSecurity', 'medicare', 'netPay'],
  'daily-payrolls': ['lines.payRate'],
  benefits: ['rate', 'maximumAmount', 'yearToDate'],
  'payroll-deductions': ['amount', 'rate', 'maximumAmount', 'yearToDate'],
};

const cache = new WeakMap<EntityDef, EntityDef>();

function keep(fields: Record<string, FieldDef>, withheld: readonly string[], prefix: string): Record<string, FieldDef> {
  return Object.fromEntries(Object.entries(fields).filter(([name]) => !withheld.includes(prefix + name)));
}

/** The entity as a key without `pii` sees it (the same object when the entity has no PII). */
export function withoutPii(entity: EntityDef): EntityDef {
  const pii = PII_FIELDS[entity.entity];
  if (!pii || pii.length === 0) return entity;
  let view = cache.get(entity);
  if (!view) {
    const fields = keep(entity.fields, pii, '');
    const children = Object.fromEntries(
      Object.entries(entity.children).map(([name, child]) => {
        const childFields = keep(child.fields, pii, `${name}.`);
        return [name, Object.keys(childFields).length === Object.keys(child.fields).length ? child : { ...child, fields: childFields }];
      }),
    );
    const requestExtras = Object.fromEntries(Object.entries(entity.requestExtras).filter(([, extra]) => !pii.includes(extra.field)));
    view = { ...entity, fields, children, requestExtras, matchFields: entity.matchFields.filter((f) => !pii.includes(f)), withheld: pii };
    cache.set(entity, view);
  }
  return view;
}

/** Adds PII_FIELD_WITHHELD and answers true when `name` (a field, `collection.field`) is withheld from this view. */
export function withheldIssue(entity: EntityDef, name: unknown, path: string, issues: Issues): boolean {
  if (typeof name !== 'string' || !entity.withheld?.includes(name)) return false;
  issues.add('PII_FIELD_WITHHELD', path, 'pii_scope', `"${name}" is employee personal data; this API key was created without the pii scope`);
  return true;
}
