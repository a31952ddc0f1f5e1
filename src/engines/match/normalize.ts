/**
 * Normalisation applied to both sides of a fuzzy match (docs/decisions/0015-query-and-match.md):
 *   1. Unicode NFKD (compatibility decomposition: ligatures and full-width forms split, accents
 *      separated from their letters), then lower-case (and NFKD again, for the few lower-case
 *      mappings that produce a combining mark);
 *   2. combining marks (\p{M}) removed, so "Café" and "cafe" are equal;
 *   3. every character that is not a letter (\p{L}), a number (\p{N}) or white space is removed
 *      (punctuation and symbols: "3/4-in." -> "34in");
 *   4. runs of white space folded to one space, leading and trailing space trimmed.
 * An ASCII fast path produces exactly the same result without the regular expressions.
 */
const MARKS = /\p{M}+/gu;
const NOT_KEPT = /[^\p{L}\p{N}\s]+/gu;
const SPACES = /\s+/g;

function isAsciiSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

/** ASCII-only input; returns undefined when a non-ASCII character is found. */
function normaliseAscii(s: string): string | undefined {
  let out = '';
  let pendingSpace = false;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 128) return undefined;
    if (c >= 65 && c <= 90) c += 32;
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
      if (pendingSpace && out.length > 0) out += ' ';
      pendingSpace = false;
      out += String.fromCharCode(c);
    } else if (isAsciiSpace(c)) {
      pendingSpace = true;
    }
    // Anything else (punctuation, symbols, control characters) is dropped.
  }
  return out;
}

export function normalise(s: string): string {
  return normaliseAscii(s) ?? normaliseUnicode(s);
}

/** Steps 1 to 4 above, for any input. */
function normaliseUnicode(s: string): string {
  return s
    .normalize('NFKD')
    .toLowerCase()
    .normalize('NFKD')
    .replace(MARKS, '')
    .replace(NOT_KEPT, '')
    .replace(SPACES, ' ')
    .trim();
}
