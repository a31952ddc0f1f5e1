/**
 * The demo seed and the migrations are loaded only when they run: a start on an up-to-date,
 * seeded database does not import db/seed (thousands of lines) or any migration module. The
 * first start on an empty file does (it migrates and seeds), which shows the check can fail.
 * Also: db/migration-names.ts lists exactly the migrations of db/migrate.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MIGRATIONS } from '../../db/migrate';
import { MIGRATION_NAMES } from '../../db/migration-names';
import { freePort } from '../support/net';

const ROOT = path.resolve(__dirname, '..', '..');

async function startAndList(databaseFile: string): Promise<string[]> {
  return (await startAndInspect(databaseFile)).modules;
}

async function startAndInspect(databaseFile: string): Promise<{ modules: string[]; packages: string[]; undici: boolean }> {
  const port = await freePort();
  const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test', 'support', 'import-graph.ts')], {
    cwd: ROOT,
    // WORKERS=1: one process, whose require cache is the whole graph (cluster workers would report theirs).
    env: { ...process.env, PORT: String(port), DATABASE_URL: `sqlite://${databaseFile}`, LOG_LEVEL: 'warn', SEED_ON_START: 'true', WORKERS: '1' },
    encoding: 'utf8',
    timeout: 180_000,
  });
  const line = /^MODULES (.*)$/m.exec(run.stdout ?? '');
  assert.ok(line, `the server started and listed its modules (exit ${run.status}):\n${run.stdout}\n${run.stderr}`);
  const packages = /^PACKAGES (.*)$/m.exec(run.stdout ?? '');
  const undici = /^UNDICI (true|false)$/m.exec(run.stdout ?? '');
  assert.ok(packages && undici, `the server listed its packages:\n${run.stdout}`);
  return { modules: JSON.parse(line[1]!) as string[], packages: JSON.parse(packages[1]!) as string[], undici: undici[1] === 'true' };
}

const isSeed = (m: string) => m.startsWith('db/seed/');
const isMigration = (m: string) => m.startsWith('db/migrations/') || m === 'db/migrate.ts';

test('db/migration-names.ts lists the migrations of db/migrate.ts, in order', () => {
  assert.deepEqual([...MIGRATION_NAMES], MIGRATIONS.map(([name]) => name));
});

test('a start on an existing database loads neither the demo seed nor the migrations', { timeout: 400_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-imports-'));
  try {
    const file = path.join(dir, 'books.sqlite');
    const first = await startAndList(file);
    // The first start migrated and seeded the empty file: it had to load both.
    assert.ok(first.some(isSeed), `the first start loaded the seed: ${first.filter((m) => m.startsWith('db/')).join(', ')}`);
    assert.ok(first.some(isMigration), 'the first start loaded the migrations');
    assert.ok(first.includes('src/server.ts'), 'the list is the production graph');

    const inspected = await startAndInspect(file);
    const second = inspected.modules;
    // Memory (decision 0039): the validator's warm-up talks node:http, not fetch
    // (undici, ~20 MB resident per process), and /openapi.json is the generated JSON twin, so the
    // YAML parser is not loaded either. Packages the service does load are listed, so the check can fail.
    assert.equal(inspected.undici, false, 'undici (the global fetch) is not loaded by a start');
    assert.ok(inspected.packages.includes('knex') && inspected.packages.includes('express'), `packages listed: ${inspected.packages.join(', ')}`);
    assert.ok(!inspected.packages.includes('yaml'), 'the YAML parser is not loaded by a start');
    assert.ok(second.includes('src/server.ts') && second.includes('src/app.ts'), 'the list is the production graph');
    assert.deepEqual(second.filter(isSeed), [], 'no seed module on a start of a seeded database');
    assert.deepEqual(second.filter(isMigration), [], 'no migration module on a start of a migrated database');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
