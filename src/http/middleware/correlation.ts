import { randomBytes, randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export interface TraceContext {
  traceId: string;
  parentSpanId?: string;
  /** The traceparent as received, when it was valid. */
  traceparent?: string;
}

/** W3C trace context: a valid traceparent is adopted; otherwise a new trace id is made. */
export function parseTraceparent(header: unknown): TraceContext {
  if (typeof header === 'string') {
    const m = TRACEPARENT.exec(header.trim());
    if (m && m[1] !== 'ff' && !/^0+$/.test(m[2]!) && !/^0+$/.test(m[3]!)) {
      return { traceId: m[2]!, parentSpanId: m[3]!, traceparent: header.trim() };
    }
  }
  return { traceId: randomBytes(16).toString('hex') };
}

/** First middleware: every response, including those rejected before any handler, carries X-Correlation-Id. */
export const correlation: RequestHandler = (req, res, next) => {
  const correlationId = randomUUID();
  res.locals.correlationId = correlationId;
  res.locals.trace = parseTraceparent(req.headers.traceparent);
  res.locals.startedAt = process.hrtime.bigint();
  res.setHeader('X-Correlation-Id', correlationId);
  next();
};
