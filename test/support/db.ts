/**
 * A freshly migrated, empty database for a test file.
 *   default                         SQLite in a temp file
 *   TEST_ENGINE=postgres + TEST_POSTGRES_URL   a throwaway PostgreSQL database, dropped (in the background) by destroy()
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { parseDatabaseUrl, type Engine } from '../../src/storage/database';
import { migrateLatest } from '../../db/migrate';
import { createThrowawayDatabase } from './pg-throwaway';

export interface TestDatabase {
  knex: Knex;
  engine: Engine;
  destroy(): Promise<void>;
}

export function testEngine(): Engine {
  return process.env.TEST_ENGINE === 'postgres' && process.env.TEST_POSTGRES_URL ? 'postgres' : 'sqlite';
}

export async function createTestKnex(): Promise<TestDatabase> {
  if (testEngine() === 'postgres') return createPostgres(process.env.TEST_POSTGRES_URL!);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'books-test-'));
  const target = parseDatabaseUrl(`sqlite://${path.join(dir, 'books.sqlite')}`);
  const knex = knexFactory(target.config);
  await migrateLatest(knex);
  return {
    knex,
    engine: 'sqlite',
    async destroy() {
      await knex.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function createPostgres(url: string): Promise<TestDatabase> {
  const db = await createThrowawayDatabase(url, 'books_test');
  const knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 4 }).config);
  await migrateLatest(knex);
  return {
    knex,
    engine: 'postgres',
    async destroy() {
      await knex.destroy();
      // In the background (test/support/pg-throwaway.ts): each drop waits for a checkpoint.
      db.drop();
    },
  };
}
