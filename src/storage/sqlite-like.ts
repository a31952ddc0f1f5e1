/**
 * SQLite's LIKE as the contract's: `%` the only wildcard, case folded for all of Unicode the way
 * PostgreSQL's ILIKE folds it (decision 0463). SQLite's built-in LIKE folds ASCII only, so
 * `LIKE 'émile%'` missed "Émile Bâtiment" that PostgreSQL (ILIKE) and SQL Server (a CI collation)
 * find. The SQLite query dialect compiles LIKE to the function registered here on every
 * connection (database.ts); a leaf module, so both import it without a circle.
 *
 * PostgreSQL's ILIKE is `lower(value) LIKE lower(pattern)`, compared code point by code point, and
 * its lower() (libc, C.UTF-8 and the other UTF-8 locales) maps each code point on its own: Unicode's
 * simple lowercase mapping, no context. JavaScript's toLowerCase is the full, context-sensitive
 * mapping, which differs from it in two places only: İ (U+0130) becomes i + U+0307 (PostgreSQL: i),
 * and Σ at the end of a word becomes ς (PostgreSQL: σ). foldCase handles both. Checked against
 * PostgreSQL 15 (glibc 2.36, C.UTF-8) over every code point: equal but for 55 letters Unicode added
 * after that glibc's tables (Garay, Tolong Siki, eight of Latin Extended-D), which PostgreSQL leaves
 * as they are.
 */

/** The SQL function: `ais_ilike(value, pattern)` is 1, 0, or NULL when either is NULL. */
export const SQLITE_ILIKE_FUNCTION = 'ais_ilike';

/** Characters whose whole-string lowering differs from PostgreSQL's code point by code point. */
const CONTEXT_MAPPED = /[\u0130\u03a3]/g;

/** `text` lower-cased code point by code point (Unicode's simple mapping), as PostgreSQL's lower(). */
export function foldCase(text: string): string {
  const lower = text.toLowerCase();
  // İ lengthens the text (i + U+0307); a final Σ gives ς. Neither: toLowerCase mapped each code point alone.
  if (lower.length === text.length && lower.indexOf('\u03c2') === -1) return lower;
  return text.replace(CONTEXT_MAPPED, (c) => (c === '\u0130' ? 'i' : '\u03c3')).toLowerCase();
}

/** A folded pattern split at its `%`: the literal text between the wildcards. */
type Pieces = readonly string[];

/** Whether folded `value` matches the pattern of `pieces` (greedy, leftmost: `%` is the only wildcard). */
function matchPieces(value: string, pieces: Pieces): boolean {
  const first = pieces[0]!;
  if (pieces.length === 1) return value === first;
  const last = pieces[pieces.length - 1]!;
  const end = value.length - last.length;
  if (end < first.length || !value.startsWith(first) || !value.endsWith(last)) return false;
  let at = first.length;
  for (let i = 1; i < pieces.length - 1; i += 1) {
    const piece = pieces[i]!;
    const found = value.indexOf(piece, at);
    if (found === -1 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

/**
 * The matcher of one pattern. A statement calls the function once a row with the same pattern:
 * the pieces of the last pattern are kept (one entry: a statement's patterns take turns only when
 * it has several LIKE conditions).
 */
let lastPattern: string | undefined;
let lastPieces: Pieces = [];

/** LIKE as the contract's: `%` the only wildcard, every other character literal, case folded (foldCase). */
export function ilike(value: string, pattern: string): boolean {
  if (pattern !== lastPattern) {
    lastPieces = foldCase(pattern).split('%');
    lastPattern = pattern;
  }
  return matchPieces(foldCase(value), lastPieces);
}

/** What better-sqlite3's Database offers to register a function. */
interface FunctionHost {
  function(name: string, options: { deterministic: boolean; directOnly: boolean }, fn: (...args: unknown[]) => unknown): unknown;
}

/**
 * Registers `ais_ilike(value, pattern)` on a better-sqlite3 connection. NULL in, NULL out (so NOT
 * of it is NULL too: a null field matches neither LIKE nor NOT LIKE, as on the other engines); a
 * number stored in a text column is compared as its text, as the built-in LIKE does.
 */
export function registerSqliteIlike(conn: FunctionHost): void {
  conn.function(SQLITE_ILIKE_FUNCTION, { deterministic: true, directOnly: true }, (value, pattern) => {
    if (value === null || pattern === null || value === undefined || pattern === undefined) return null;
    return ilike(typeof value === 'string' ? value : String(value), typeof pattern === 'string' ? pattern : String(pattern)) ? 1 : 0;
  });
}
