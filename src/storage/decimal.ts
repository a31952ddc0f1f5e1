import Decimal from 'decimal.js';

/**
 * Money and quantities are exact decimals. In code they are decimal.js values; in storage
 * they are DECIMAL(p,s) on PostgreSQL and SQL Server and scaled integers on SQLite, which
 * has no exact decimal type (see src/storage/dialect.ts, the one place that knows).
 */
export const Dec = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });
export type Dec = InstanceType<typeof Dec>;

export function toDec(value: Decimal.Value): Dec {
  return new Dec(value);
}

/** JSON numbers in bodies arrive as doubles; their shortest text form is the exact decimal the client sent. */
export function decFromJson(value: number | string): Dec {
  return new Dec(typeof value === 'number' ? String(value) : value);
}

/** Published JSON form: a number whose shortest text is the exact decimal. */
export function decToJson(value: Dec): number {
  return Number(value.toFixed());
}
