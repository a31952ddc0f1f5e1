/**
 * Builds the database templates of the engine under test (TEST_ENGINE: the seeded demo company and
 * the empty migrated database, see test/support/app.ts) ahead of the suite: `make test` runs it
 * beside its checks, so that the suite's first files copy a template instead of waiting for one
 * to be seeded. A template that exists for this source version is reused, as in the suite. On
 * PostgreSQL it first drops the throwaway databases of earlier runs that were interrupted.
 */
import { TEST_ENGINE, createTestDatabase } from './app';
import { dropLeftoverDatabases } from './pg-throwaway';

async function main(): Promise<void> {
  if (TEST_ENGINE === 'postgres') {
    const dropped = await dropLeftoverDatabases(process.env.TEST_POSTGRES_URL!);
    if (dropped > 0) process.stdout.write(`test templates: dropped ${dropped} throwaway database(s) of test processes that are gone\n`);
  }
  for (const seeded of [true, false]) {
    const db = await createTestDatabase(seeded);
    await db.drop();
  }
}

main().catch((e) => {
  process.stderr.write(`test templates: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
