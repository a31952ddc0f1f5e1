/**
 * SQL Server accepts at most 2,100 parameters in one request (PostgreSQL 65,535, SQLite 32,766):
 * the one budget every statement the service builds stays under, on every engine.
 */

/** Parameters one statement may spend on its rows: SQL Server's 2,100, less room for the statement's own. */
export const STATEMENT_PARAMETER_BUDGET = 2000;

/** Rows of `columns` values one insert statement may carry within the budget (at least one). */
export function rowsPerInsert(columns: number): number {
  return Math.max(1, Math.floor(STATEMENT_PARAMETER_BUDGET / Math.max(columns, 1)));
}

/**
 * Parameters a read may spend on inlined filter lists (src/engines/query/sql.ts) and on the second
 * parameter of SQL Server's exact text `=` (decision 0464): past it lists travel as one JSON
 * parameter and `=` takes one, so a read's filter takes at most one parameter a match condition
 * (at most 1,000) plus this budget, whatever its filters.
 */
export const INLINE_PARAM_BUDGET = 900;
