import os from 'node:os';
import { isIP } from 'node:net';

/** The database used when DATABASE_URL is not set (the embedded demo database of `make run`). */
export const DEFAULT_DATABASE_URL = 'sqlite://./data/books.sqlite';

/**
 * All configuration comes from environment variables, validated once at start; a bad value
 * stops the server with a message naming the variable. README.md has the table.
 */
export interface Config {
  port: number;
  databaseUrl: string;
  /** UUID the server makes sure exists as an admin key. */
  demoApiKey?: string;
  logLevel: string;
  /** Largest accepted request body. */
  bodyLimitBytes: number;
  /** Requests per key per window; 0 switches rate limiting off. */
  rateLimitPerMinute: number;
  /** Deadline for one trip through the on-premise boundary (database). */
  dbDeadlineMs: number;
  dbPoolMax: number;
  /** Bound on and/or nesting of a filter tree. */
  maxFilterDepth: number;
  /** Validate responses against openapi.yaml (on in tests). */
  validateResponses: boolean;
  /** Seed the demo company into an empty embedded database on start. */
  seedOnStart: boolean;
  idempotencyTtlHours: number;
  shutdownGraceMs: number;
  /**
   * Operator opt-in: only admin keys may lock and un-lock (403 FORBIDDEN otherwise). Off by
   * default because the spec's guard for both is "any" valid key.
   */
  lockAdminOnly: boolean;
  /**
   * Operator opt-in: v2 write bodies with fields their input document does not list answer 400
   * VALIDATION_FAILED naming them. Off by default: v2 ignored unknown fields (spec, Versioning 3),
   * so they are dropped before the posting (src/v2/unknown-fields.ts).
   */
  v2RejectUnknownFields: boolean;
  /** Change detection cycle (the spec's five minutes). */
  eventDetectionIntervalSeconds: number;
  /** Changes younger than this wait for the next cycle (transactions stamp rows before they commit). */
  eventDetectionLagSeconds: number;
  /** Development only: webhooks may go over http and to private and loopback addresses. */
  webhookAllowPrivateTargets: boolean;
  /** Timeout of one webhook delivery attempt. */
  webhookTimeoutMs: number;
  /**
   * How often a process reads the event log's high-water mark while requests long poll the feed
   * (POST /events/query with waitSeconds): how soon they see an event detected by another process.
   */
  eventFeedPollMs: number;
  /** Server processes on the one port (node:cluster); 1 runs in the started process itself. */
  workers: number;
  /** V8 heap limit of each cluster worker, MB (0: V8's default); src/heap-limit.ts says why. */
  heapLimitMb: number;
  /**
   * This process's name among the instances on one database: its idempotency claims carry it
   * (with a boot id), and a restart under the same name frees the previous boot's claims at once.
   * Must be unique per live process; default `<host name>:<PORT>`; a worker appends `/w<n>`.
   */
  instanceId: string;
  /**
   * How often the maintenance lock re-reads the shared state: how other instances learn of a lock or
   * un-lock, and the safety net for a missed relay (the lock's answer waits for every process).
   */
  lockPollMs: number;
  /**
   * How long lock and un-lock wait for every live process to confirm it has applied the change
   * before answering 504 LOCK_NOT_CONFIRMED (the change stays recorded; the same request retries).
   */
  lockAckTimeoutMs: number;
  /** How often this process records that it is alive; its claims are free to take over after 3 missed beats. */
  heartbeatMs: number;
  /**
   * How long an API key looked up for a request is reused without reading `apikey` again (0 = read on
   * every request). A key disabled or revoked through another process is refused within this bound.
   */
  apiKeyCacheMs: number;
  /**
   * Record numbers a process reserves per counter in one committed statement and hands out from
   * memory (src/storage/numbers.ts); 1 = one statement per posting. Left over at exit: gaps.
   */
  numberBlockSize: number;
  /**
   * Compile every operation's request validator while idle after start (on: a broken document turns
   * readiness 503 once it is found). Off by default: each operation's validator is compiled on its
   * first request (a few milliseconds), so a worker keeps only the validators it serves.
   */
  contractPrecompile: boolean;
  /**
   * Express's `trust proxy` setting (false, true, a hop count, or addresses / subnets / loopback,
   * linklocal, uniquelocal): which X-Forwarded-For / X-Forwarded-Proto hops are believed. The
   * client address of the failed-authentication throttle and the TLS test of HSTS follow it.
   */
  trustProxy: TrustProxy;
  /** Strict-Transport-Security max-age on answers that came over TLS through a trusted proxy; 0 sends none. */
  hstsMaxAgeSeconds: number;
  /** Unknown, revoked, malformed or disabled keys one client address may present per minute before its 429s; 0 switches the throttle off. */
  authFailuresPerMinute: number;
  /** Node's headersTimeout: a client that has not sent its whole request head by then is cut (408). */
  headersTimeoutMs: number;
  /** Node's requestTimeout: a client that has not sent its whole request (head and body) by then is cut (408). */
  requestTimeoutMs: number;
  /**
   * The key webhook signing secrets are encrypted under (SECRETS_KEY: 32 bytes, base64). Unset on
   * SQLite: a key file next to the database (src/storage/secrets-key.ts); unset on PostgreSQL or SQL
   * Server: the start is refused naming the variable.
   */
  secretsKey?: Buffer;
  /** Earlier keys (SECRETS_KEY_PREVIOUS, comma-separated): secrets under them are read and re-encrypted at start. */
  secretsKeyPrevious: Buffer[];
  /** Audit log entries are kept this long (AUDIT_RETENTION_DAYS, at least 400). */
  auditRetentionDays: number;
}

/** The value of Express's `trust proxy` setting (https://expressjs.com/en/guide/behind-proxies.html). */
export type TrustProxy = boolean | number | string[];

export class ConfigError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number between ${min} and ${max} (got "${raw}")`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max} (got ${value})`);
  return value;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false (got "${raw}")`);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const databaseUrl = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  if (!/^(sqlite:|postgres(ql)?:\/\/|mssql:\/\/|sqlserver:\/\/)/.test(databaseUrl)) {
    throw new ConfigError(`DATABASE_URL must start with sqlite://, postgres://, or mssql:// (got "${databaseUrl.split(':')[0]}:...")`);
  }
  const demoApiKey = env.DEMO_API_KEY || undefined;
  if (demoApiKey !== undefined && !UUID.test(demoApiKey)) throw new ConfigError('DEMO_API_KEY must be a UUID');
  const logLevel = env.LOG_LEVEL || 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "${logLevel}")`);
  }
  const dbDeadlineMs = int(env, 'DB_DEADLINE_MS', 15_000, 10, 600_000);
  otlpEndpoints(env);
  return {
    port: int(env, 'PORT', 8080, 0, 65535),
    databaseUrl,
    ...(demoApiKey ? { demoApiKey: demoApiKey.toLowerCase() } : {}),
    logLevel,
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 6000, 0, 10_000_000),
    dbDeadlineMs,
    dbPoolMax: int(env, 'DB_POOL_MAX', 10, 1, 200),
    maxFilterDepth: int(env, 'MAX_FILTER_DEPTH', 32, 1, 256),
    validateResponses: bool(env, 'VALIDATE_RESPONSES', false),
    seedOnStart: bool(env, 'SEED_ON_START', true),
    idempotencyTtlHours: int(env, 'IDEMPOTENCY_TTL_HOURS', 24, 1, 24 * 30),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    lockAdminOnly: bool(env, 'LOCK_ADMIN_ONLY', false),
    v2RejectUnknownFields: bool(env, 'V2_REJECT_UNKNOWN_FIELDS', false),
    eventDetectionIntervalSeconds: int(env, 'EVENT_DETECTION_INTERVAL_SECONDS', 300, 1, 86_400),
    // At least 1 s: SQLite stamps whole seconds, so a row stamped after a window's bound may carry a stamp below it (decision 0466).
    eventDetectionLagSeconds: int(env, 'EVENT_DETECTION_LAG_SECONDS', 30, 1, 3_600),
    webhookAllowPrivateTargets: bool(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
    eventFeedPollMs: int(env, 'EVENT_FEED_POLL_MS', 500, 50, 5_000),
    workers: int(env, 'WORKERS', Math.max(1, Math.min(64, os.availableParallelism())), 1, 64),
    heapLimitMb: heapLimit(env),
    instanceId: instanceId(env, int(env, 'PORT', 8080, 0, 65535)),
    lockPollMs: int(env, 'LOCK_POLL_MS', 250, 20, 900),
    lockAckTimeoutMs: int(env, 'LOCK_ACK_TIMEOUT_MS', 5000, 100, 60_000),
    heartbeatMs: int(env, 'HEARTBEAT_MS', 1000, 20, 1500),
    // At most 1 s, the bound the maintenance lock keeps across processes too.
    apiKeyCacheMs: int(env, 'API_KEY_CACHE_MS', 250, 0, 1000),
    numberBlockSize: int(env, 'NUMBER_BLOCK_SIZE', 100, 1, 1000),
    contractPrecompile: bool(env, 'CONTRACT_PRECOMPILE', false),
    ...secretsKeys(env),
    auditRetentionDays: int(env, 'AUDIT_RETENTION_DAYS', 400, 400, 36_500),
    ...edge(env, dbDeadlineMs),
  };
}

/** Named subnets Express's `trust proxy` accepts besides addresses and CIDR ranges. */
const TRUST_PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY in Express's own terms: false (default: the socket's address is the client), true
 * (every hop: the left-most X-Forwarded-For address; only when nothing but the proxy can reach
 * the port), a hop count, or a comma-separated list of proxy addresses, CIDR ranges and the names
 * loopback, linklocal, uniquelocal. Checked here because Express would only fail on the first request.
 */
function trustProxy(env: NodeJS.ProcessEnv): TrustProxy {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > 32) throw new ConfigError(`TRUST_PROXY as a hop count must be between 0 and 32 (got ${hops})`);
    return hops;
  }
  const entries = raw.split(',').map((e) => e.trim()).filter(Boolean);
  for (const entry of entries) {
    if (TRUST_PROXY_NAMES.has(entry)) continue;
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(`TRUST_PROXY must be true, false, a hop count, or a comma-separated list of addresses, CIDR ranges, loopback, linklocal, uniquelocal (got "${entry}")`);
    }
  }
  return entries;
}

/**
 * The settings of the service's edge: proxies, HSTS, the failed-authentication throttle and the
 * timeouts on slow clients, with the rules that tie them to each other and to DB_DEADLINE_MS.
 */
function edge(env: NodeJS.ProcessEnv, dbDeadlineMs: number): Pick<Config, 'trustProxy' | 'hstsMaxAgeSeconds' | 'authFailuresPerMinute' | 'headersTimeoutMs' | 'requestTimeoutMs'> {
  const proxy = trustProxy(env);
  const hstsMaxAgeSeconds = int(env, 'HSTS_MAX_AGE_SECONDS', 0, 0, 63_072_000);
  // The service speaks plain HTTP: only a trusted proxy's X-Forwarded-Proto says the client used TLS.
  if (hstsMaxAgeSeconds > 0 && proxy === false) {
    throw new ConfigError('HSTS_MAX_AGE_SECONDS needs TRUST_PROXY: Strict-Transport-Security is sent only on answers that came over TLS, which only a trusted proxy (X-Forwarded-Proto) can tell');
  }
  const headersTimeoutMs = int(env, 'HEADERS_TIMEOUT_MS', 10_000, 100, 300_000);
  const requestTimeoutMs = int(env, 'REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000);
  if (requestTimeoutMs <= dbDeadlineMs) {
    throw new ConfigError(`REQUEST_TIMEOUT_MS must be above DB_DEADLINE_MS (got ${requestTimeoutMs} and ${dbDeadlineMs})`);
  }
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(`HEADERS_TIMEOUT_MS must not be above REQUEST_TIMEOUT_MS (got ${headersTimeoutMs} and ${requestTimeoutMs})`);
  }
  return {
    trustProxy: proxy,
    hstsMaxAgeSeconds,
    authFailuresPerMinute: int(env, 'AUTH_FAILURES_PER_MINUTE', 60, 0, 100_000),
    headersTimeoutMs,
    requestTimeoutMs,
  };
}

/** A secrets key as the operator writes it: 32 random bytes in base64 (`openssl rand -base64 32`). */
function secretsKeyOf(name: string, raw: string): Buffer {
  const text = raw.trim();
  const key = Buffer.from(text, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || key.length !== 32) {
    throw new ConfigError(`${name} must be 32 random bytes in base64, 44 characters (make one with: openssl rand -base64 32)`);
  }
  return key;
}

/**
 * SECRETS_KEY and SECRETS_KEY_PREVIOUS (comma-separated). Whether a key is required depends on the
 * engine (a key file on SQLite): decided when the service starts (src/storage/secrets-key.ts), not
 * here, so the keys CLI and the scripts run without one.
 */
function secretsKeys(env: NodeJS.ProcessEnv): { secretsKey?: Buffer; secretsKeyPrevious: Buffer[] } {
  const current = env.SECRETS_KEY ? secretsKeyOf('SECRETS_KEY', env.SECRETS_KEY) : undefined;
  const previous = (env.SECRETS_KEY_PREVIOUS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => secretsKeyOf('SECRETS_KEY_PREVIOUS', s));
  if (previous.length > 0 && !current) throw new ConfigError('SECRETS_KEY_PREVIOUS needs SECRETS_KEY (the key secrets are encrypted under from now on)');
  return { ...(current ? { secretsKey: current } : {}), secretsKeyPrevious: previous };
}

/**
 * Default: host name and port. Unique per live server on a host (two servers cannot share a port;
 * cluster workers add `/w<n>`), and the same after a restart, which is what claim freeing needs.
 */
function instanceId(env: NodeJS.ProcessEnv, port: number): string {
  const raw = (env.INSTANCE_ID || `${os.hostname() || 'instance'}:${port}`).trim();
  if (!/^[\w.:@-]{1,80}$/.test(raw)) throw new ConfigError(`INSTANCE_ID must be 1 to 80 letters, digits or . _ : @ - (got "${raw}")`);
  return raw;
}

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT (and the traces-only OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, which wins
 * over it): read by the OTLP exporter itself (src/telemetry/tracing.ts), which took any text and
 * then exported nothing, silently. Checked here like every other variable: an http(s) URL.
 */
function otlpEndpoints(env: NodeJS.ProcessEnv): void {
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    let url: URL | undefined;
    try {
      url = new URL(raw.trim());
    } catch {
      url = undefined;
    }
    if (!url || !['http:', 'https:'].includes(url.protocol) || !url.hostname) {
      throw new ConfigError(`${name} must be an http:// or https:// URL, e.g. http://collector:4318 (got "${raw}")`);
    }
  }
}

/**
 * HEAP_LIMIT_MB: 1024 by default; 0 (V8's own sizing) or 256 to 65536. Below 256 a worker would run out of heap
 * under load. Why 1024 by default: src/heap-limit.ts (decision 0042).
 */
function heapLimit(env: NodeJS.ProcessEnv): number {
  const value = int(env, 'HEAP_LIMIT_MB', 1024, 0, 65_536);
  if (value !== 0 && value < 256) throw new ConfigError(`HEAP_LIMIT_MB must be 0 (V8's default) or at least 256 (got ${value})`);
  return value;
}

