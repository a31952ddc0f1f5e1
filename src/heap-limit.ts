/**
 * The V8 heap limit of a server worker (HEAP_LIMIT_MB; default 1024; 0: V8's own choice).
 *
 * Why a limit matters for the resident set, not only as a ceiling: V8 sizes its collector from
 * it. Left alone on a machine with plenty of memory (24 GB here: a 4 GB limit), it lets the old
 * generation grow to up to 4 times what survived the last full collection before the next one
 * (V8's largest growing factor, for limits of 2 GB and more); below 2 GB the factor scales down
 * (about 1.6 at 1024 MB). The young generation is the same either way (2 x 16 MB semi-spaces,
 * measured with v8.getHeapSpaceStatistics: the limit does not shrink it). The service keeps about
 * 25 to 30 MB alive, so under load a worker peaks at 160 to 235 MB on the heaviest scenarios with
 * V8's sizing and near 135 MB with 1024 MB, at the price of more full collections: over 8 interleaved pairs on
 * the match scenario, a median of 15 % more CPU per request and 24 % fewer requests a second, 6 % and
 * 11 % on scenario B (decision 0039; noisy on a shared machine, but not free).
 * On a quiet machine V8's sizing let the workers reach 197 to 336 MB (every bench/query.ts
 * scenario, SQLite; PostgreSQL 191 to 328 MB), twice what the limit allows (144 to 186 MB), while
 * requests a second moved both ways (−20 % to +35 % by scenario; decision 0042; the current A/B:
 * bench/heap-limit-ab.ts, bench/README.md "Heap limit A/B"). A service that runs
 * beside a company's books should have a footprint its operator can plan for, so the limit is the
 * default; HEAP_LIMIT_MB=0 gives V8's sizing back to a deployment that is saturated for long.
 *
 * Applied to the cluster's workers (the primary forks them with the flag); an operator's own
 * `--max-old-space-size` (command line or NODE_OPTIONS) wins. WORKERS=1 serves in the started
 * process, whose heap is sized already: set NODE_OPTIONS there (docs/deployment.md).
 */
const FLAG = '--max-old-space-size';

/** The exec arguments a worker is forked with: the primary's, plus the heap limit unless one is given. */
export function workerExecArgv(execArgv: readonly string[], nodeOptions: string | undefined, heapLimitMb: number): string[] {
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((a) => a === FLAG || a.startsWith(`${FLAG}=`) || a.startsWith('--max_old_space_size'));
  if (heapLimitMb === 0 || given) return [...execArgv];
  return [...execArgv, `${FLAG}=${heapLimitMb}`];
}
