/**
 * What the benchmarks read of a server's processes from Linux's /proc: the process and its
 * descendants (with WORKERS > 1 a node:cluster primary, which serves nothing, and its workers),
 * the CPU time each has used, its resident set now and at its peak, and the reset of that peak.
 */
import fs from 'node:fs';

/** The process and its descendants; the process alone when /proc says nothing (gone, or no /proc). */
export function processTree(pid: number): number[] {
  const out = [pid];
  try {
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      const children = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      for (const c of children.split(/\s+/).filter(Boolean)) out.push(...processTree(Number(c)));
    }
  } catch {
    /* gone, or no /proc: the process alone */
  }
  return out;
}

/** CPU time (user + system) a process has used, ms (/proc/<pid>/stat utime and stime, 100 ticks a second); 0 when it is gone. */
export function cpuMs(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** Peak (VmHWM) and current (VmRSS) resident set of a process, MB. */
export function memoryMb(pid: number): { peak: number; rss: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { peak: kb('VmHWM') / 1024, rss: kb('VmRSS') / 1024 };
}

/** Resets the peak resident set of a process (clear_refs 5), so VmHWM measures from now. */
export function resetPeak(pid: number): void {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    /* not permitted: the peak then includes what came before */
  }
}
