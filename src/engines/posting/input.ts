import { Issues } from '../../errors/issues';
import { Dec, decFromJson } from '../../storage/decimal';

/**
 * Checks of a write body that need no database, run before dispatch (their 400 does not
 * consume an Idempotency-Key). The contract validator has already checked types, required
 * fields, ranges and unknown fields; what JSON Schema cannot say exactly is checked here:
 * decimal places of exact amounts, and uniqueness of line numbers.
 */
export class InputErrors {
  // The one field-error collector (src/errors/issues.ts): every culprit, one 400 VALIDATION_FAILED.
  private readonly issues = new Issues();

  add(field: string, code: string, message: string): void {
    this.issues.add('VALIDATION_FAILED', field, code, message);
  }

  throwIfAny(): void {
    this.issues.throwIfAny();
  }
}

/** An exact decimal with at most `places` decimal places, or undefined (error recorded). */
export function exactDecimal(raw: unknown, field: string, places: number, errors: InputErrors): Dec | undefined {
  if (raw === undefined || raw === null) return undefined;
  let value: Dec;
  try {
    value = decFromJson(raw as number | string);
  } catch {
    errors.add(field, 'type', 'must be a number');
    return undefined;
  }
  if (!value.isFinite()) {
    errors.add(field, 'type', 'must be a finite number');
    return undefined;
  }
  if (value.decimalPlaces() > places) {
    errors.add(field, 'scale', `must have at most ${places} decimal places (got ${value.toFixed()})`);
    return undefined;
  }
  return value;
}

export function uniqueLineNumbers(lines: ReadonlyArray<{ lineNumber: number }>, errors: InputErrors, path = 'lines'): void {
  const seen = new Map<number, number>();
  lines.forEach((line, i) => {
    const first = seen.get(line.lineNumber);
    if (first !== undefined) errors.add(`${path}[${i}].lineNumber`, 'unique', `lineNumber ${line.lineNumber} repeats ${path}[${first}]`);
    else seen.set(line.lineNumber, i);
  });
}

export function zero(): Dec {
  return new Dec(0);
}

/**
 * A real calendar date YYYY-MM-DD. The contract validator checks `format: date` in its fast mode
 * (a regex that lets 2026-13-01 and 2026-02-30 through); the engines must not store such a date.
 */
export function calendarDate(raw: unknown, field: string, errors: InputErrors): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  const text = String(raw);
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  const d = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null;
  if (!m || !d || d.toISOString().slice(0, 10) !== text) {
    errors.add(field, 'format', `must be a calendar date YYYY-MM-DD (got ${JSON.stringify(raw)})`);
    return undefined;
  }
  return text;
}
