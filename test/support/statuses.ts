/**
 * Every status the server sends is declared on its operation (developers' guide). Two halves:
 *
 * - `recordStatuses`: when STATUS_LOG names a file, the test harness appends, at the close of each
 *   test app, every (operationId, status) pair the app's request counter saw (the
 *   http_requests_total metric, labelled by operation before any middleware can refuse the
 *   request, so 401/405/413/415/423/429/503 answers are counted against their operation).
 * - `undeclared`: the pairs whose status openapi.yaml does not declare on that operation.
 *   scripts/check-statuses.ts runs it over the log after the suite (`make test`), and
 *   test/contract/declared-statuses.test.ts over a representative set of pre-routing refusals.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Registry } from 'prom-client';
import { OPERATIONS } from '../../generated/operations';

export interface StatusPair {
  operationId: string;
  status: number;
}

/** The (operation, status) pairs the app's request counter saw, for contract operations only. */
export async function observedStatuses(registry: Registry): Promise<StatusPair[]> {
  const metric = registry.getSingleMetric('http_requests_total');
  if (!metric) return [];
  const known = new Set(OPERATIONS.map((o) => o.operationId));
  const { values } = await metric.get();
  return values
    .filter((v) => v.value > 0 && known.has(String(v.labels.operation)))
    .map((v) => ({ operationId: String(v.labels.operation), status: Number(v.labels.status) }));
}

/** Appends this app's pairs to STATUS_LOG (one `operationId status` a line); nothing when unset. */
export async function recordStatuses(registry: Registry | undefined): Promise<void> {
  const file = process.env.STATUS_LOG;
  if (!file || !registry) return;
  const pairs = await observedStatuses(registry);
  if (pairs.length > 0) fs.appendFileSync(file, pairs.map((p) => `${p.operationId} ${p.status}\n`).join(''));
}

let declared: Map<string, Set<number>> | undefined;

/** operationId -> the statuses openapi.yaml declares on it. */
export function declaredStatuses(): Map<string, Set<number>> {
  if (declared) return declared;
  // The YAML parser loaded here, not at import: every test app imports this module for recordStatuses.
  const { parse } = require('yaml') as typeof import('yaml');
  const doc = parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));
  declared = new Map();
  for (const item of Object.values<Record<string, any>>(doc.paths)) {
    for (const op of Object.values<any>(item)) {
      if (op && typeof op === 'object' && op.operationId && op.responses) {
        declared.set(op.operationId, new Set(Object.keys(op.responses).filter((k) => /^\d{3}$/.test(k)).map(Number)));
      }
    }
  }
  return declared;
}

/** The pairs whose status is not declared on their operation, each once, sorted. */
export function undeclared(pairs: Iterable<StatusPair>): string[] {
  const out = new Set<string>();
  for (const { operationId, status } of pairs) {
    if (!declaredStatuses().get(operationId)?.has(status)) out.add(`${operationId} ${status}`);
  }
  return [...out].sort();
}
