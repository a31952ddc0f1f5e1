import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Services } from './services';
import { WRITES } from './engines/posting/writes';
import { PROJECT_ROOT } from './http/openapi-document';
import { OPERATIONS } from '../generated/operations';

/**
 * The request path's first-use cost, paid at start instead of by the first requests (issue 13:
 * the first request to any operation within 50 ms). A process's first posting spent 25 to 100 ms
 * on work that is the same for every request: V8 compiling the posting engines, knex building its
 * first insert / update / returning statements and the driver preparing them. The warm-up runs
 * each posting engine once, on its first contract example, through `WriteRunner.rehearse`: one
 * transaction that is always rolled back, numbers included (nothing is written to the books, no
 * record number is burnt, no idempotency record or event is made: test/deployment/warm-up.test.ts checks it
 * through the database).
 *
 * The postings that share most of the path, and the costliest one, run before the process reports
 * ready (src/server.ts, before the contract validator is prepared; BEFORE_READY), the others once
 * it is ready, while it is idle. A posting that fails (a 422 on a database without the
 * demo company's references: the example names them) has still compiled the path up to there and
 * is not an error; anything else is logged and the start goes on: a warm-up never stops a server.
 */

/** The first example body of each write operation's request in the generated contract. */
export function writeExamples(doc: Record<string, any> = readContract()): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const { route } of WRITES) {
    const json = doc.paths?.[route]?.post?.requestBody?.content?.['application/json'];
    const example = json?.example ?? Object.values<any>(json?.examples ?? {})[0]?.value;
    if (example !== undefined) out.set(route, example);
  }
  return out;
}

function readContract(): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'generated', 'openapi.public.json'), 'utf8')) as Record<string, any>;
}

export interface WarmUpReport {
  ms: number;
  /** Postings rehearsed to the end (then rolled back). */
  rehearsed: number;
  /** Postings that stopped early (refused by a rule, or their example's references are missing). */
  refused: number;
  /** Unexpected failures (logged; the start goes on). */
  failed: number;
  /** The routes tried (rehearsed, refused or failed): a warm-up stopped early has not tried the rest. */
  tried: string[];
}

/**
 * The postings rehearsed before the process reports ready. A purchase-order receipt runs most
 * shared pieces of the posting path (the payable invoice, the journal, periods and references,
 * job costs, stock, read-back; knex's insert, update and returning builders), 20 to 40 ms of CPU
 * on this machine. The payroll batch is the costliest first request of all (its engine, its
 * request schema and a batch of 15 records, 132 job costs: 60 to 210 ms of CPU unrehearsed,
 * 13 to 20 ms warm), and the only one past the 50 ms first-request target, so it is rehearsed
 * before ready too (decision 0380; ~40 to 90 ms of CPU). The others (their own code on top: ~3
 * to 30 ms of CPU each) are rehearsed after readiness, while the process is idle (`idle` below).
 * No more before: each rehearsal is a write transaction, and on SQLite the workers of a cluster
 * take turns for the write lock, so every rehearsal before readiness delays it twice over.
 */
export const BEFORE_READY: ReadonlySet<string> = new Set(['/purchase-order-receipts', '/payroll-records/post']);

/**
 * The operationIds of BEFORE_READY: the contract validator compiles them before readiness too
 * (src/server.ts), or the first such request would still compile its request schema (~10 to 20 ms).
 */
export const BEFORE_READY_OPERATIONS: readonly string[] = OPERATIONS.filter((op) => op.method === 'POST' && BEFORE_READY.has(op.path)).map((op) => op.operationId);

export interface WarmUpOptions {
  /** Which write routes to rehearse (default: all). */
  only?: (route: string) => boolean;
  /**
   * Whether the process has no request of its own in flight: each rehearsal waits for it (a
   * request arriving meanwhile waits at most for one rehearsal's transaction).
   */
  idle?: () => boolean;
  examples?: Map<string, unknown>;
  /**
   * How long one rehearsal may take (a lock held by another process's posting, a slow database):
   * past it the warm-up goes on without waiting (DeadlineExceeded, logged; the transaction still
   * rolls back), so readiness is never held up by more than this per rehearsal.
   */
  deadlineMs?: number;
  /**
   * Asked before each rehearsal: true stops the warm-up there (the server shutting down: its pool
   * is about to close; or, before readiness, a sibling worker that opened the port meanwhile: no
   * write transaction while it serves, src/server.ts). What was not tried is in no report count.
   */
  stopping?: () => boolean;
}

/** Default `deadlineMs`: well past a cold rehearsal (~40 to 120 ms), well within the 1 s readiness target's scale. */
export const REHEARSAL_DEADLINE_MS = 1000;

export async function warmUp(services: Pick<Services, 'writes' | 'lock'>, logger: Logger, options: WarmUpOptions = {}): Promise<WarmUpReport> {
  const started = process.hrtime.bigint();
  const report: WarmUpReport = { ms: 0, rehearsed: 0, refused: 0, failed: 0, tried: [] };
  const examples = options.examples ?? writeExamples();
  for (const { route, definition } of WRITES) {
    const body = examples.get(route);
    if (!definition || body === undefined || (options.only && !options.only(route))) continue;
    if (options.idle) {
      // Yield to the event loop first: on SQLite a rehearsal runs as one chain of promises (the
      // driver is synchronous), so without this a connection that arrived meanwhile would not even
      // be accepted before the next rehearsal, and idle() would still say true.
      // Two timer turns at least: each passes the event loop's poll phase, where a waiting
      // connection is accepted and then its request read.
      for (let turn = 0; turn < 2 || !options.idle(); turn += 1) await new Promise((resolve) => setTimeout(resolve, 2));
    }
    // Under the maintenance lock the pool is dropped: nothing may touch the database.
    if (services.lock.isLocked() || options.stopping?.()) break;
    report.tried.push(route);
    const t0 = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    try {
      await services.writes.rehearse(definition, body, options.deadlineMs ?? REHEARSAL_DEADLINE_MS);
      report.rehearsed += 1;
      const cpu = process.cpuUsage(cpu0);
      logger.debug({ route, ms: Math.round(Number(process.hrtime.bigint() - t0) / 1e6), cpuMs: Math.round((cpu.user + cpu.system) / 1000) }, 'warm-up: posting rehearsed');
    } catch (err) {
      const status = (err as { status?: unknown })?.status;
      if (typeof status === 'number' && status < 500) {
        report.refused += 1;
        logger.debug({ route, status }, 'warm-up: posting refused (its path compiled up to there)');
      } else {
        report.failed += 1;
        logger.warn({ err, route }, 'warm-up: posting rehearsal failed (the start goes on)');
      }
    }
  }
  report.ms = Math.round(Number(process.hrtime.bigint() - started) / 1e6);
  return report;
}
