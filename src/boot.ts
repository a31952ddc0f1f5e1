/**
 * What a start does to the database before serving (migrate, seed an empty embedded database,
 * make sure a key exists) and the start banner. Apart from src/server.ts because a cluster
 * primary (src/cluster.ts) runs these and serves nothing: it loads this and the storage layer,
 * not the app, the contract validator and their dependencies (start-up time: the workers, which
 * load the app, start only after the primary has prepared the database; and the primary's
 * resident memory, held for the life of the service).
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { ConfigError, type Config } from './config';
import { API_BASE } from './http/base';
import { ApiKeyRepository } from './storage/api-keys';
import type { DatabaseTarget } from './storage/database';
import { hasNoCompany, pendingMigrations } from './storage/database-state';
import { MIGRATION_NAMES } from '../db/migration-names';
import { openSecretBox } from './storage/secrets-key';
import type { SecretBox } from './storage/secret-box';
import { SERVICE_ACTOR } from './audit/actions';
import { auditRow, insertAuditRows } from './audit/store';
import { resealSecrets } from './events/store';

export interface BootReport {
  /** A key created on this start (first start of an empty embedded database), shown once. */
  createdKey?: string;
  /** A key known to work (the created one or DEMO_API_KEY), for the banner (which shows DEMO_API_KEY by its last characters only). */
  usableKey?: string;
  seeded: boolean;
}

/** Migrates, seeds an empty embedded database, and makes sure a key exists to call the server with. */
export async function prepareDatabase(config: Config, target: DatabaseTarget, knex: Knex, logger: Logger): Promise<BootReport> {
  // Before anything touches the database: PostgreSQL and SQL Server refuse to start without
  // SECRETS_KEY; on SQLite the key file is created here, before any cluster worker starts.
  const secrets = openSecretBox(config);
  const started = Date.now();
  // The migrations (and the seed below) are loaded only when they have something to do: a start
  // on an up-to-date database never imports them (start-up time and resident memory).
  const pending = await pendingMigrations(knex, MIGRATION_NAMES);
  if (pending === null || pending.length > 0) {
    const { migrateLatest } = await import('../db/migrate');
    await migrateLatest(knex);
    logger.info({ database: target.display, ms: Date.now() - started }, 'migrations applied');
  } else {
    logger.info({ database: target.display, ms: Date.now() - started }, 'migrations up to date');
  }

  await resealWebhookSecrets(knex, secrets, logger);

  const embedded = target.engine === 'sqlite';
  let seeded = false;
  if (embedded && config.seedOnStart) {
    const seedStarted = Date.now();
    logger.debug('seeding the demo company if the database is empty');
    const seed = (await hasNoCompany(knex))
      ? await (await import('../db/seed')).ensureSeeded(knex, { onProgress: (line) => logger.debug({ seed: line }, 'seed progress') })
      : null;
    seeded = seed !== null;
    if (seed) logger.info({ ms: Date.now() - seedStarted, rows: seed.totalRows, scale: seed.scale }, 'demo company seeded');
  }

  const keys = new ApiKeyRepository(knex);
  const report: BootReport = { seeded };
  // Keys the service creates or re-enables by itself are audit log entries, as the keys CLI's are.
  const audit = (action: 'api-key.created' | 'api-key.enabled', record: { id: string; name: string }, why: string) =>
    insertAuditRows(knex, [auditRow(target.engine, SERVICE_ACTOR, { action, target: record.id, outcome: 'succeeded', detail: { name: record.name, role: 'admin', reason: why } }, new Date())]);
  if (config.demoApiKey) {
    const before = await keys.findByKey(config.demoApiKey);
    const record = await keys.ensure(config.demoApiKey, 'demo (DEMO_API_KEY)', 'admin');
    if (!before) await audit('api-key.created', record, 'DEMO_API_KEY');
    else if (before.state !== 'active' || before.role !== 'admin') await audit('api-key.enabled', record, 'DEMO_API_KEY');
    logger.info({ keyId: record.id }, 'DEMO_API_KEY is an active admin key');
    report.usableKey = config.demoApiKey;
  } else if (embedded && (await keys.count()) === 0) {
    const { key, record } = await keys.create('first start admin', 'admin');
    await audit('api-key.created', record, 'first start of an empty embedded database');
    logger.info({ keyId: record.id }, 'created an admin API key on the first start of an empty database (printed on stderr, stored hashed)');
    report.createdKey = key;
    report.usableKey = key;
  }
  return report;
}

/**
 * A migration cannot read SECRETS_KEY, so encrypting the secrets stored before encryption (and
 * re-encrypting those under a previous key after a rotation) is this step of every start, after the
 * migrations (docs/decisions/0261-secrets-encrypted-at-start-not-in-a-migration.md). A secret no
 * configured key opens stops the start: signing with it is impossible, and the usual cause is a
 * key missing from this instance's configuration (another instance encrypted under its own).
 */
async function resealWebhookSecrets(knex: Knex, secrets: SecretBox, logger: Logger): Promise<void> {
  const { resealed, unreadable } = await resealSecrets(knex, secrets);
  if (resealed > 0) logger.info({ resealed }, 'webhook signing secrets encrypted under the current SECRETS_KEY');
  if (unreadable.length > 0) {
    const keyIds = [...new Set(unreadable.map((u) => u.keyId ?? 'malformed'))].join(', ');
    throw new ConfigError(
      `${unreadable.length} webhook signing secret(s) are encrypted under key id ${keyIds}, which neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS holds: add that key to SECRETS_KEY_PREVIOUS (every instance must share SECRETS_KEY)`,
    );
  }
}

/**
 * The start banner (stderr, for the person at the terminal; never the JSON log). A key appears in
 * clear only on the start that created it (the first start of an empty embedded database: what
 * `make run` prints to call the server with); DEMO_API_KEY is named by its last characters and the
 * curl line reads it from the shell: stderr is kept by log collectors, and it was printed on every
 * start, PostgreSQL included.
 */
export function banner(port: number, report: BootReport): string {
  const base = `http://localhost:${port}`;
  const lines = [''];
  let key: string;
  if (report.createdKey) {
    lines.push('An admin API key was created for this new database. It is shown only now (stored hashed):', '', `    ${report.createdKey}`, '');
    key = report.createdKey;
  } else if (report.usableKey) {
    lines.push(`DEMO_API_KEY (the admin key ending in ${report.usableKey.slice(-4)}) is active; the command below reads it from your shell.`, '');
    key = '$DEMO_API_KEY';
  } else {
    lines.push('Create an API key with:  npm run keys -- create --name me   (set API_KEY to the printed key)', '');
    key = '$API_KEY';
  }
  lines.push(
    `Accounting Integration API v3 listening on ${base}  (reference: ${base}/docs)`,
    'Try it:',
    `    curl -s -X POST ${base}${API_BASE}/utility/ping -H "x-api-key: ${key}"`,
    '',
  );
  return lines.join('\n') + '\n';
}
