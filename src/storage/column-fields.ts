import { CATALOG } from '../../generated/catalog';

/**
 * The published field behind a storage column, read from the one mapping (the catalog): what a
 * VALUE_OUT_OF_RANGE names when the database names the column it refused (SQL Server's 2628
 * does: "truncated in table 'lgrtrn', column 'dscrpt'"). Header columns only: a line column's
 * request path needs the line's index (`lines[2].description`), which the database does not
 * say, so none is guessed. A column published under two names is not guessed either.
 */
let byColumn: Map<string, string | null> | undefined;

export function publishedFieldOf(column: string, table?: string): string | undefined {
  if (!table) return undefined;
  if (!byColumn) {
    byColumn = new Map();
    for (const entity of Object.values(CATALOG)) {
      for (const [name, field] of Object.entries(entity.fields)) {
        const key = `${entity.table}.${field.column}`;
        const seen = byColumn.get(key);
        byColumn.set(key, seen === undefined || seen === name ? name : null);
      }
    }
  }
  return byColumn.get(`${table}.${column}`) ?? undefined;
}
