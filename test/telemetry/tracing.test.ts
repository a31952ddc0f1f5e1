/**
 * OpenTelemetry trace context (src/telemetry/tracing.ts, src/http/middleware/trace-span.ts), with
 * an in-memory span exporter: a valid traceparent is the parent of the request span, the engine
 * step (the boundary trip) is its child and each database statement the step's child; an invalid
 * traceparent starts a new trace (never 400); the trace id reaches the database session.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { context, trace, TraceFlags } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import knexFactory from 'knex';
import { startTestApp, TEST_ENGINE, type TestApp } from '../support/app';
import { spanRecorder } from '../support/spans';
import { traceSessionStatement } from '../../src/storage/trace-session';

const { exporter, ...spans } = spanRecorder();
let t: TestApp;

before(async () => {
  spans.install();
  t = await startTestApp({});
});
after(async () => {
  await t.close();
  await spans.uninstall();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

test('request span <- valid traceparent; engine step and statements are its descendants', async () => {
  exporter.reset();
  const res = await t.post('/api/v3/vendors/query', { page: { pageNumber: 1, pageSize: 2 } }).set('traceparent', `00-${TRACE_ID}-${PARENT}-01`);
  assert.equal(res.status, 200, res.text);
  await new Promise((r) => setImmediate(r));
  const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === TRACE_ID);
  const server = spans.find((s) => s.name === 'POST /api/v3/vendors/query');
  assert.ok(server, `request span among ${spans.map((s) => s.name).join(', ')}`);
  assert.equal(parentOf(server), PARENT, 'the request span is a child of the caller');
  assert.equal(server.attributes['http.response.status_code'], 200);
  const step = spans.find((s) => s.name.startsWith('read '));
  assert.ok(step, 'engine step span');
  assert.equal(parentOf(step), server.spanContext().spanId);
  // Statements through knex are spans under the step (SQLite's read snapshot runs on the raw
  // driver, below knex: its statements are not spans); the key lookup runs under the request span.
  for (const s of spans.filter((x) => x.name.startsWith('db '))) {
    assert.ok([step.spanContext().spanId, server.spanContext().spanId].includes(parentOf(s)!), s.name);
  }

  exporter.reset();
  const ping = await t.post('/api/v3/utility/ping', {}).set('traceparent', `00-${TRACE_ID}-${PARENT}-01`);
  assert.equal(ping.status, 200, ping.text);
  await new Promise((r) => setImmediate(r));
  const pingSpans = exporter.getFinishedSpans();
  const pingStep = pingSpans.find((x) => x.name === 'read ping');
  assert.ok(pingStep, `ping step among ${pingSpans.map((x) => x.name).join(', ')}`);
  const statement = pingSpans.find((x) => x.name.startsWith('db ') && parentOf(x) === pingStep.spanContext().spanId);
  assert.ok(statement, 'the statement span is a child of the engine step');
  assert.equal(statement.spanContext().traceId, TRACE_ID);
  assert.match(String(statement.attributes['db.statement']), /select 1/i);
});

test('an invalid traceparent starts a new trace and is never a 400', async () => {
  exporter.reset();
  for (const bad of ['garbage', `00-${'0'.repeat(32)}-${PARENT}-01`, `ff-${TRACE_ID}-${PARENT}-01`]) {
    const res = await t.post('/api/v3/utility/ping', {}).set('traceparent', bad);
    assert.equal(res.status, 200, res.text);
  }
  await new Promise((r) => setImmediate(r));
  const servers = exporter.getFinishedSpans().filter((s) => s.name === 'POST /api/v3/utility/ping');
  assert.equal(servers.length, 3);
  for (const s of servers) {
    assert.equal(parentOf(s), undefined, 'a root span');
    assert.notEqual(s.spanContext().traceId, TRACE_ID);
  }
  assert.equal(new Set(servers.map((s) => s.spanContext().traceId)).size, 3, 'a new trace each');
});

test('the trace id reaches the database session of a posting transaction', async () => {
  const span = trace.wrapSpanContext({ traceId: TRACE_ID, spanId: PARENT, traceFlags: TraceFlags.SAMPLED });
  const seen = await context.with(trace.setSpan(context.active(), span), () =>
    t.services.boundary.transaction(async (trx) => {
      if (TEST_ENGINE !== 'postgres') return undefined;
      const r = await trx.raw("select current_setting('application_name') as name");
      return r.rows[0].name as string;
    }),
  );
  if (TEST_ENGINE === 'postgres') assert.equal(seen, `ais trace=${TRACE_ID}`);
  else assert.equal(traceSessionStatement(t.knex, 'sqlite', TRACE_ID), undefined, 'SQLite: no session to label');
});

test('the trace id reaches the database session of a posting transaction whose BEGIN also reads its lock fence', async () => {
  const span = trace.wrapSpanContext({ traceId: TRACE_ID, spanId: PARENT, traceFlags: TraceFlags.SAMPLED });
  const fence = { sql: 'select ? as one', bindings: [1] };
  const seen = await context.with(trace.setSpan(context.active(), span), () =>
    t.services.boundary.transaction(
      async (trx) => {
        if (TEST_ENGINE !== 'postgres') return undefined;
        const r = await trx.raw("select current_setting('application_name') as name");
        return r.rows[0].name as string;
      },
      { begin: fence },
    ),
  );
  assert.deepEqual((fence as { rows?: unknown }).rows, [{ one: 1 }], 'the BEGIN statement read');
  if (TEST_ENGINE === 'postgres') assert.equal(seen, `ais trace=${TRACE_ID}`);
});

test('PostgreSQL: every statement of a request, reads included, carries the trace id as a leading comment', async () => {
  const span = trace.wrapSpanContext({ traceId: TRACE_ID, spanId: PARENT, traceFlags: TraceFlags.SAMPLED });
  const read = () => t.services.boundary.read(async (db) => (TEST_ENGINE === 'postgres' ? ((await db.raw('select current_query() as q')) as any).rows[0].q as string : undefined));
  const inside = await context.with(trace.setSpan(context.active(), span), read);
  if (TEST_ENGINE !== 'postgres') return;
  // Outside any span (not through the boundary, which opens one): no comment.
  const outside = ((await t.knex.raw('select current_query() as q')) as any).rows[0].q as string;
  assert.ok(inside!.startsWith(`/* trace=${TRACE_ID} */ `), inside);
  assert.ok(!outside!.includes('trace='), `no request, no comment: ${outside}`);
});

test('SQL Server: CONTEXT_INFO carries the trace id (compiled)', async () => {
  const mssql = knexFactory({ client: 'mssql' });
  try {
    assert.equal(traceSessionStatement(mssql, 'mssql', TRACE_ID)!.toString(), `SET CONTEXT_INFO 0x${TRACE_ID}`);
    // Only a hex trace id reaches the SQL; without one the session's previous id is cleared.
    assert.equal(traceSessionStatement(mssql, 'mssql', "0x1; drop table apikey --")!.toString(), 'SET CONTEXT_INFO 0x');
    assert.equal(traceSessionStatement(mssql, 'mssql', undefined)!.toString(), 'SET CONTEXT_INFO 0x');
  } finally {
    await mssql.destroy();
  }
});
