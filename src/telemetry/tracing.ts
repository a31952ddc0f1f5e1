/**
 * Trace context with OpenTelemetry (the spec: traceparent is "propagated to the on-premise service
 * and logs"). Spans: one per request (src/http/middleware/trace-span.ts), one per trip through the
 * on-premise boundary (the engine step: a read or a posting transaction, storage/boundary.ts) and
 * one per database statement (knex's query events, `traceStatements`).
 *
 * Cost when OTEL_EXPORTER_OTLP_ENDPOINT is not set: only @opentelemetry/api (no SDK is loaded)
 * and the AsyncLocalStorage context manager, which carries the request's trace id to the database
 * session (`currentTraceId`); the spans are the API's non-recording spans. When it is set,
 * `startTracing` loads the SDK and the OTLP/HTTP exporter dynamically and registers them.
 */
import { context, trace, SpanKind, SpanStatusCode, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import type { Knex } from 'knex';

export const TRACER_NAME = 'accounting-integration';

export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

let contextReady = false;

/** Registers the async context manager once (spans and the trace id follow the request's awaits). */
export function ensureTraceContext(): void {
  if (contextReady) return;
  contextReady = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

/**
 * Loads and registers the SDK with the OTLP/HTTP exporter when OTEL_EXPORTER_OTLP_ENDPOINT is set
 * (the exporter reads the OTEL_EXPORTER_OTLP_* variables itself). Returns a shutdown that flushes.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<() => Promise<void>> {
  ensureTraceContext();
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) return async () => {};
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  trace.setGlobalTracerProvider(provider);
  return () => provider.shutdown();
}

/** The trace id of the active span (the request's), or undefined outside a request. */
export function currentTraceId(): string | undefined {
  const ctx = trace.getSpanContext(context.active());
  return ctx && trace.isSpanContextValid(ctx) ? ctx.traceId : undefined;
}

/** Runs `fn` inside a child span named `name`; the span records the failure and always ends. */
export async function inSpan<T>(name: string, attributes: Record<string, string | number>, fn: () => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { kind: SpanKind.INTERNAL, attributes }, async (span: Span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** One client span per database statement, parented by the active span (knex query events). */
export function traceStatements(knex: Knex, system: string): void {
  const open = new Map<string, Span>();
  knex.on('query', (q: { __knexQueryUid?: string; sql?: string; method?: string }) => {
    if (!q.__knexQueryUid || !trace.getSpan(context.active())?.isRecording()) return;
    const span = tracer().startSpan(`db ${q.method ?? 'statement'}`, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system': system, 'db.statement': String(q.sql ?? '').slice(0, 2000) },
    });
    open.set(q.__knexQueryUid, span);
  });
  const finish = (error: unknown, q: { __knexQueryUid?: string }) => {
    const span = q?.__knexQueryUid ? open.get(q.__knexQueryUid) : undefined;
    if (!span) return;
    open.delete(q.__knexQueryUid!);
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    span.end();
  };
  knex.on('query-response', (_response: unknown, q: { __knexQueryUid?: string }) => finish(undefined, q));
  knex.on('query-error', (error: unknown, q: { __knexQueryUid?: string }) => finish(error, q));
}
