/**
 * The deployment topologies of test/deployment/: the real entry point (src/main.ts, started by
 * test/support/cluster-process.ts) on one database, as users run it, reached only through sockets:
 *
 *   sqlite     one instance of WORKERS=2 (node:cluster) on a SQLite file;
 *   postgres   two instances of WORKERS=2 each (INSTANCE_ID dp-a and dp-b, a port each) on one
 *              PostgreSQL database (TEST_ENGINE=postgres with TEST_POSTGRES_URL).
 *
 * `startTopology()` starts the one the test engine selects (once per test file: a start costs
 * seconds); every check uses its own API keys (`newKey`), so the rate limit of one check never
 * throttles another. Instances can be killed (SIGKILL of the primary and its workers at once),
 * stopped (SIGTERM, a graceful drain) and restarted under the same INSTANCE_ID and port; a single
 * worker can be signalled (the primary replaces it).
 */
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase } from '../support/app';
import { running, spawnCluster, type SpawnedCluster } from '../support/cluster-process';
import { postJson, type HttpResult } from '../support/server-process';
import { installPostingFixture } from '../support/posting-fixture';
import { parseDatabaseUrl, type Engine } from '../../src/storage/database';
import { ApiKeyRepository, type KeyRole } from '../../src/storage/api-keys';

/** Worker processes per instance (the default on a 2-core machine). */
export const WORKERS = 2;
/** RATE_LIMIT_PER_MINUTE of every instance. */
export const RATE_PER_MINUTE = 600;
/** EVENT_DETECTION_INTERVAL_SECONDS / EVENT_DETECTION_LAG_SECONDS: short, so the events check takes seconds. */
export const DETECTION_INTERVAL_SECONDS = 1;
export const DETECTION_LAG_SECONDS = 1;

/** Environment of every instance (on top of DATABASE_URL, PORT, WORKERS, INSTANCE_ID). */
export const INSTANCE_ENV: Record<string, string> = {
  LOG_LEVEL: 'info',
  RATE_LIMIT_PER_MINUTE: String(RATE_PER_MINUTE),
  EVENT_DETECTION_INTERVAL_SECONDS: String(DETECTION_INTERVAL_SECONDS),
  EVENT_DETECTION_LAG_SECONDS: String(DETECTION_LAG_SECONDS),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  // Two instances x two workers x 5 = 20 connections: room for the other suites on the same server.
  DB_POOL_MAX: '5',
  // The checks send refused keys from loopback on purpose (a disabled key, until it is refused
  // everywhere); the failed-authentication throttle has tests of its own (test/http/auth-throttle.test.ts).
  AUTH_FAILURES_PER_MINUTE: '0',
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface DeployedInstance {
  /** INSTANCE_ID; its workers are `<id>/w1`, `<id>/w2`. */
  readonly id: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  /** The current run (replaced by restart). */
  readonly cluster: SpawnedCluster;
  /** Whether its primary runs. */
  isRunning(): boolean;
  /** Pid of each live worker by index (1..WORKERS). */
  workerPids(): Map<number, number>;
  /** POST JSON through this instance's port (a fresh connection each). */
  post(path: string, body: unknown, apiKey: string, headers?: Record<string, string>): Promise<HttpResult>;
  /** SIGKILL the primary and every worker at once (a machine that dies). */
  kill(): Promise<void>;
  /** SIGTERM to the primary (a graceful drain of every worker); resolves with its exit code. */
  sigterm(): Promise<number | null>;
  /**
   * SIGKILL to one worker; resolves once the primary has seen it die (its log line), before the
   * replacement starts. Until then the primary may still hand it new connections, which then hang:
   * Node's round-robin handoff waits for the dead worker's reply forever (the client's timeout ends it).
   */
  killWorker(index: number): Promise<number>;
  /** Signals one worker (SIGKILL or SIGTERM); resolves when the primary's replacement listens. */
  signalWorker(index: number, signal: NodeJS.Signals): Promise<{ before: number; after: number }>;
  /** Starts the instance again under the same INSTANCE_ID and port; resolves when it is ready. */
  restart(): Promise<void>;
}

export interface Topology {
  readonly name: 'sqlite' | 'postgres';
  readonly engine: Engine;
  readonly databaseUrl: string;
  /** A connection of the test's own: invariants, direct changes, claims. */
  readonly knex: Knex;
  readonly instances: DeployedInstance[];
  /** An admin key (lock, webhook endpoints). */
  readonly adminKey: string;
  /** A new API key in the database (works on every process at once: unknown keys are never cached). */
  newKey(name: string, role?: KeyRole): Promise<string>;
  /**
   * One port per serving process: each instance's port WORKERS times. Sent at once on fresh
   * connections, the primary's round-robin hands each worker one of them.
   */
  everyProcess(): DeployedInstance[];
  /**
   * Makes the topology whole again after a check killed or stopped part of it: restarts every
   * instance that does not run, and waits until every instance has all its workers listening
   * (a killed worker is replaced by its primary). Each check starts with it.
   */
  whole(): Promise<void>;
  /** Kills what still runs and drops the database. */
  stop(): Promise<void>;
}

async function startInstance(id: string, databaseUrl: string, port?: number): Promise<SpawnedCluster> {
  return spawnCluster({ databaseUrl, workers: WORKERS, env: { ...INSTANCE_ENV, INSTANCE_ID: id }, ...(port ? { port } : {}) });
}

function deployed(id: string, databaseUrl: string, first: SpawnedCluster): DeployedInstance {
  let cluster = first;
  const instance: DeployedInstance = {
    id,
    port: first.port,
    baseUrl: `http://127.0.0.1:${first.port}`,
    get cluster() {
      return cluster;
    },
    isRunning: () => cluster.child.exitCode === null && cluster.child.signalCode === null,
    workerPids: () => new Map([...cluster.workerPids()].filter(([, pid]) => running(pid))),
    post: (path, body, apiKey, headers = {}) => postJson(first.port, path, body, { 'x-api-key': apiKey, ...headers }),
    kill: () => cluster.kill('SIGKILL'),
    async sigterm() {
      await cluster.kill('SIGTERM');
      return cluster.exited;
    },
    async killWorker(index) {
      const pid = cluster.workerPids().get(index);
      if (!pid) throw new Error(`${id} has no worker ${index}`);
      const seen = cluster.logLines().length;
      process.kill(pid, 'SIGKILL');
      for (let i = 0; i < 400; i += 1) {
        if (cluster.logLines().slice(seen).some((l) => l.role === 'primary' && l.worker === index && l.signal === 'SIGKILL')) return pid;
        await sleep(5);
      }
      throw new Error(`the primary of ${id} did not see worker ${index} die within 2 s:\n${cluster.output()}`);
    },
    async signalWorker(index, signal) {
      const before = cluster.workerPids().get(index);
      if (!before) throw new Error(`${id} has no worker ${index}`);
      process.kill(before, signal);
      for (let i = 0; i < 1200; i += 1) {
        const after = cluster.workerPids().get(index);
        if (after && after !== before) return { before, after };
        await sleep(25);
      }
      throw new Error(`worker ${index} of ${id} was not replaced within 30 s:\n${cluster.output()}`);
    },
    async restart() {
      if (instance.isRunning()) throw new Error(`${id} still runs`);
      cluster = await startInstance(id, databaseUrl, first.port);
    },
  };
  return instance;
}

export function topologyName(): 'sqlite' | 'postgres' {
  return process.env.TEST_ENGINE === 'postgres' && process.env.TEST_POSTGRES_URL ? 'postgres' : 'sqlite';
}

/** Starts the topology of the test engine on a fresh copy of the seeded demo company (with the posting fixture). */
export async function startTopology(): Promise<Topology> {
  const name = topologyName();
  const db = await createTestDatabase();
  const knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 4 }).config);
  const instances: DeployedInstance[] = [];
  try {
    await installPostingFixture(knex);
    const keys = new ApiKeyRepository(knex);
    const adminKey = randomUUID();
    await keys.ensure(adminKey, 'deployment admin', 'admin');
    // Whatever ends this test process, no server it started outlives it.
    process.once('exit', () => {
      for (const i of instances) for (const pid of [i.cluster.child.pid, ...i.cluster.workerPids().values()]) if (pid && running(pid)) process.kill(pid, 'SIGKILL');
    });
    const ids = name === 'postgres' ? ['dp-a', 'dp-b'] : ['dp-a'];
    const started = await Promise.allSettled(ids.map((id) => startInstance(id, db.url)));
    for (const [i, s] of started.entries()) if (s.status === 'fulfilled') instances.push(deployed(ids[i]!, db.url, s.value));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    return {
      name,
      engine: db.engine,
      databaseUrl: db.url,
      knex,
      instances,
      adminKey,
      async newKey(keyName, role = 'integration') {
        const key = randomUUID();
        await keys.ensure(key, keyName, role);
        return key;
      },
      everyProcess: () => instances.flatMap((i) => Array.from({ length: WORKERS }, () => i)),
      async whole() {
        await Promise.all(instances.filter((i) => !i.isRunning()).map((i) => i.restart()));
        for (const i of instances) {
          for (let n = 0; i.workerPids().size < WORKERS; n += 1) {
            if (n > 1200) throw new Error(`${i.id} has ${i.workerPids().size} of ${WORKERS} workers after 30 s:\n${i.cluster.output()}`);
            await sleep(25);
          }
        }
      },
      async stop() {
        await Promise.all(instances.map((i) => i.kill()));
        await knex.destroy();
        await db.drop();
      },
    };
  } catch (err) {
    await Promise.all(instances.map((i) => i.kill()));
    await knex.destroy();
    await db.drop();
    throw err;
  }
}
