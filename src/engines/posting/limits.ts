import { decimalMaxText, isStorableDate, parseColumnType, DATE_MAX, DATE_MIN } from '../../catalog/bounds';
import { Issues } from '../../errors/issues';
import { Dec } from '../../storage/decimal';
import { addDays } from './dates';
import { fieldOf, shapeOf } from './records/shapes';

/**
 * The storage limits of what a write DERIVES from its request (a journal's totals, quantity x
 * cost, the sum of a document's lines, a due date = a date + the terms days), checked before the
 * value reaches SQL (docs/decisions/0440). The request's own values are bounded by the contract
 * (their `x-column` bounds, src/catalog/bounds.ts schemaKeywords: 400 VALIDATION_FAILED); a value
 * computed from valid ones can still exceed the column that stores it, which SQLite would store
 * anyway (then unreadable: 502) and PostgreSQL refuse without saying which field (400). Here such a
 * value is 400 VALUE_OUT_OF_RANGE naming the request field behind it, on every engine.
 *
 * The limits are the catalog's (generated/catalog.ts sqlType of the published field the value is
 * stored in: `decimal(14, 2)`, `date`), read through src/catalog/bounds.ts: no number here.
 */

const decimalLimits = new Map<string, Dec>();

/** The largest magnitude the column of the published field `field` of `set` stores, exactly. */
export function decimalLimit(set: string, field: string): Dec {
  const key = `${set}/${field}`;
  let limit = decimalLimits.get(key);
  if (!limit) {
    const type = parseColumnType(fieldOf(shapeOf(set), field).sqlType);
    if (type.kind !== 'decimal') throw new Error(`limits: ${set}.${field} is not a decimal column`);
    decimalLimits.set(key, (limit = new Dec(decimalMaxText(type.precision, type.scale))));
  }
  return limit;
}

/** Whether `value` fits the decimal column of `set`.`field` (its magnitude; places are the caller's rounding). */
export function fitsDecimal(set: string, field: string, value: Dec): boolean {
  return value.abs().lessThanOrEqualTo(decimalLimit(set, field));
}

/**
 * The one collector of derived values beyond their columns: every culprit named, one answer,
 * 400 VALUE_OUT_OF_RANGE with errors[] (code `range`).
 */
export class DerivedLimits {
  private readonly issues = new Issues();

  /**
   * `value` (`what`: "the debit total of the journal") is to be stored in `set`.`stored`; when it
   * does not fit, `field` (the request field behind it) is named.
   */
  decimal(field: string, what: string, value: Dec, set: string, stored: string): void {
    if (fitsDecimal(set, stored, value)) return;
    const max = decimalLimit(set, stored);
    this.issues.add('VALUE_OUT_OF_RANGE', field, 'range', `${what} would be ${value.toFixed()}; the accounting database stores at most ${max.toFixed()} (${set} ${stored})`);
  }

  /**
   * `days` after `date`, the date stored in `set`.`stored` (`what`: "the due date"); when it lies
   * outside the dates every engine stores, `field` is named and undefined returned.
   */
  dateAfter(field: string, what: string, date: string, days: number, set: string, stored: string): string | undefined {
    const type = parseColumnType(fieldOf(shapeOf(set), stored).sqlType);
    if (type.kind !== 'date') throw new Error(`limits: ${set}.${stored} is not a date column`);
    const result = addDays(date, days);
    if (result !== undefined && isStorableDate(result)) return result;
    this.issues.add('VALUE_OUT_OF_RANGE', field, 'range', `${what} would be ${date} + ${days} days, past the dates the accounting database stores (${DATE_MIN} to ${DATE_MAX}; ${set} ${stored})`);
    return undefined;
  }

  throwIfAny(): void {
    this.issues.throwIfAny();
  }
}

/** `days` after `date`, stored in `set`.`stored`; 400 VALUE_OUT_OF_RANGE naming `field` when it cannot be stored. */
export function storableDateAfter(field: string, what: string, date: string, days: number, set: string, stored: string): string {
  const limits = new DerivedLimits();
  const result = limits.dateAfter(field, what, date, days, set, stored);
  limits.throwIfAny();
  return result!;
}
