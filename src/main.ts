/**
 * Process entry point (`npm start` runs the built copy, dist/src/main.js; `npm run dev` this file).
 * Configuration errors print one line and exit 1. SIGTERM / SIGINT drain in-flight requests,
 * close the database pool and exit 0; a second signal exits at once (a cluster worker: see stop).
 *
 * WORKERS > 1 (default: the number of cores): this process becomes the cluster primary
 * (src/cluster.ts). It prepares the database once and forks that many workers that share the
 * port; each worker is a whole server with its own pool and caches. WORKERS=1 serves in this
 * process.
 */
import cluster from 'node:cluster';
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from './config';
// The app (./server) is imported only by a process that serves: a cluster primary never loads it.
import type { RunningServer, StartServerOptions } from './server';
import { runPrimary, workerConfig, workerLockRelay, workerSetup, type WorkerSetup } from './cluster';
import { workerHandoff, type WorkerHandoff } from './connection-handoff';

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

  let logger = pino({ level: config.logLevel });
  if (cluster.isPrimary && config.workers > 1) {
    await runPrimary(config, logger);
    return;
  }

  const options: StartServerOptions = { logger };
  let setup: WorkerSetup | undefined;
  let handoff: WorkerHandoff | undefined;
  let databasePrepared = false;
  if (cluster.isWorker) {
    setup = workerSetup(process.env);
    handoff = workerHandoff();
    config = workerConfig(config, setup);
    logger = logger.child({ worker: setup.index });
    // The primary prepares the database while this worker loads its modules; startServer waits
    // for that (setup.boot) before it reads the database. The primary owns the port and hands
    // this worker its connections (handoff).
    Object.assign(options, { logger, prepared: setup.boot, banner: false, listenWhenPrepared: true, siblingsServe: setup.serviceOpen, checkpointsElsewhere: true, lockRelay: workerLockRelay(), handoff });
    void setup.boot.then(() => (databasePrepared = true));
  }

  // OpenTelemetry in each serving process: the SDK and OTLP exporter load only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  // Imported here, not at the top: a cluster primary forks its workers without loading it (start-up time).
  const { startTracing } = await import('./telemetry/tracing');
  const stopTracing = await startTracing(process.env).catch((err: unknown) => {
    logger.warn({ err }, 'tracing not started');
    return async () => {};
  });

  // Signals are handled from here on, also while starting: a worker that the primary stops while
  // it is still starting (a quick SIGTERM after a deploy) stops cleanly instead of dying by signal.
  let running: RunningServer | undefined;
  let stopping = false;
  const stop = (signal: NodeJS.Signals | 'primary') => {
    if (stopping) {
      // A worker: its own SIGTERM and the primary's stop are one stop (every process of the group
      // gets SIGTERM at once under systemd's KillMode=control-group, or a process-group kill). The
      // primary's second signal, or its SIGKILL past the grace, ends a stuck one.
      if (cluster.isWorker) return void logger.info({ signal }, 'already stopping');
      logger.warn({ signal }, 'second signal: exiting without draining');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, signal === 'primary' ? 'the primary stops the instance' : 'signal received');
    // A worker still waiting for the primary's prepared answer has opened nothing: it exits at once
    // (the answer may never come: the primary stops preparing when it is stopped).
    if (!running && setup && !databasePrepared) process.exit(0);
    if (!running) return; // still starting: closed as soon as it has started
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
  handoff?.onStop(() => stop('primary'));
  // A worker drains on the primary's stop; Ctrl-C reaches the whole process group, the primary relays it.
  if (cluster.isWorker) process.on('SIGINT', () => undefined);
  else process.on('SIGINT', stop);

  try {
    const { startServer } = await import('./server');
    running = await startServer(config, options);
  } catch (err) {
    logger.fatal({ err }, 'start failed');
    process.stderr.write(`start failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
  if (stopping) {
    stopping = false;
    stop('SIGTERM');
  }
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
}

void main();
