/**
 * A bound on the rows one process holds in memory for reads at once. A read materialises its
 * page several times over while it runs (driver rows, published records, the JSON text and its
 * bytes), so a process's heap under load grows with the pages in flight: ten concurrent
 * 1,000-invoice pages with their lines held ~100 MB at once (decision 0032; bench/query.ts, scenario
 * E). Reads take a share of the budget before they touch the database and give it back
 * once their answer is written; a read that does not fit waits its turn (first come, first
 * served). On a few cores this costs no throughput: the reads are CPU-bound, and two or three
 * large pages in flight keep the cores as busy as ten.
 *
 * Per process (each cluster worker has its own): memory is a per-process quantity.
 */

/** Rows (page rows plus an estimate of their children) in flight per process. */
export const READ_ROWS_IN_FLIGHT = 2500;
/** Child rows assumed per page row and collection when weighing a read (service invoices: ~3.2 lines). */
export const CHILD_ROWS_PER_ROW = 4;

export class ReadBudget {
  private used = 0;
  private readonly waiting: Array<{ weight: number; admit: () => void }> = [];

  constructor(readonly capacity: number = READ_ROWS_IN_FLIGHT) {}

  /** Rows a read of `pageSize` rows with `collections` child collections is counted as. */
  static weigh(pageSize: number, collections: number): number {
    return pageSize * (1 + collections * CHILD_ROWS_PER_ROW);
  }

  /**
   * Waits for `weight` rows of the budget; resolves to the function giving them back (call it
   * exactly once). A read heavier than the whole budget runs alone.
   */
  async acquire(weight: number): Promise<() => void> {
    const w = Math.min(Math.max(1, weight), this.capacity);
    if (this.waiting.length === 0 && this.used + w <= this.capacity) this.used += w;
    else await new Promise<void>((admit) => this.waiting.push({ weight: w, admit }));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= w;
      this.admitWaiting();
    };
  }

  /** Rows currently taken (tests, metrics). */
  get inUse(): number {
    return this.used;
  }

  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.used + this.waiting[0]!.weight <= this.capacity) {
      const next = this.waiting.shift()!;
      this.used += next.weight;
      next.admit();
    }
  }
}
