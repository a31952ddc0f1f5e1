/**
 * Process entry point (`npm start` runs the built copy, dist/src/main.js; `npm run dev` this file).
 * Configuration errors print one line and exit 1. SIGTERM / SIGINT drain in-flight requests,
 * close the database pool and exit 0; a second signal exits at once.
 */
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from './config';
import { startServer, type RunningServer } from './server';
import { startTracing } from './telemetry/tracing';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }

  const logger = pino({ level: config.logLevel });
  // OpenTelemetry: the SDK and OTLP exporter load only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  const stopTracing = await startTracing(process.env).catch((err: unknown) => {
    logger.warn({ err }, 'tracing not started');
    return async () => {};
  });
  let running: RunningServer;
  try {
    running = await startServer(config, { logger });
  } catch (err) {
    logger.fatal({ err }, 'start failed');
    process.stderr.write(`start failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting without draining');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'signal received');
    running
      .close()
      .then(() => stopTracing().catch(() => undefined))
      .then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
}

void main();
