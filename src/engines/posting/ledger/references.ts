import type { Knex } from 'knex';
import { ApiProblem, type FieldError } from '../../../errors/problem';

/**
 * Looks up referenced records in bulk (one statement per table) and names every culprit of a
 * write by its JSON path: 404 REFERENCE_NOT_FOUND for records that do not exist, 422
 * BUSINESS_RULE_VIOLATED for records that exist but accept no postings.
 */

export interface Ref<T> {
  /** JSON path of the field that refers: `lines[2].ledgerAccount`. */
  field: string;
  value: T;
}

/** Rows of `table` whose `column` is in the referenced values, keyed by that value (as string). */
export async function loadReferenced<T extends string | number>(
  trx: Knex.Transaction,
  table: string,
  column: string,
  refs: ReadonlyArray<Ref<T>>,
  columns: string[],
): Promise<Map<string, Record<string, any>>> {
  const values = [...new Set(refs.map((r) => r.value))];
  const out = new Map<string, Record<string, any>>();
  for (let i = 0; i < values.length; i += 1000) {
    const chunk = values.slice(i, i + 1000);
    const rows = await trx(table).whereIn(column, chunk).select(...new Set([column, ...columns]));
    for (const row of rows) out.set(String(row[column]), row);
  }
  return out;
}

export class ReferenceCheck {
  private readonly missing: FieldError[] = [];
  private readonly missingText: string[] = [];
  private readonly refused: FieldError[] = [];
  private readonly refusedText: string[] = [];

  notFound(field: string, what: string): void {
    this.missing.push({ field, code: 'not_found', message: `${what} does not exist` });
    this.missingText.push(`${field}: ${what} does not exist`);
  }

  notPostable(field: string, why: string, code = 'not_postable'): void {
    this.refused.push({ field, code, message: why });
    this.refusedText.push(`${field}: ${why}`);
  }

  /** Throws 404 for missing references first, then 422 for unusable ones. */
  throwIfAny(): void {
    if (this.missing.length > 0) {
      throw new ApiProblem('REFERENCE_NOT_FOUND', `Referenced records do not exist: ${this.missingText.join('; ')}.`, { errors: this.missing });
    }
    if (this.refused.length > 0) {
      throw new ApiProblem('BUSINESS_RULE_VIOLATED', `The document cannot be posted: ${this.refusedText.join('; ')}.`, { errors: this.refused });
    }
  }
}

export const isTrue = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 't' || v === 'true';
