/**
 * How the connections of the one port reach the cluster's workers (WORKERS > 1), and how a stop
 * drains them (docs/decisions/0470-the-primary-owns-the-port-and-drains-it.md).
 *
 * The primary owns the listening socket. It accepts each connection (paused: it reads nothing)
 * and hands it to one worker over the IPC channel, one at a time per worker: the worker answers
 * `taken`, the primary closes its own copy and hands that worker the next (round-robin over the
 * workers that are free, as node:cluster's own scheduling does). Unlike node:cluster's, this one
 * can stop accepting without dropping what it has accepted: on a stop the primary closes the
 * listening socket first (new connections are refused), hands every connection it still holds to
 * a worker, and only then tells the workers `stop`. The channel is ordered, so a worker has
 * received every connection meant for it before it reads `stop` (or `left`, below): it answers
 * each, and only then exits. A worker that dies with a connection not yet taken does not lose it:
 * the primary hands it to another.
 *
 * A worker stopped on its own (SIGTERM to it alone, or to every process of the group at once, as
 * systemd's KillMode=control-group does) asks to leave; the primary hands it nothing more once a
 * sibling serves and answers `left`; the last serving worker keeps serving until another one
 * serves, the primary stops (then `stop`): one stop, not two, or half its grace has passed
 * (src/cluster.ts; docs/decisions/0477).
 */
import net, { type Socket } from 'node:net';
import type { Worker } from 'node:cluster';
import type http from 'node:http';

/** Worker -> primary: prepared, it takes connections (the answer is `serving` with the port). */
interface ReadyMessage {
  type: 'ready';
}
/** Primary -> worker: it is in the rotation; the port it serves. */
interface ServingMessage {
  type: 'serving';
  port: number;
}
/** Primary -> worker, with the socket: a connection for it. */
interface ConnectionMessage {
  type: 'connection';
}
/** Worker -> primary: it has the connection (the primary closes its own copy and may hand it the next). */
interface TakenMessage {
  type: 'taken';
}
/** Worker -> primary: it stops; hand it nothing more. */
interface LeavingMessage {
  type: 'leaving';
}
/** Primary -> worker: nothing more comes (every connection for it is ahead of this on the channel). */
interface LeftMessage {
  type: 'left';
}
/** Primary -> worker: the instance stops; nothing more comes (as `left`); drain and exit. */
interface StopMessage {
  type: 'stop';
}

type HandoffMessage = ReadyMessage | ServingMessage | ConnectionMessage | TakenMessage | LeavingMessage | LeftMessage | StopMessage;

/** The worker's side (src/server.ts `handoff`, src/main.ts). */
export interface WorkerHandoff {
  /** In the rotation from now on: each connection the primary hands over is served by `server`. Resolves with the port. */
  serve(server: http.Server): Promise<number>;
  /** Settles once the primary hands this worker nothing more (asks to leave first, unless the primary stopped it). */
  over(): Promise<void>;
  /** The primary stops the instance: `fn` runs once (at once when the stop came before). */
  onStop(fn: () => void): void;
}

type Channel = Pick<NodeJS.Process, 'on' | 'off' | 'send'>;

export function workerHandoff(channel: Channel = process): WorkerHandoff {
  let server: http.Server | undefined;
  let stopped = false;
  let finished = false;
  let asked = false;
  const stopListeners: Array<() => void> = [];
  const overListeners: Array<() => void> = [];
  const finish = () => {
    if (finished) return;
    finished = true;
    for (const fn of overListeners.splice(0)) fn();
  };
  const send = (message: HandoffMessage) => {
    try {
      channel.send?.(message);
    } catch {
      finish(); // the primary is gone: nothing more comes
    }
  };
  let servingPort: ((port: number) => void) | undefined;
  channel.on('message', (message: Partial<HandoffMessage> | undefined, handle?: unknown) => {
    switch (message?.type) {
      case 'connection':
        if (!handle) return;
        // Taken before anything is read from it: the primary closes its copy on this answer.
        // `taken` must go in this same callback, never later (after an await, a timer, a check):
        // the socket reads from here on, and until `taken` the primary treats the connection as
        // its own, so a worker dying in between would have it handed on to a sibling without the
        // request bytes this one had already read (ConnectionDispatcher.died).
        if (server) server.emit('connection', handle as Socket);
        else (handle as Socket).destroy();
        send({ type: 'taken' });
        return;
      case 'serving':
        servingPort?.(Number(message.port));
        return;
      case 'left':
        finish();
        return;
      case 'stop':
        finish();
        if (stopped) return;
        stopped = true;
        for (const fn of stopListeners.splice(0)) fn();
        return;
    }
  });
  // The primary is gone (its channel closed): no connection can come any more.
  channel.on('disconnect', finish);
  return {
    serve(s) {
      server = s;
      return new Promise<number>((resolve) => {
        servingPort = resolve;
        send({ type: 'ready' });
      });
    },
    over() {
      if (finished || !channel.send) return Promise.resolve();
      const done = new Promise<void>((resolve) => overListeners.push(resolve));
      if (!asked && !stopped) {
        asked = true;
        send({ type: 'leaving' });
      }
      return done;
    },
    onStop(fn) {
      if (stopped) fn();
      else stopListeners.push(fn);
    },
  };
}

/**
 * Before a listening socket closes: accepts the connections the kernel has completed and queued
 * (the client sees them connected; closing the socket would reset them). libuv accepts one
 * connection a turn of the event loop, so a busy process holds a queue that a turn or two does not
 * empty (one process under load: 28 connections, sent up to 160 ms before the SIGTERM, were reset
 * when the port closed two turns after it). Returns after a whole turn that accepted nothing, or
 * after `maxMs` (connections keep coming until the socket is closed).
 */
export async function acceptWaitingConnections(server: net.Server, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  let accepted = 0;
  const count = () => {
    accepted += 1;
  };
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  server.on('connection', count);
  try {
    // To the end of this turn first: the loop then polls (and accepts) once between two checks.
    await turn();
    for (;;) {
      const before = accepted;
      await turn();
      if (accepted === before || Date.now() >= until) return;
    }
  } finally {
    server.off('connection', count);
  }
}

/**
 * Connections the primary holds at most while no worker takes them (each costs it a file
 * descriptor): one accepted beyond this is closed at once. Enough for a replacement's gap (about
 * 0.6 to 1.8 s with every worker gone) at a few hundred new connections a second; beyond that the
 * primary sheds load instead of accumulating it (docs/decisions/0476).
 */
export const MAX_HELD_CONNECTIONS = 256;

/** What a `ready` answer needs to know about the listening socket. */
export interface DispatcherOptions {
  port: number;
  /** Interface to listen on; default all. */
  host?: string;
  /** How long a stop keeps accepting what the kernel had queued at most (SHUTDOWN_GRACE_MS). */
  acceptForMs: number;
  /**
   * How long an accepted connection waits in the primary for a worker at most (HEADERS_TIMEOUT_MS:
   * a client that cannot send its request head within it would be answered 408 anyway); older, it is closed.
   */
  holdForMs: number;
  /** Connections closed unserved: `full` (MAX_HELD_CONNECTIONS held already) or `too-old` (held holdForMs). */
  onShed?: (reason: 'full' | 'too-old', count: number) => void;
}

/**
 * The primary's side: the listening socket and the rotation. Workers are added when they are ready,
 * removed when they leave or die; `stop` closes the socket and says when every accepted connection
 * has been handed over.
 */
export class ConnectionDispatcher {
  private readonly server = net.createServer({ pauseOnConnect: true, noDelay: true });
  private listening: Promise<number> | undefined;
  /** Accepted and not yet handed over, oldest first. */
  private readonly queue: Socket[] = [];
  /** In the rotation (ready, not leaving). */
  private readonly serving = new Map<number, Worker>();
  /** In the rotation with no connection in flight to them, in the order they became free. */
  private readonly free = new Map<number, Worker>();
  /** The connection in flight to each worker until it answers `taken`. */
  private readonly inFlight = new Map<number, Socket>();
  private stopping = false;
  private emptied: Array<() => void> = [];
  /** When each held connection was accepted (the age bound). */
  private readonly acceptedAt = new WeakMap<Socket, number>();
  /** Closes held connections older than holdForMs; runs only while something is held. */
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly options: DispatcherOptions) {
    this.server.on('connection', (socket) => {
      // Until a worker has taken it, a connection whose client gives up must not break the primary.
      socket.on('error', () => undefined);
      if (this.queue.length >= MAX_HELD_CONNECTIONS) {
        socket.destroy();
        this.options.onShed?.('full', 1);
        return;
      }
      this.acceptedAt.set(socket, Date.now());
      this.queue.push(socket);
      this.dispatch();
    });
  }

  /** Listens (once); resolves with the port. */
  open(): Promise<number> {
    this.listening ??= new Promise<number>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.options.host, () => {
        this.server.off('error', reject);
        resolve((this.server.address() as net.AddressInfo).port);
      });
    });
    return this.listening;
  }

  get servingCount(): number {
    return this.serving.size;
  }

  has(index: number): boolean {
    return this.serving.has(index);
  }

  /** Worker `index` takes connections from now on. */
  add(index: number, worker: Worker): void {
    this.serving.set(index, worker);
    if (!this.inFlight.has(index)) this.free.set(index, worker);
    this.dispatch();
  }

  /** Worker `index` takes no more (it leaves): a connection in flight to it is still its own (it is ahead on the channel). */
  remove(index: number): void {
    this.serving.delete(index);
    this.free.delete(index);
    this.settle();
  }

  /** Worker `index` died: a connection it had not taken goes to another worker. */
  died(index: number): void {
    const socket = this.inFlight.get(index);
    this.inFlight.delete(index);
    this.serving.delete(index);
    this.free.delete(index);
    if (socket && !socket.destroyed) this.queue.unshift(socket);
    this.dispatch();
  }

  /** Worker `index` has the connection handed to it: the primary's copy is closed, and the worker gets the next. */
  taken(index: number): void {
    const socket = this.inFlight.get(index);
    this.inFlight.delete(index);
    // Closes this process's descriptor only: the connection lives on in the worker.
    socket?.destroy();
    const worker = this.serving.get(index);
    if (worker) this.free.set(index, worker);
    this.dispatch();
  }

  /**
   * Stops accepting (new connections are refused) once the connections the kernel had completed are
   * accepted (acceptWaitingConnections); resolves once every accepted connection is with a worker
   * (those no worker can take, none serving, are closed).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.server.listening) {
      await acceptWaitingConnections(this.server, this.options.acceptForMs);
      this.server.close();
    }
    await new Promise<void>((resolve) => {
      this.emptied.push(resolve);
      this.settle();
    });
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const next = this.free.entries().next();
      if (next.done) break;
      const [index, worker] = next.value;
      const socket = this.queue.shift()!;
      if (socket.destroyed) continue;
      this.free.delete(index);
      this.inFlight.set(index, socket);
      try {
        worker.send({ type: 'connection' } satisfies ConnectionMessage, socket, { keepOpen: true }, (err) => {
          // The channel closed before it went out: the worker's exit hands it to another (died).
          if (err) this.died(index);
        });
      } catch {
        this.died(index);
      }
    }
    if (this.queue.length > 0 && !this.sweeper) {
      // A tenth of the bound, at most every second: a held connection is closed within holdForMs + 10 %.
      this.sweeper = setInterval(() => this.sweep(), Math.min(1000, Math.max(10, Math.ceil(this.options.holdForMs / 10))));
      this.sweeper.unref();
    }
    this.settle();
  }

  /** Closes the held connections older than holdForMs (and forgets those their clients closed). */
  private sweep(): void {
    const oldest = Date.now() - this.options.holdForMs;
    let shed = 0;
    for (let i = this.queue.length - 1; i >= 0; i -= 1) {
      const socket = this.queue[i]!;
      if (!socket.destroyed && (this.acceptedAt.get(socket) ?? 0) > oldest) continue;
      this.queue.splice(i, 1);
      if (socket.destroyed) continue;
      socket.destroy();
      shed += 1;
    }
    if (shed > 0) this.options.onShed?.('too-old', shed);
    if (this.queue.length === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
    this.settle();
  }

  /** While stopping: done once nothing is queued (what no worker can take is closed). */
  private settle(): void {
    if (!this.stopping || this.emptied.length === 0) return;
    if (this.queue.length > 0 && this.serving.size > 0) return;
    for (const socket of this.queue.splice(0)) socket.destroy();
    for (const fn of this.emptied.splice(0)) fn();
  }
}
