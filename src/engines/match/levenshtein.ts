/**
 * Levenshtein distance (insert, delete, substitute: cost 1 each) bounded by `max`: only the
 * diagonal band |i - j| <= max is computed, and the computation stops as soon as a whole row
 * exceeds `max`. Returns the distance when it is <= max, else max + 1. Distances are counted
 * in UTF-16 code units (after normalisation, characters outside the BMP are rare).
 */
let rowA = new Int32Array(64);
let rowB = new Int32Array(64);

export function boundedLevenshtein(a: string, b: string, max: number): number {
  if (a === b) return 0;
  // a is the shorter one.
  if (a.length > b.length) {
    const t = a;
    a = b;
    b = t;
  }
  let la = a.length;
  let lb = b.length;
  if (lb - la > max) return max + 1;
  // Common prefix and suffix do not change the distance.
  let start = 0;
  while (start < la && a.charCodeAt(start) === b.charCodeAt(start)) start++;
  while (la > start && a.charCodeAt(la - 1) === b.charCodeAt(lb - 1)) {
    la--;
    lb--;
  }
  const n = la - start;
  const m = lb - start;
  if (n === 0) return m <= max ? m : max + 1;
  if (m + 1 > rowA.length) {
    rowA = new Int32Array(m + 64);
    rowB = new Int32Array(m + 64);
  }
  const big = max + 1;
  let prev = rowA;
  let cur = rowB;
  for (let j = 0; j <= m; j++) prev[j] = j <= max ? j : big;
  for (let i = 1; i <= n; i++) {
    const lo = Math.max(1, i - max);
    const hi = Math.min(m, i + max);
    cur[0] = i <= max ? i : big;
    if (lo > 1) cur[lo - 1] = big;
    const ca = a.charCodeAt(start + i - 1);
    let rowMin = cur[0]!;
    for (let j = lo; j <= hi; j++) {
      const cost = ca === b.charCodeAt(start + j - 1) ? 0 : 1;
      let v = prev[j - 1]! + cost;
      const del = prev[j]! + 1;
      if (del < v) v = del;
      const ins = cur[j - 1]! + 1;
      if (ins < v) v = ins;
      if (v > big) v = big;
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (hi < m) cur[hi + 1] = big;
    if (rowMin > max) return big;
    const t = prev;
    prev = cur;
    cur = t;
  }
  const d = prev[m]!;
  return d <= max ? d : big;
}
