import { context, trace, SpanKind, TraceFlags, ROOT_CONTEXT } from '@opentelemetry/api';
import type { RequestHandler } from 'express';
import { randomBytes } from 'node:crypto';
import { tracer } from '../../telemetry/tracing';
import type { TraceContext } from './correlation';

/**
 * The request's span (after `correlation`, which adopted a valid traceparent or made a new trace
 * id; an invalid one is never a 400). The rest of the pipeline runs inside it, so the engine step,
 * the statements and the database session see the request's trace id. Without an SDK the span is
 * non-recording and carries the trace id only.
 */
export const traceSpan: RequestHandler = (req, res, next) => {
  const t = res.locals.trace as TraceContext;
  const parent = t.parentSpanId
    ? trace.setSpanContext(ROOT_CONTEXT, { traceId: t.traceId, spanId: t.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true })
    : ROOT_CONTEXT;
  let span = tracer().startSpan(`${req.method} ${req.path}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method, 'url.path': req.path } }, parent);
  if (!span.isRecording()) {
    // No SDK: a non-recording span with the request's own trace id (the one the logs carry).
    span = trace.wrapSpanContext({ traceId: t.traceId, spanId: randomBytes(8).toString('hex'), traceFlags: TraceFlags.NONE });
  } else if (!t.parentSpanId) {
    // The SDK started a new trace: the logs and the answer use its id.
    res.locals.trace = { traceId: span.spanContext().traceId };
  }
  res.on('finish', () => {
    span.setAttribute('http.response.status_code', res.statusCode);
    const operation = res.locals.operationId;
    if (typeof operation === 'string') span.setAttribute('operation.id', operation);
    span.end();
  });
  context.with(trace.setSpan(context.active(), span), next);
};
