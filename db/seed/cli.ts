/**
 * Seeds the demo company into DATABASE_URL (default sqlite://./data/books.sqlite).
 *
 *   npx tsx db/seed/cli.ts [--scale N] [--seed N] [--force]
 *
 * SCALE and SEED in the environment are honoured too (flags win). Migrates to the latest
 * schema first. Refuses to seed a database that already holds entity rows unless --force,
 * which deletes those rows (entity tables and their number sequences) and seeds again.
 */
import fs from 'node:fs';
import { DEFAULT_DATABASE_URL } from '../../src/config';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';
import { migrateLatest } from '../migrate';
import { clearEntityTables, countEntityRows, seedDemoCompany } from './index';

interface Args {
  scale: number;
  randomSeed?: number;
  force: boolean;
}

function usage(message?: string): never {
  if (message) process.stderr.write(`${message}\n`);
  process.stderr.write('usage: tsx db/seed/cli.ts [--scale N] [--seed N] [--force]\n  env: DATABASE_URL, SCALE, SEED\n');
  process.exit(2);
}

function parseArgs(argv: string[]): Args {
  const num = (name: string, raw: string | undefined): number => {
    const n = Number(raw);
    if (raw === undefined || raw === '' || !Number.isFinite(n) || n <= 0) usage(`${name} needs a positive number (got ${raw ?? 'nothing'})`);
    return n;
  };
  const args: Args = { scale: process.env.SCALE ? num('SCALE', process.env.SCALE) : 1, force: false };
  if (process.env.SEED) args.randomSeed = num('SEED', process.env.SEED);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    if (flag === '--scale') args.scale = num('--scale', inline ?? argv[++i]);
    else if (flag === '--seed') args.randomSeed = num('--seed', inline ?? argv[++i]);
    else if (flag === '--force') args.force = true;
    else if (flag === '--help' || flag === '-h') usage();
    else usage(`unknown argument ${a}`);
  }
  return args;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const target = parseDatabaseUrl(process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  const knex = openDatabase(target);
  try {
    process.stdout.write(`database ${target.display}\n`);
    await migrateLatest(knex);
    const existing = await countEntityRows(knex);
    if (existing > 0 && !args.force) {
      process.stderr.write(`refusing to seed: the database already holds ${existing} entity rows (--force deletes them and seeds again)\n`);
      process.exitCode = 1;
      return;
    }
    if (existing > 0) {
      process.stdout.write(`--force: deleting ${existing} entity rows\n`);
      await clearEntityTables(knex);
    }
    const report = await seedDemoCompany(knex, {
      scale: args.scale,
      ...(args.randomSeed !== undefined ? { randomSeed: args.randomSeed } : {}),
      onProgress: (line) => process.stdout.write(`  ${line}\n`),
    });
    process.stdout.write(
      `seeded scale ${report.scale} (random seed ${report.randomSeed}): ${report.totalRows} rows in ${report.tables.length} tables, ${(report.elapsedMs / 1000).toFixed(1)} s\n`,
    );
    for (const note of report.notes) process.stdout.write(`  note: ${note}\n`);
    if (target.file && target.file !== ':memory:') {
      await knex.raw('pragma wal_checkpoint(TRUNCATE)').catch(() => undefined);
      const size = fs.statSync(target.file).size;
      process.stdout.write(`database file ${target.file}: ${(size / 1024 / 1024).toFixed(1)} MiB\n`);
    }
  } finally {
    await knex.destroy();
  }
}

main().catch((err) => {
  process.stderr.write(`seed failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
