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
import type { Config } from './config';
import { API_BASE } from './http/base';
import { ApiKeyRepository } from './storage/api-keys';
import type { DatabaseTarget } from './storage/database';
import { hasNoCompany, pendingMigrations } from './storage/database-state';
import { MIGRATION_NAMES } from '../db/migration-names';

export interface BootReport {
  /** A key created on this start (first start of an empty embedded database), shown once. */
  createdKey?: string;
  /** A key known to work (the created one or DEMO_API_KEY), for the curl line. */
  usableKey?: string;
  seeded: boolean;
}

/** Migrates, seeds an empty embedded database, and makes sure a key exists to call the server with. */
export async function prepareDatabase(config: Config, target: DatabaseTarget, knex: Knex, logger: Logger): Promise<BootReport> {
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
  if (config.demoApiKey) {
    const record = await keys.ensure(config.demoApiKey, 'demo (DEMO_API_KEY)', 'admin');
    logger.info({ keyId: record.id }, 'DEMO_API_KEY is an active admin key');
    report.usableKey = config.demoApiKey;
  } else if (embedded && (await keys.count()) === 0) {
    const { key, record } = await keys.create('first start admin', 'admin');
    logger.info({ keyId: record.id }, 'created an admin API key on the first start of an empty database (printed on stderr, stored hashed)');
    report.createdKey = key;
    report.usableKey = key;
  }
  return report;
}

export function banner(port: number, report: BootReport): string {
  const base = `http://localhost:${port}`;
  const key = report.usableKey ?? '$API_KEY';
  const lines = [''];
  if (report.createdKey) {
    lines.push('An admin API key was created for this new database. It is shown only now (stored hashed):', '', `    ${report.createdKey}`, '');
  } else if (!report.usableKey) {
    lines.push('Create an API key with:  npm run keys -- create --name me   (set API_KEY to the printed key)', '');
  }
  lines.push(
    `Accounting Integration API v3 listening on ${base}  (reference: ${base}/docs)`,
    'Try it:',
    `    curl -s -X POST ${base}${API_BASE}/utility/ping -H "x-api-key: ${key}"`,
    '',
  );
  return lines.join('\n') + '\n';
}

