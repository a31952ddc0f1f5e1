/**
 * Test harness: a fresh database per test file (a copy of a seeded template, so the demo
 * company is seeded once per source version, not once per file), the app built exactly as
 * production builds it, response validation on, and the log lines captured.
 *
 * Engine: TEST_ENGINE=postgres with TEST_POSTGRES_URL runs on PostgreSQL; otherwise SQLite.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import knexFactory, { type Knex } from 'knex';
import pino from 'pino';
import supertest from 'supertest';
import type express from 'express';
import { loadConfig, type Config } from '../../src/config';
import { createServices, type Services } from '../../src/services';
import { createApp } from '../../src/app';
import { parseDatabaseUrl, openDatabase, type Engine } from '../../src/storage/database';
import { recordStatuses } from './statuses';
import { createThrowawayDatabase, databaseUrl } from './pg-throwaway';
import { secretsEnv } from './secrets';

export interface TestApp {
  app: express.Express;
  http: supertest.Agent;
  services: Services;
  knex: Knex;
  engine: Engine;
  /** Admin key (may lock / unlock). */
  adminKey: string;
  /** Integration key. */
  apiKey: string;
  /** Parsed JSON log lines written so far. */
  logs: Array<Record<string, any>>;
  /** supertest POST with the integration key and JSON content type. */
  post(path: string, body?: unknown, key?: string): supertest.Test;
  close(): Promise<void>;
  /** Stops this service (lock re-reads, pool) but keeps the database: a second service on another's database. */
  detach(): Promise<void>;
}

export const TEST_ENGINE: Engine = process.env.TEST_ENGINE === 'postgres' && process.env.TEST_POSTGRES_URL ? 'postgres' : 'sqlite';

// Servers this test process starts (spawned with its environment) get the test SECRETS_KEY on PostgreSQL.
Object.assign(process.env, secretsEnv(TEST_ENGINE));

const ROOT = path.resolve(__dirname, '..', '..');

/** Hash of everything that shapes the seeded database: a change makes a new template. */
function sourceHash(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.(ts|js|json)$/.test(entry.name)) hash.update(entry.name).update(fs.readFileSync(full));
    }
  };
  walk(path.join(ROOT, 'db'));
  hash.update(fs.readFileSync(path.join(ROOT, 'src', 'storage', 'dialect.ts')));
  return hash.digest('hex').slice(0, 16);
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Migrates (and seeds) a template database. The migrations and the seed are loaded here, when a
 * template is built (once per source version), not by every test file that imports this module.
 */
async function buildTemplate(knex: Knex, seeded: boolean): Promise<void> {
  const { migrateLatest } = await import('../../db/migrate');
  await migrateLatest(knex);
  if (seeded) {
    const { seedDemoCompany } = await import('../../db/seed');
    await seedDemoCompany(knex, { scale: 1 });
  }
}

/** Runs `create` once across concurrent test processes (lock file), unless `done` exists. */
async function once(done: string, create: () => Promise<void>): Promise<void> {
  const lock = `${done}.lock`;
  for (;;) {
    if (fs.existsSync(done)) return;
    let fd: number | undefined;
    try {
      fd = fs.openSync(lock, 'wx');
    } catch {
      // Another process holds it; a lock older than 5 minutes is stale.
      try {
        if (Date.now() - fs.statSync(lock).mtimeMs > 300_000) fs.rmSync(lock, { force: true });
      } catch {
        /* gone meanwhile */
      }
      await sleep(100);
      continue;
    }
    try {
      if (!fs.existsSync(done)) await create();
    } finally {
      fs.closeSync(fd);
      fs.rmSync(lock, { force: true });
    }
  }
}

async function sqliteDatabase(seeded: boolean): Promise<{ url: string; drop: () => Promise<void> }> {
  const dir = path.join(os.tmpdir(), 'ais-test');
  fs.mkdirSync(dir, { recursive: true });
  const template = path.join(dir, `template-${sourceHash()}-${seeded ? 'seeded' : 'empty'}.sqlite`);
  await once(`${template}.done`, async () => {
    const tmp = `${template}.building`;
    fs.rmSync(tmp, { force: true });
    const knex = openDatabase(parseDatabaseUrl(`sqlite://${tmp}`));
    try {
      await buildTemplate(knex, seeded);
      await knex.raw('PRAGMA wal_checkpoint(TRUNCATE)');
    } finally {
      await knex.destroy();
    }
    fs.renameSync(tmp, template);
    for (const suffix of ['-wal', '-shm']) fs.rmSync(tmp + suffix, { force: true });
    fs.writeFileSync(`${template}.done`, '');
  });
  const file = path.join(dir, `db-${process.pid}-${randomUUID()}.sqlite`);
  fs.copyFileSync(template, file);
  return {
    url: `sqlite://${file}`,
    drop: async () => {
      for (const suffix of ['', '-wal', '-shm', '.secrets-key']) fs.rmSync(file + suffix, { force: true });
    },
  };
}

async function postgresDatabase(seeded: boolean): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_POSTGRES_URL!;
  const admin = knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  const template = `ais_tpl_${sourceHash()}_${seeded ? 's' : 'e'}`;
  try {
    const marker = path.join(os.tmpdir(), 'ais-test', `${template}.pg`);
    fs.mkdirSync(path.dirname(marker), { recursive: true });
    await once(marker, async () => {
      const exists = await admin.raw('select 1 from pg_database where datname = ?', [template]);
      if (exists.rows.length === 0) {
        const building = `${template}_b`;
        await admin.raw(`drop database if exists "${building}"`);
        await admin.raw(`create database "${building}"`);
        const knex = openDatabase(parseDatabaseUrl(databaseUrl(adminUrl, building)));
        try {
          await buildTemplate(knex, seeded);
        } finally {
          await knex.destroy();
        }
        await admin.raw(`alter database "${building}" rename to "${template}"`);
      }
      fs.writeFileSync(marker, '');
    });
  } finally {
    await admin.destroy();
  }
  const db = await createThrowawayDatabase(adminUrl, 'ais_t', template);
  return {
    url: db.url,
    // In the background (test/support/pg-throwaway.ts): each drop waits for a checkpoint.
    drop: async () => db.drop(),
  };
}

/** A fresh database (seeded demo company by default) with the URL to reach it. */
export async function createTestDatabase(seeded = true): Promise<{ url: string; engine: Engine; drop: () => Promise<void> }> {
  const db = TEST_ENGINE === 'postgres' ? await postgresDatabase(seeded) : await sqliteDatabase(seeded);
  return { ...db, engine: TEST_ENGINE };
}

export interface StartOptions {
  seeded?: boolean;
  /** Overrides of the configuration (environment variables are not read for these). */
  config?: Partial<Config>;
  /** Reuse an existing database URL instead of creating one (restart tests). */
  databaseUrl?: string;
  /**
   * The app was built from a doctored contract or table (for example a write listed but not wired
   * up, 501): what it answers is not the contract's, so its (operation, status) pairs are not
   * recorded for scripts/check-statuses.ts.
   */
  doctored?: boolean;
}

export async function startTestApp(options: StartOptions = {}): Promise<TestApp> {
  const db = options.databaseUrl ? { url: options.databaseUrl, drop: async () => {} } : await createTestDatabase(options.seeded ?? true);
  const config: Config = {
    ...loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'info', ...secretsEnv(TEST_ENGINE) }),
    validateResponses: true,
    seedOnStart: false,
    ...options.config,
  };
  const target = parseDatabaseUrl(config.databaseUrl, { min: 0, max: config.dbPoolMax });
  const knex = openDatabase(target);
  const logs: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      cb();
    },
  });
  const logger = pino({ level: config.logLevel }, sink);
  const services = createServices(config, logger, knex, target.engine);
  // As src/server.ts does at start.
  await services.installed.load();
  const admin = await services.keys.create('test admin', 'admin');
  const integration = await services.keys.create('test integration', 'integration');
  const app = createApp(services);
  const http = supertest.agent(app);
  return {
    app,
    http,
    services,
    knex,
    engine: target.engine,
    adminKey: admin.key,
    apiKey: integration.key,
    logs,
    post(p: string, body?: unknown, key: string = integration.key) {
      const req = http.post(p).set('x-api-key', key);
      return body === undefined ? req : req.set('Content-Type', 'application/json').send(body as object);
    },
    async close() {
      // STATUS_LOG set (make test): the (operation, status) pairs this app answered, for scripts/check-statuses.ts.
      if (!options.doctored) await recordStatuses(app.locals.metrics?.registry);
      services.lock.stop();
      await knex.destroy();
      await db.drop();
    },
    async detach() {
      // Re-reads first: an un-lock seen by a still-polling service would re-create its pool (an open handle).
      services.lock.stop();
      await knex.destroy();
    },
  };
}
