/**
 * WORKERS server processes on one port (node:cluster). The primary forks the workers at once and,
 * meanwhile, prepares the database once (migrations, seeding an empty embedded database, the demo
 * key) and closes its connection; it holds no pool while serving. A worker loads its modules while
 * the primary prepares, and touches the database only after the primary's `prepared` message
 * (start-up time: the two overlap instead of adding up). A worker joins the rotation as soon as it
 * is prepared (src/server.ts `listenWhenPrepared`): the port opens with the first ready worker and
 * the others join it (docs/decisions/0330-the-port-opens-with-the-first-ready-worker.md).
 * The primary owns the listening socket and hands the connections round-robin to the workers in
 * the rotation (src/connection-handoff.ts).
 * Each worker is a whole server (src/server.ts) with its own pool, caches, rate-limit buckets and
 * instance name (`INSTANCE_ID/w<n>`); the state that must agree between them lives in the
 * database (docs/deployment.md).
 *
 * A worker that dies is replaced (same index, so the same instance name: the new boot frees the
 * dead one's idempotency claims at start). Before the port has opened, a worker that fails to start
 * stops the whole start (exit 1): the next one would fail the same way. Once the instance serves,
 * a worker that dies before it is ready is replaced too, unless MAX_START_FAILURES_IN_A_ROW workers
 * did so with none ready in between (a crash loop: exit 1; docs/decisions/0471).
 * SIGTERM / SIGINT to the primary stop the instance: it stops accepting, hands every connection it
 * accepted to a worker, then tells every worker `stop`; each answers what it holds and exits, and
 * the primary exits once all have (a second signal kills them at once). A worker's own SIGTERM
 * (the same signal reaching every process of the group) is the same stop
 * (docs/decisions/0470-the-primary-owns-the-port-and-drains-it.md).
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { ConnectionDispatcher, MAX_HELD_CONNECTIONS } from './connection-handoff';
import type { Config } from './config';
// Types only: the primary loads the storage layer (knex) after it has forked the workers.
import type { BootReport } from './boot';
import { perWorkerRate } from './http/middleware/rate-limit';
import { workerExecArgv } from './heap-limit';
// Types only (the primary does not load the storage layer).
import type { LockRelay, LockTarget } from './storage/lock-store';

export interface WorkerSetup {
  /** 1..workers, stable across replacements. */
  index: number;
  workers: number;
  /** Settles when the primary has prepared the database (its `prepared` message): only then may the worker read it. */
  boot: Promise<BootReport>;
  /**
   * Whether the port is open, i.e. a sibling already serves (the primary's `open` message). A
   * worker that joins an open service rehearses its posting path only once it listens (src/server.ts
   * `siblingsServe`): a rehearsal before would hold SQLite's write lock while the sibling serves.
   */
  serviceOpen: () => boolean;
}

/**
 * The handshake by which a worker learns that the database is migrated and seeded: the worker asks
 * once it listens for the answer (a message sent before a process has a 'message' listener is
 * lost), the primary answers when it has prepared the database, at once if it has already.
 */
interface AskPreparedMessage {
  type: 'prepared?';
}
interface PreparedMessage {
  type: 'prepared';
  seeded: boolean;
}
/** The first worker listens: the port is open (WorkerSetup.serviceOpen). */
interface OpenMessage {
  type: 'open';
}

/**
 * The maintenance lock's relay (docs/decisions/0200-lock-takes-effect-before-it-answers.md): the
 * worker that recorded a lock or un-lock asks the primary to tell its siblings (`lock-changed`);
 * the primary sends each live sibling `lock-refresh`; each re-reads the lock, applies it (for a
 * lock: gate closed, requests inside ended, pool destroyed) and answers `lock-refreshed`; once all
 * have (or have exited), the primary answers the origin `lock-relayed`. The lock answers after that.
 */
interface LockChangedMessage {
  type: 'lock-changed';
  id: number;
  /** The lock about to be recorded (apply it), or none (re-read the lock). */
  target?: LockTarget;
}
interface LockRefreshMessage {
  type: 'lock-refresh';
  id: string;
  target?: LockTarget;
}
interface LockRefreshedMessage {
  type: 'lock-refreshed';
  id: string;
}
interface LockRelayedMessage {
  type: 'lock-relayed';
  id: number;
}

/** The primary forgets a relay whose siblings never answered after this long (the origin gave up long before). */
const LOCK_RELAY_FORGET_MS = 120_000;

/** The worker's side of the relay: `changed` for its own lock and un-lock, `serve` to apply its siblings'. */
export interface WorkerLockRelay extends LockRelay {
  /** From now on a sibling's change is applied with `apply` before it is answered (until then, answered at once). */
  serve(apply: (target?: LockTarget) => Promise<void>): void;
}

export function workerLockRelay(channel: Pick<NodeJS.Process, 'on' | 'off' | 'send'> = process): WorkerLockRelay {
  let apply: ((target?: LockTarget) => Promise<void>) | undefined;
  let next = 0;
  const answer = (id: string) => channel.send?.({ type: 'lock-refreshed', id } satisfies LockRefreshedMessage);
  channel.on('message', (message: Partial<LockRefreshMessage> | undefined) => {
    if (message?.type !== 'lock-refresh' || typeof message.id !== 'string') return;
    const id = message.id;
    // Not serving yet: this worker reads the lock before it listens (and re-reads it every LOCK_POLL_MS).
    if (!apply) return void answer(id);
    apply(message.target).then(
      () => answer(id),
      () => answer(id),
    );
  });
  return {
    serve(fn) {
      apply = fn;
    },
    changed(timeoutMs, target) {
      if (!channel.send) return Promise.resolve(true);
      const id = (next += 1);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => done(false), timeoutMs);
        const onMessage = (message: Partial<LockRelayedMessage> | undefined) => {
          if (message?.type === 'lock-relayed' && message.id === id) done(true);
        };
        const done = (ok: boolean) => {
          clearTimeout(timer);
          channel.off('message', onMessage);
          resolve(ok);
        };
        channel.on('message', onMessage);
        channel.send!({ type: 'lock-changed', id, ...(target ? { target } : {}) } satisfies LockChangedMessage);
      });
    },
  };
}

/** The primary's side of the relay: which siblings a lock change still waits for. */
export class LockRelayHub {
  private readonly pending = new Map<string, { origin: number; id: number; waiting: Set<number>; timer: NodeJS.Timeout }>();

  constructor(private readonly workers: () => ReadonlyMap<number, Pick<Worker, 'send'>>) {}

  /** Worker `origin` is changing the lock: tell every other worker. */
  changed(origin: number, id: number, target?: LockTarget): void {
    const key = `${origin}:${id}`;
    const siblings = [...this.workers().keys()].filter((i) => i !== origin);
    const timer = setTimeout(() => this.finish(key), LOCK_RELAY_FORGET_MS);
    timer.unref();
    this.pending.set(key, { origin, id, waiting: new Set(siblings), timer });
    for (const i of siblings) this.send(i, { type: 'lock-refresh', id: key, ...(target ? { target } : {}) } satisfies LockRefreshMessage);
    this.settle(key);
  }

  /** Worker `index` applied the change `key`. */
  refreshed(index: number, key: string): void {
    this.pending.get(key)?.waiting.delete(index);
    this.settle(key);
  }

  /** Worker `index` exited: nothing waits for it, and its own relays are dropped. */
  exited(index: number): void {
    for (const [key, entry] of this.pending) {
      if (entry.origin === index) {
        clearTimeout(entry.timer);
        this.pending.delete(key);
        continue;
      }
      entry.waiting.delete(index);
      this.settle(key);
    }
  }

  private settle(key: string): void {
    const entry = this.pending.get(key);
    if (entry && entry.waiting.size === 0) this.finish(key);
  }

  private finish(key: string): void {
    const entry = this.pending.get(key);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.pending.delete(key);
    this.send(entry.origin, { type: 'lock-relayed', id: entry.id } satisfies LockRelayedMessage);
  }

  private send(index: number, message: LockRefreshMessage | LockRelayedMessage): void {
    try {
      this.workers().get(index)?.send(message);
    } catch {
      // The worker's channel closed (it is exiting): its exit settles the relay.
    }
  }
}

/** What the primary tells a worker: its index and count through the environment, the database's readiness by message. */
export function workerSetup(env: NodeJS.ProcessEnv, channel: Pick<NodeJS.Process, 'on' | 'off' | 'send'> = process): WorkerSetup {
  const index = Number(env.WORKER_INDEX);
  const workers = Number(env.WORKER_COUNT);
  if (!Number.isInteger(index) || index < 1 || !Number.isInteger(workers) || workers < 1) throw new Error('a cluster worker needs WORKER_INDEX and WORKER_COUNT');
  let open = false;
  const onOpen = (message: Partial<OpenMessage> | undefined) => {
    if (message?.type !== 'open') return;
    open = true;
    channel.off('message', onOpen);
  };
  // Before `prepared?` is sent: the primary tells a worker that the port is open only once it has asked.
  channel.on('message', onOpen);
  const boot = new Promise<BootReport>((resolve) => {
    const onMessage = (message: Partial<PreparedMessage> | undefined) => {
      if (message?.type !== 'prepared') return;
      channel.off('message', onMessage);
      resolve({ seeded: message.seeded === true });
    };
    channel.on('message', onMessage);
    channel.send?.({ type: 'prepared?' } satisfies AskPreparedMessage);
  });
  return { index, workers, boot, serviceOpen: () => open };
}

/** A worker's configuration: its own instance name and its share of the rate limit and of the failed-authentication bound. */
export function workerConfig(config: Config, setup: WorkerSetup): Config {
  return {
    ...config,
    workers: setup.workers,
    instanceId: `${config.instanceId}/w${setup.index}`,
    rateLimitPerMinute: perWorkerRate(config.rateLimitPerMinute, setup.workers),
    // Counted in each worker's memory like the rate limit: each worker its share (docs/decisions/0250-auth-failure-throttle.md).
    authFailuresPerMinute: perWorkerRate(config.authFailuresPerMinute, setup.workers),
  };
}

/**
 * Once the instance serves, workers that die before they are ready are replaced; this many in a
 * row, none ready in between, stop the instance (exit 1): a crash loop (a bad deployment, a
 * database that refuses every new worker) is not retried for ever.
 */
export const MAX_START_FAILURES_IN_A_ROW = 3;

export async function runPrimary(config: Config, logger: Logger): Promise<void> {
  const log = logger.child({ role: 'primary' });
  /** Set once the database is prepared: then told to every worker that asked, also to one forked later. */
  let report: BootReport | undefined;
  /** Loaded after the fork (see above); set before any worker can listen. */
  let banner: ((port: number, report: BootReport) => string) | undefined;
  let database: { display: string; engine: string } | undefined;
  const asked = new Set<Worker>();
  const tellPrepared = (worker: Worker): void => {
    if (!report || !asked.delete(worker)) return;
    worker.send({ type: 'prepared', seeded: report.seeded } satisfies PreparedMessage);
  };
  /** Workers that asked `prepared?` (they listen for messages); once the port is open, each is told so. */
  const listeningForMessages = new Set<Worker>();
  let opened = false;
  const tellOpen = (worker: Worker): void => {
    if (!opened || !listeningForMessages.has(worker)) return;
    try {
      worker.send({ type: 'open' } satisfies OpenMessage);
    } catch {
      // The worker's channel closed (it is exiting).
    }
  };

  const workers = new Map<number, Worker>();
  const lockRelay = new LockRelayHub(() => workers);
  /** Workers in the rotation (or that were, until they left or died): the banner waits for all. */
  const listening = new Set<number>();
  /** Connections shed since the last warning (logged at most once a second: a flood must not flood the log). */
  const shed = { full: 0, 'too-old': 0, loggedAt: 0 };
  const dispatcher = new ConnectionDispatcher({
    port: config.port,
    acceptForMs: config.shutdownGraceMs,
    holdForMs: config.headersTimeoutMs,
    onShed: (reason, count) => {
      shed[reason] += count;
      if (Date.now() - shed.loggedAt < 1000) return;
      log.warn({ full: shed.full, tooOld: shed['too-old'], serving: dispatcher.servingCount, maxHeld: MAX_HELD_CONNECTIONS, holdForMs: config.headersTimeoutMs }, 'no worker takes connections: closed some unserved');
      shed.full = 0;
      shed['too-old'] = 0;
      shed.loggedAt = Date.now();
    },
  });
  /**
   * Workers that asked to leave while no sibling served: answered `left` once one does (or `stop`),
   * or when their timer fires (half of SHUTDOWN_GRACE_MS): the worker exits when its grace ends, and
   * a connection handed to it after that would be reset; from then on connections wait in the
   * primary (within decision 0476's bounds) until a replacement serves.
   */
  const leaveWhenReplaced = new Map<number, NodeJS.Timeout>();
  const leaveNow = (index: number): void => {
    clearTimeout(leaveWhenReplaced.get(index));
    leaveWhenReplaced.delete(index);
    dispatcher.remove(index);
    // After every connection handed to it so far (one channel, in order).
    send(workers.get(index), { type: 'left' });
  };
  /** Workers that died before they were ready since the last one was ready (the crash-loop bound). */
  let startFailuresInARow = 0;
  let announced = false;
  let stopping = false;
  let exitCode = 0;

  const send = (worker: Worker | undefined, message: object): void => {
    try {
      worker?.send(message);
    } catch {
      // The worker's channel closed (it is exiting).
    }
  };

  /** A worker asks to leave (its own SIGTERM): hand it nothing more once a sibling serves. */
  const leave = (index: number, worker: Worker): void => {
    // The instance stops too (the same signal reached every process): one stop, `stop` answers it.
    if (stopping) return;
    const sibling = [...listening].some((i) => i !== index && dispatcher.has(i) && !leaveWhenReplaced.has(i));
    if (!dispatcher.has(index) || sibling) {
      dispatcher.remove(index);
      // After every connection handed to it so far (one channel, in order).
      send(worker, { type: 'left' });
      return;
    }
    if (leaveWhenReplaced.has(index)) return;
    // Half its grace: what it was handed until then is answered within the other half.
    const timer = setTimeout(() => {
      if (stopping || !leaveWhenReplaced.has(index)) return;
      log.warn({ worker: index, afterMs: Math.floor(config.shutdownGraceMs / 2) }, 'the last serving worker leaves: connections wait in the primary until a replacement serves');
      leaveNow(index);
    }, Math.floor(config.shutdownGraceMs / 2));
    timer.unref();
    leaveWhenReplaced.set(index, timer);
  };

  /** Worker `index` is prepared: it joins the rotation (the first one opens the port). */
  const join = (index: number, worker: Worker): void => {
    startFailuresInARow = 0;
    if (stopping) {
      // Too late to serve: its start completes (the port it would have had) and it stops.
      send(worker, { type: 'serving', port: config.port });
      send(worker, { type: 'stop' });
      return;
    }
    dispatcher.open().then(
      (port) => {
        send(worker, { type: 'serving', port });
        if (stopping || !workers.has(index)) {
          send(worker, { type: 'stop' });
          return;
        }
        dispatcher.add(index, worker);
        listening.add(index);
        for (const i of [...leaveWhenReplaced.keys()]) if (i !== index) leaveNow(i);
        // The first worker in the rotation opens the port: the service answers from then on,
        // while its siblings finish starting and join one by one.
        if (!opened) {
          opened = true;
          log.info({ port, worker: index, workers: config.workers }, 'open: the first worker listens, the others join when ready');
          for (const w of workers.values()) if (w !== worker) tellOpen(w);
        }
        if (!announced && listening.size === config.workers && report && banner) {
          announced = true;
          log.info({ port, workers: config.workers, database: database?.display, engine: database?.engine }, 'listening');
          process.stderr.write(banner(port, report));
        }
      },
      (err: unknown) => {
        // Nothing serves (the port never opened): the start fails, as when the database cannot be prepared.
        log.fatal({ err, port: config.port }, 'start failed: the port cannot be opened');
        process.stderr.write(`start failed: ${err instanceof Error ? err.message : String(err)}\n`);
        stopping = true;
        for (const w of workers.values()) w.process.kill('SIGKILL');
        process.exit(1);
      },
    );
  };

  const fork = (index: number): void => {
    const worker = cluster.fork({ WORKER_INDEX: String(index), WORKER_COUNT: String(config.workers) });
    workers.set(index, worker);
    let ready = false;
    worker.on('message', (message: { type?: string; port?: number; id?: unknown; target?: LockTarget }) => {
      switch (message?.type) {
        case 'taken':
          dispatcher.taken(index);
          return;
        case 'lock-changed':
          if (typeof message.id === 'number') lockRelay.changed(index, message.id, message.target);
          return;
        case 'lock-refreshed':
          if (typeof message.id === 'string') lockRelay.refreshed(index, message.id);
          return;
        case 'prepared?':
          asked.add(worker);
          listeningForMessages.add(worker);
          tellPrepared(worker);
          tellOpen(worker);
          return;
        case 'leaving':
          leave(index, worker);
          return;
        case 'ready':
          ready = true;
          join(index, worker);
          return;
      }
    });
    worker.on('exit', (code, signal) => {
      workers.delete(index);
      lockRelay.exited(index);
      asked.delete(worker);
      listeningForMessages.delete(worker);
      listening.delete(index);
      clearTimeout(leaveWhenReplaced.get(index));
      leaveWhenReplaced.delete(index);
      // A connection handed to it and not taken goes to a sibling.
      dispatcher.died(index);
      if (stopping) {
        log.info({ worker: index, code, signal }, 'worker stopped');
        // A worker still loading when the stop came dies by the SIGTERM it got then: it had nothing to drain.
        const clean = code === 0 || (!ready && signal === 'SIGTERM');
        if (!clean) exitCode = 1;
        if (workers.size === 0) {
          log.info({ exitCode }, 'every worker stopped');
          process.exit(exitCode);
        }
        return;
      }
      if (!ready) {
        startFailuresInARow += 1;
        // Before the port opened nothing serves: the next worker would fail the same way.
        if (!opened) {
          log.fatal({ worker: index, code, signal }, 'a worker failed to start; stopping');
          stop('SIGTERM', 1);
          return;
        }
        // The instance serves: replace it, as one that dies later, unless they keep failing.
        if (startFailuresInARow >= MAX_START_FAILURES_IN_A_ROW) {
          log.fatal({ worker: index, code, signal, failures: startFailuresInARow }, 'workers keep failing to start; stopping');
          stop('SIGTERM', 1);
          return;
        }
        log.error({ worker: index, code, signal, failures: startFailuresInARow }, 'a worker failed to start while the instance serves; starting a new one');
      } else {
        log.error({ worker: index, code, signal }, 'worker exited; starting a new one');
      }
      setTimeout(() => {
        if (!stopping) fork(index);
      }, 500);
    });
  };

  /** SQLite: the WAL checkpoints run here, not in a worker's COMMIT (storage/wal-checkpointer.ts). */
  let checkpointer: { stop(): void } | undefined;

  const stop = (signal: NodeJS.Signals, code = 0): void => {
    checkpointer?.stop();
    checkpointer = undefined;
    if (stopping) {
      log.warn({ signal }, 'second signal: killing the workers without draining');
      for (const w of workers.values()) w.process.kill('SIGKILL');
      process.exit(1);
    }
    stopping = true;
    exitCode = code;
    log.info({ signal, workers: workers.size }, 'signal received: draining every worker');
    if (workers.size === 0) process.exit(exitCode);
    // A worker still loading its modules reads no message yet: the signal stops it.
    for (const w of workers.values()) if (!listeningForMessages.has(w)) w.process.kill('SIGTERM');
    // New connections are refused from now on; those accepted go to the workers first, then `stop`
    // (behind them on each channel): every worker answers what it holds, then exits.
    void dispatcher.stop().then(() => {
      for (const w of workers.values()) if (listeningForMessages.has(w)) send(w, { type: 'stop' });
    });
    // Workers drain within SHUTDOWN_GRACE_MS; a worker stuck past it (plus a margin) is killed.
    setTimeout(() => {
      log.error({ workers: workers.size }, 'workers did not stop in time; killing them');
      for (const w of workers.values()) w.process.kill('SIGKILL');
    }, config.shutdownGraceMs + 5000).unref();
  };
  process.on('SIGTERM', (s) => stop(s));
  process.on('SIGINT', (s) => stop(s));

  const execArgv = workerExecArgv(process.execArgv, process.env.NODE_OPTIONS, config.heapLimitMb);
  cluster.setupPrimary({ execArgv });
  log.info({ workers: config.workers, execArgv }, 'starting workers');
  for (let i = 1; i <= config.workers; i += 1) fork(i);

  // While the workers load their modules. They wait for this before reading the database, so
  // migrations still run once, here, before any worker serves.
  const { banner: bannerText, prepareDatabase } = await import('./boot');
  const { openDatabase, parseDatabaseUrl, statementTimeoutMsFor } = await import('./storage/database');
  banner = bannerText;
  const target = parseDatabaseUrl(config.databaseUrl, { min: 0, max: 1 }, { statementTimeoutMs: statementTimeoutMsFor(config.dbDeadlineMs) });
  database = { display: target.display, engine: target.engine };
  const knex = openDatabase(target, log);
  try {
    report = await prepareDatabase(config, target, knex, log);
  } catch (err) {
    log.fatal({ err }, 'start failed');
    process.stderr.write(`start failed: ${err instanceof Error ? err.message : String(err)}\n`);
    stopping = true;
    for (const w of workers.values()) w.process.kill('SIGKILL');
    process.exit(1);
  } finally {
    await knex.destroy().catch(() => undefined);
  }
  if (target.engine === 'sqlite' && target.file && target.file !== ':memory:' && !stopping) {
    const { WalCheckpointer, WAL_CHECKPOINT_EVERY_MS } = await import('./storage/wal-checkpointer');
    const walCheckpointer = new WalCheckpointer({ file: target.file, logger: log });
    walCheckpointer.start();
    checkpointer = walCheckpointer;
    log.info({ everyMs: WAL_CHECKPOINT_EVERY_MS }, 'WAL checkpoints run in the primary');
  }
  for (const worker of workers.values()) tellPrepared(worker);
}
