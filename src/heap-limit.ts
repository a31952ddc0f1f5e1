/**
 * The V8 heap limit of a server worker (HEAP_LIMIT_MB, default 1024; 0 leaves V8's own choice).
 *
 * Why a limit matters for the resident set, not only as a ceiling: V8 sizes the collector from
 * it. Left alone on a machine with plenty of memory (24 GB here: a 4 GB limit), it takes 16 MB
 * semi-spaces (a 32 MB young generation, committed from the first seconds) and lets the old
 * generation grow to 4 times what survived the last full collection before the next one. The
 * service keeps about 30 MB alive (contract validator, catalog, modules), so under load a worker
 * sat at 200 to 240 MB, most of it garbage not yet collected. With 1 GB (still 30 times the live
 * data) V8 takes 8 MB semi-spaces and a growth factor of about 1.6: the same load peaks near
 * 145 MB (bench/README.md, "Peak RSS under load"). Measured throughput: same section.
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
