import v8 from 'node:v8';
import client from 'prom-client';
import type { RequestHandler } from 'express';
import type { Knex } from 'knex';
import { UNMATCHED } from './operations';
import { countSourcesOf } from '../engines/query/run';

export interface HttpMetrics {
  registry: client.Registry;
  /** Counts and times every request when it finishes (mount first). */
  observe: RequestHandler;
}

/** tarn's pool as knex exposes it (knex.client.pool). */
interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
  max?: number;
}

function poolOf(knex: Knex | undefined): TarnPool | undefined {
  const pool = (knex as unknown as { client?: { pool?: TarnPool } } | undefined)?.client?.pool;
  return pool && typeof pool.numUsed === 'function' ? pool : undefined;
}

/**
 * prom-client metrics on a registry of this app (tests start several apps in one process):
 *   http_requests_total{operation,status}               counter
 *   http_request_duration_seconds{operation,status}     histogram
 *   db_pool_connections_used / _free, db_pool_pending_acquires / _creates, db_pool_max   gauges
 *   nodejs_heap_size_limit_bytes                        gauge
 *   query_counts_total{source}                          counter: where read totalCounts came from,
 *                                                       cache (the same query), index (count-index.ts), database
 * plus prom-client's default process metrics. `operation` is the operationId of openapi.yaml
 * (or the name of a route outside the contract, or `unmatched`), so label sets stay bounded.
 *
 * `knex` is read at scrape time: the maintenance lock may replace the pool.
 */
export function createMetrics(knex: () => Knex | undefined): HttpMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });

  const requests = new client.Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by operationId and status',
    labelNames: ['operation', 'status'] as const,
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency (first byte in to last byte out) by operationId and status',
    labelNames: ['operation', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });

  const gauge = (name: string, help: string, read: (pool: TarnPool) => number | undefined) =>
    new client.Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const pool = poolOf(knex());
        const value = pool ? read(pool) : undefined;
        this.set(typeof value === 'number' && Number.isFinite(value) ? value : 0);
      },
    });
  gauge('db_pool_connections_used', 'Database connections checked out of the pool', (p) => p.numUsed());
  gauge('db_pool_connections_free', 'Idle database connections in the pool', (p) => p.numFree());
  gauge('db_pool_pending_acquires', 'Requests waiting for a database connection', (p) => p.numPendingAcquires());
  gauge('db_pool_pending_creates', 'Database connections being opened', (p) => p.numPendingCreates());
  gauge('db_pool_max', 'Largest size of the database pool', (p) => p.max);
  // The limit V8 sizes its collector from (HEAP_LIMIT_MB, src/heap-limit.ts): lets an operator see it took.
  new client.Gauge({
    name: 'nodejs_heap_size_limit_bytes',
    help: 'V8 heap size limit of this process',
    registers: [registry],
    collect() {
      this.set(v8.getHeapStatistics().heap_size_limit);
    },
  });

  new client.Counter({
    name: 'query_counts_total',
    help: 'totalCount of reads by source: cache (the same query reused), index (a column in memory), database (a count statement)',
    labelNames: ['source'] as const,
    registers: [registry],
    collect() {
      const db = knex();
      if (!db) return;
      const counted = countSourcesOf(db);
      this.reset();
      for (const source of ['cache', 'index', 'database'] as const) this.inc({ source }, counted[source]);
    },
  });

  const observe: RequestHandler = (_req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const labels = { operation: String(res.locals.operationId ?? UNMATCHED), status: String(res.statusCode) };
      requests.inc(labels);
      duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };

  return { registry, observe };
}
