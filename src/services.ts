import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { traceStatements } from './telemetry/tracing';
import type { Config } from './config';
import type { Engine } from './storage/database';
import { dialectFor, queryDialectFor, type Dialect, type QueryDialect } from './storage/dialect';
import { ApiKeyRepository } from './storage/api-keys';
import { Boundary } from './storage/boundary';
import { NumberAllocator } from './storage/numbers';
import { MaintenanceLock } from './storage/lock-store';
import { LockAwareApiKeys } from './storage/lock-aware-api-keys';
import { KnexIdempotencyStore } from './engines/idempotency/store';
import { WriteRunner } from './engines/posting/runner';
import { Events } from './events';
import { bootGone, InstanceHeartbeat } from './storage/instance-heartbeat';
import { DataChangeLog } from './storage/data-change-log';
import { DatabaseState } from './storage/database-state';
import { COUNTER_SUBQUERY, ReferenceCache } from './storage/reference-cache';
import { InstalledSchema, registerInstalledSchema } from './storage/installed-schema';
import { expectedColumns, missingColumnProblem, publishedNamesOf } from './catalog/installed';
import { CATALOG } from '../generated/catalog';
import type { SecretBox } from './storage/secret-box';
import { AuditLog } from './audit';
import { openSecretBox } from './storage/secrets-key';
import { MIGRATION_NAMES } from '../db/migration-names';

/**
 * What the HTTP surface hands to the engines: built once at start, shared by every request.
 * Engines and storage add their pieces here; nothing else holds global state.
 */
export interface Services {
  config: Config;
  logger: Logger;
  knex: Knex;
  engine: Engine;
  dialect: Dialect;
  /** The read side's dialect (value encoding, snapshot reads) for the engine: what the query and match routes hand the engines. */
  queryDialect: QueryDialect;
  keys: ApiKeyRepository;
  /** Maintenance lock: in-memory state (the gate), persisted in mntlck; owns dropping the pool. */
  lock: MaintenanceLock;
  /** The on-premise boundary: deadline + driver error mapping for every database trip. */
  boundary: Boundary;
  /** Record / reference numbers, allocated outside posting transactions. */
  numbers: NumberAllocator;
  /** The shared write rules (idempotency, dry run, deadline, numbers) around every posting engine. */
  writes: WriteRunner;
  /** Change events: webhook endpoints, detector and delivery (started by the server, not by the app). */
  events: Events;
  /** This process among those on the database (instance + boot); owner of its idempotency claims. Started by the server. */
  heartbeat: InstanceHeartbeat;
  /** Folds the data change log every second (the change token of reads). */
  dataChanges: DataChangeLog;
  /**
   * Which catalog columns the installed build of the accounting database lacks: read at start
   * (`load`, by the server), again when the database reports a missing column and when the
   * maintenance lock is released. Reads and writes see the catalog through it (src/catalog/installed.ts).
   */
  installed: InstalledSchema;
  /** Encrypts stored secrets (webhook signing secrets): SECRETS_KEY, or the SQLite key file. */
  secrets: SecretBox;
  /** The audit log of administrative actions; its flush and retention purge are started by the server. */
  audit: AuditLog;
  /** Readiness: the database reachable, this build's migrations applied (asked by /readyz). */
  database: DatabaseState;
}

/** How often a process folds the data change log (it grows by one row per posting in between). */
const DATA_LOG_FOLD_MS = 1000;

export function createServices(config: Config, logger: Logger, knex: Knex, engine: Engine): Services {
  // First: without a key on PostgreSQL or SQL Server nothing else is built (ConfigError naming SECRETS_KEY).
  const secrets = openSecretBox(config);
  // A span per statement while a request's span records (nothing to do otherwise).
  traceStatements(knex, engine);
  const dialect = dialectFor(engine);
  const installed = new InstalledSchema({
    knex,
    engine,
    logger,
    expected: expectedColumns(CATALOG),
    describe: (m) => `${m.table}.${m.column}${publishedNamesOf(CATALOG, m.table, m.column).map((n) => ` (${n})`).join('')}`,
  });
  // The posting read-back gets only a transaction: it finds the schema through the knex it belongs to.
  registerInstalledSchema(knex, installed);
  // While locked the beats go through the lock's re-reads (the pool is closed): a locked process is alive.
  const heartbeat: InstanceHeartbeat = new InstanceHeartbeat({ knex, engine, logger, instanceId: config.instanceId, beatMs: config.heartbeatMs, paused: (): boolean => lock.isLocked() });
  const lock: MaintenanceLock = new MaintenanceLock(knex, engine, logger, {
    pollMs: config.lockPollMs,
    identity: heartbeat.identity,
    ackTimeoutMs: config.lockAckTimeoutMs,
    whileLocked: (db) => heartbeat.beatThrough(db),
    // While locked the keys come from the lock's snapshot: no older than outside a lock (decision 0450).
    keyMaxAgeMs: config.apiKeyCacheMs,
    // An upgrade of the accounting system is done under the maintenance lock: read the schema again after it.
    onReleased: () => void installed.load('un-lock'),
  });
  const boundary = new Boundary({
    knex,
    engine,
    logger,
    deadlineMs: config.dbDeadlineMs,
    lockedProblem: () => (lock.isLocked() ? lock.lockedProblem() : undefined),
    missingProblem: async (failure) => missingColumnProblem(CATALOG, await installed.afterMissing(failure), failure),
  });
  const numbers = new NumberAllocator(knex, engine, config.numberBlockSize);
  const dataChanges = new DataChangeLog({ knex, engine, logger, foldMs: DATA_LOG_FOLD_MS, paused: () => lock.isLocked() });
  const references = new ReferenceCache();
  const writes = new WriteRunner({
    boundary,
    dialect,
    numbers,
    references,
    // The lease outlives the deadline: an in-flight record past it belongs to a dead owner.
    store: new KnexIdempotencyStore({ knex, engine, ttlHours: config.idempotencyTtlHours, leaseMs: Math.max(2 * config.dbDeadlineMs, 1000), inFlightRetryAfterSeconds: 1, owner: heartbeat.identity }),
    logger,
    hooks: {},
    installed,
    inFlightRetryAfterSeconds: 1,
    isLocked: () => lock.isLocked(),
    // The reference change counter rides in the fence's statement (one statement a posting less), which
    // the transaction's BEGIN reads where the engine can (one round trip a posting less on PostgreSQL).
    fenceAtBegin: () => lock.fenceStatement(COUNTER_SUBQUERY),
    recheckLock: (trx, atBegin) => lock.recheck(trx, references.fenceRider(trx), atBegin),
    cleanup: (fn) => lock.drain.allowWhileClosing(fn),
    purgeEveryMs: 10 * 60_000,
    ttlMs: config.idempotencyTtlHours * 3_600_000,
  });
  const keys = new LockAwareApiKeys(knex, lock, config.apiKeyCacheMs);
  const audit = new AuditLog({ knex, engine, logger, retentionDays: config.auditRetentionDays, isLocked: () => lock.isLocked() });
  // The detection lease is held under this process's boot: a process that dies hands it over within 3 heartbeats.
  const events = new Events({ knex, engine, keys, secrets, audit, logger, config, isLocked: () => lock.isLocked(), holder: heartbeat.identity.bootId, holderGone: (holder) => bootGone(knex, holder, Date.now()) });
  return { config, logger, knex, engine, dialect, queryDialect: queryDialectFor(engine), keys, lock, boundary, numbers, writes, events, heartbeat, dataChanges, installed, secrets, audit, database: new DatabaseState(knex, MIGRATION_NAMES, engine) };
}
