import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import pino, { type Logger } from 'pino';
import type { Config } from './config';
import { createServices, type Services } from './services';
import { createApp } from './app';
import { openDatabase, parseDatabaseUrl, statementTimeoutMsFor } from './storage/database';
import { banner, prepareDatabase, type BootReport } from './boot';

// Defined in ./boot (which a cluster primary loads without the app); exported here as before.
export { banner, prepareDatabase, type BootReport };
import type { OpsState } from './http/routes/ops';
import type { WorkerLockRelay } from './cluster';
import { acceptWaitingConnections, type WorkerHandoff } from './connection-handoff';
import { answerClientErrors } from './http/client-error';
import { BEFORE_READY, BEFORE_READY_OPERATIONS, warmUp, writeExamples } from './warm-up';

/**
 * How long after a request ends the background work (the other postings' rehearsals, the
 * validator's compile) waits before it goes on. Not 25 ms: with WORKERS > 1 the primary hands
 * connections round-robin, so a client's sequential requests alternate between the workers and
 * each worker saw 25 ms of quiet between two of its own requests (while the other one served):
 * its next request then waited for a background step (decision 0040).
 */
const QUIET_MS = 250;

/**
 * Slow clients are cut (issue 29): a client that has not sent its whole request head within
 * HEADERS_TIMEOUT_MS, or its whole request within REQUEST_TIMEOUT_MS, is answered 408
 * REQUEST_TIMEOUT (src/http/client-error.ts) and disconnected. Both time the request's arrival
 * only, never the handler (a posting runs under DB_DEADLINE_MS), and an idle keep-alive connection
 * between requests is governed by keepAliveTimeout, not by them. Node checks the timeouts every
 * `connectionsCheckingInterval` (30 s by default, which would let a trickling client hold its
 * socket up to 40 s past a 10 s bound): a tenth of the headers timeout, 50 ms to 1 s, so a client
 * is cut within HEADERS_TIMEOUT_MS + 1 s. The check walks the open connections in C++: cheap.
 */
export function slowClientLimits(config: Pick<Config, 'headersTimeoutMs' | 'requestTimeoutMs'>): http.ServerOptions {
  return {
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(config.headersTimeoutMs / 10))),
  };
}

export interface RunningServer {
  port: number;
  services: Services;
  server: http.Server;
  /** Stops accepting, drains in-flight requests (up to config.shutdownGraceMs), closes the pool. */
  close(): Promise<void>;
  /** Settles when the idle-time start-up work is over: the other postings rehearsed and, with CONTRACT_PRECOMPILE, every operation's validator compiled (or failed to); /readyz is 200 earlier, once it is prepared. */
  ready: Promise<void>;
  /** What the start did to the database (key created, seeded). */
  boot: BootReport;
}

export interface StartServerOptions {
  /** Defaults to pino JSON lines on stdout at config.logLevel. */
  logger?: Logger;
  /** Print the human-readable banner (key, curl) on stderr. Default true. */
  banner?: boolean;
  /** Interface to listen on. Default: all interfaces. */
  host?: string;
  /**
   * The database was prepared already (a cluster worker: the primary migrated and seeded before
   * forking, or is preparing it while this worker loads: a promise, awaited before the database
   * is read): skip migrations, seeding and key creation, and report this.
   */
  prepared?: BootReport | Promise<BootReport>;
  /**
   * Listen only once the contract validator is prepared and the request path warmed (a cluster
   * worker, which then joins the port its siblings may already serve; default: listen first).
   */
  listenWhenPrepared?: boolean;
  /**
   * A cluster worker: whether a sibling already serves the port (src/cluster.ts `serviceOpen`).
   * Asked when the posting rehearsal before readiness would start: if so, this worker rehearses
   * only once it listens, while idle, with the other postings (src/warm-up.ts). The rehearsal is a
   * write transaction: on SQLite, before listening it would hold the write lock the sibling's
   * first postings wait for (a cold rehearsal on a busy machine: hundreds of milliseconds).
   */
  siblingsServe?: () => boolean;
  /** SQLite: the cluster primary runs the WAL checkpoints (storage/wal-checkpointer.ts); a cluster worker. */
  checkpointsElsewhere?: boolean;
  /** A cluster worker: the maintenance lock's relay to and from its siblings (src/cluster.ts). */
  lockRelay?: WorkerLockRelay;
  /**
   * A cluster worker: it does not listen; the primary owns the port and hands it connections
   * (src/connection-handoff.ts), and says when it hands it no more (the drain's first half).
   */
  handoff?: WorkerHandoff;
}

/**
 * Boots the whole server: database (migrate, seed an empty embedded one, keys), app, validator
 * warm-up, listen. `config.port` 0 picks a free port; the chosen one is in the result and in the
 * `listening` log line (field `port`).
 */
export async function startServer(config: Config, options: StartServerOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const target = parseDatabaseUrl(config.databaseUrl, { min: 0, max: config.dbPoolMax }, {
    checkpointsElsewhere: options.checkpointsElsewhere,
    statementTimeoutMs: statementTimeoutMsFor(config.dbDeadlineMs),
  });
  const knex = openDatabase(target, logger);
  let report: BootReport;
  try {
    report = options.prepared !== undefined ? await options.prepared : await prepareDatabase(config, target, knex, logger);
  } catch (err) {
    await knex.destroy().catch(() => undefined);
    throw err;
  }

  const services = createServices(config, logger, knex, target.engine);
  // What the installed build of the accounting database lacks, learnt by every process itself (a
  // cluster worker too) and logged once: requests naming it answer 422, not 500. Never fails the
  // start; read while the boot goes on, known before the app serves.
  const learning = services.installed.load();
  if (options.lockRelay) {
    services.lock.relay = options.lockRelay;
    options.lockRelay.serve((target) => services.lock.relayed(target));
  }
  // Before the lock is read (a held lock drops the pool): record this boot, free the previous boot's claims.
  await services.heartbeat.start();
  services.dataChanges.start();
  services.audit.start();
  // A service restarted while the maintenance lock is held drops its pool before serving anything.
  await services.lock.ensureLoaded();
  await learning;
  const app = createApp(services);
  const opsState = app.locals.opsState as OpsState;
  const server = http.createServer(slowClientLimits(config), app);
  server.keepAliveTimeout = 65_000; // above common load-balancer idle timeouts
  answerClientErrors(server, logger);
  const sockets = new Set<Socket>();
  const whenNoSockets: Array<() => void> = [];
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0) for (const fn of whenNoSockets.splice(0)) fn();
    });
  });
  const everySocketClosed = (): Promise<void> => (sockets.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => whenNoSockets.push(resolve)));
  /**
   * Per connection: requests served, requests in flight, and bytes read when its last answer
   * ended. A connection that has served a request, has none in flight and has read nothing since
   * waits idle for the next (keep-alive): a drain closes it. One accepted whose first request has
   * not arrived (or not been read) yet is not idle: it gets its answer. node's
   * closeIdleConnections (which http.Server.close calls) destroyed those too: a client whose
   * connection had been accepted got a reset, its request never answered.
   */
  const usage = new WeakMap<Socket, { served: number; active: number; readWhenIdle: number }>();
  const idleAfterServing = (socket: Socket): boolean => {
    const u = usage.get(socket);
    return u !== undefined && u.served > 0 && u.active === 0 && socket.bytesRead === u.readWhenIdle;
  };
  // Requests in flight and when the last one ended: the validator's background compile runs only
  // while the worker is idle (none in flight, none for QUIET_MS), so a burst of first requests
  // does not queue behind compiles between its requests. The quiet is counted from when the port
  // opens, not from the epoch: a cluster worker that opens while its sibling is already serving
  // the first requests would otherwise start its rehearsals at once, and on SQLite each holds the
  // write lock the sibling's first postings wait for (decision 0043).
  let inFlight = 0;
  let lastEnded = Number.POSITIVE_INFINITY;
  // While draining, answer the request in flight on each connection with Connection: close.
  // Before the app's own listener: a route that answers synchronously (/healthz) has written its
  // head by the time a listener after it runs.
  server.prependListener('request', (req, res) => {
    inFlight += 1;
    const socket = req.socket;
    const u = usage.get(socket) ?? { served: 0, active: 0, readWhenIdle: 0 };
    usage.set(socket, u);
    u.served += 1;
    u.active += 1;
    res.once('close', () => {
      inFlight -= 1;
      lastEnded = Date.now();
      u.active -= 1;
      u.readWhenIdle = socket.bytesRead;
    });
    const writeHead = res.writeHead;
    res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
      if (opsState.draining && !this.headersSent) this.setHeader('Connection', 'close');
      return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
    } as typeof res.writeHead;
  });

  const listen = async (): Promise<number> => {
    let port: number;
    if (options.handoff) {
      // A cluster worker: the primary owns the port. 'listening' starts what http.Server starts
      // when it listens: its connection tracking (the headers and request timeouts of slow clients).
      server.emit('listening');
      port = await options.handoff.serve(server);
    } else {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, options.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      port = (server.address() as AddressInfo).port;
    }
    lastEnded = Math.min(lastEnded, Date.now());
    logger.info({ port, database: target.display, engine: target.engine }, 'listening');
    if (options.banner !== false) process.stderr.write(banner(port, report));
    return port;
  };

  // The contract validator: the document and what every operation shares are prepared before
  // /readyz turns 200 (well under a second); every other operation compiles on its first request
  // (a few milliseconds), or, with CONTRACT_PRECOMPILE, in the background while the server is
  // idle. Not by default: compiled validators stay resident, and a worker that never serves most
  // operations carried all of them (decision 0046). A document that does not
  // compile turns readiness 503 (warmError).
  opsState.warming = true;
  const prepare = app.locals.prepareContract as (also?: readonly string[]) => Promise<{ operations: number; ms: number }>;
  const warm = app.locals.warmContract as (o: { idle: () => boolean }) => Promise<{ operations: number; ms: number }>;
  const failed = (err: unknown) => {
    opsState.warming = false;
    opsState.warmError = err instanceof Error ? err.message : String(err);
    logger.error({ err }, 'contract validator failed to compile openapi.yaml');
  };
  // Before ready too, the posting path's first-use cost (src/warm-up.ts: the engines of
  // BEFORE_READY once each in a rolled-back transaction, ~110 ms of CPU; the others once ready, while
  // idle). A failure is logged and the start goes on.
  let examples: Map<string, unknown> | undefined;
  const warmPostings = (only: (route: string) => boolean, label: string, idle?: () => boolean, stopping: () => boolean = () => false): Promise<string[]> =>
    Promise.resolve()
      .then(() => warmUp(services, logger, { only, examples: (examples ??= writeExamples()), stopping: () => opsState.draining || stopping(), ...(idle ? { idle } : {}) }))
      .then(
        ({ tried, ...report }) => (logger.info(report, label), tried),
        (err) => (logger.warn({ err }, 'warm-up failed (the start goes on)'), []),
      );
  // The rehearsal first, then the validator: the rehearsal is a write transaction, and on SQLite a
  // cluster worker that is still starting while its sibling already serves (the port opens with
  // the first ready worker) would hold the write lock a first posting there waits for. Done
  // before its validator (~120 ms of CPU), it is usually over before the first sibling opens; a
  // worker that finds the port open already (siblingsServe) rehearses once it listens instead;
  // asked before each rehearsal (BEFORE_READY has two), so one that opens meanwhile stops the rest.
  const rehearsedBeforeReady = new Set<string>();
  const siblingsServe = () => options.siblingsServe?.() === true;
  const preparing = (): Promise<boolean> =>
    Promise.resolve()
      .then(() => {
        if (siblingsServe()) return;
        return warmPostings((route) => BEFORE_READY.has(route), 'request path warmed', undefined, siblingsServe).then((tried) => tried.forEach((route) => rehearsedBeforeReady.add(route)));
      })
      .then(() => prepare(BEFORE_READY_OPERATIONS))
      .then(
        (prepared) => {
          logger.info(prepared, 'contract validator prepared');
          opsState.warming = false;
          return true;
        },
        (err) => (failed(err), false),
      );
  // One process: the port opens first (/readyz answers 503 meanwhile). A cluster worker listens
  // once prepared (or failed, to answer why): the primary hands connections only to workers that
  // listen, so no request waits behind a worker that is still compiling while another is ready;
  // the first prepared worker opens the port (src/cluster.ts) and the others join it.
  let prepared: Promise<boolean>;
  let port: number;
  if (options.listenWhenPrepared) {
    await (prepared = preparing());
    port = await listen();
  } else {
    port = await listen();
    prepared = preparing();
  }
  const idle = () => inFlight === 0 && Date.now() - lastEnded >= QUIET_MS;
  const warmed = prepared.then(async (ok) => {
    if (!ok) return;
    // The other postings' first use (all of them in a worker that joined an open port), then
    // (CONTRACT_PRECOMPILE) every operation's validator, while idle.
    await warmPostings((route) => !rehearsedBeforeReady.has(route), 'request path warmed (the rest)', idle);
    if (!config.contractPrecompile) return;
    return warm({ idle }).then((result) => logger.info(result, 'contract validator compiled'), failed);
  });

  // Change detection and webhook delivery (one detector across instances: a lease in the database).
  services.events.start();

  /**
   * One process stops accepting: once the connections the kernel had completed are accepted
   * (acceptWaitingConnections), the listening socket closes and new connections are refused. net's
   * close, not http's: http.Server.close first destroys every connection without a request in
   * flight, those just accepted included.
   */
  const stopListening = async (): Promise<void> => {
    if (!server.listening) return;
    await acceptWaitingConnections(server, config.shutdownGraceMs);
    net.Server.prototype.close.call(server);
  };

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      opsState.draining = true;
      const started = Date.now();
      logger.info({ inFlightConnections: sockets.size, graceMs: config.shutdownGraceMs }, 'shutting down: draining in-flight requests');
      // Keep-alive connections idle after serving are closed now and as others become idle; every
      // other accepted connection gets the answer to its request (with Connection: close).
      const closeIdle = () => {
        for (const socket of sockets) if (idleAfterServing(socket)) socket.destroy();
      };
      const reaper = setInterval(closeIdle, 50);
      closeIdle();
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), config.shutdownGraceMs);
      });
      // No new connection after this: the port is closed (one process), or the primary hands this
      // worker nothing more (a cluster worker: the connections it accepted before are all here).
      const noMoreConnections = options.handoff ? options.handoff.over() : stopListening();
      const outcome = await Promise.race([noMoreConnections.then(everySocketClosed).then(() => 'drained' as const), grace]);
      clearTimeout(timer);
      clearInterval(reaper);
      if (outcome === 'timeout') {
        logger.warn({ openConnections: sockets.size }, 'grace period over: closing the remaining connections');
        for (const socket of sockets) socket.destroy();
      }
      // No connection is left: http's close now only closes the port if it is still open and stops
      // the slow-client checks.
      server.close();
      await services.events.stop();
      services.lock.stop();
      services.heartbeat.stop();
      services.dataChanges.stop();
      services.audit.stop();
      // Entries still waiting (written while locked) go in now, if the pool is there.
      await services.audit.flush();
      await services.knex.destroy();
      logger.info({ ms: Date.now() - started, outcome }, 'stopped');
    })();
    return closing;
  };

  return { port, services, server, close, ready: warmed, boot: report };
}
