/**
 * The spans the service makes in this test process, kept in memory: `install` makes an in-memory
 * exporter the global tracer provider's (with the service's trace context), `uninstall` shuts it
 * down and disables tracing again. For test/telemetry/tracing.test.ts and the tests that check
 * what spans carry.
 */
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ensureTraceContext } from '../../src/telemetry/tracing';

export interface SpanRecorder {
  readonly exporter: InMemorySpanExporter;
  install(): void;
  uninstall(): Promise<void>;
}

export function spanRecorder(): SpanRecorder {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return {
    exporter,
    install() {
      ensureTraceContext();
      trace.setGlobalTracerProvider(provider);
    },
    async uninstall() {
      await provider.shutdown();
      trace.disable();
    },
  };
}
