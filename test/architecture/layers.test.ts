/**
 * The layer rules (.dependency-cruiser.cjs, run by `make check-layers` in `make test`) fail on
 * what they forbid: a small tree in a temporary directory holds one known-bad import per rule (and
 * the imports the rules allow); dependency-cruiser, run on it with the project's configuration,
 * exits non-zero and names every rule, each for its own bad import and for nothing else.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

/** file -> its source; `export {}` files are the targets of the imports. */
const TREE: Record<string, string> = {
  // Targets.
  'src/engines/query/plan.ts': 'export const plan = 1;\n',
  'src/engines/match/run.ts': 'export const match = 1;\n',
  'src/engines/posting/runner.ts': 'export const runner = 1;\n',
  'src/engines/posting/other.ts': 'export const other = 1;\n',
  
  'src/events/store.ts': 'export const store = 1;\n',
  'src/storage/dialect.ts': 'export type Dialect = { engine: string };\nexport const dialect = 1;\n',
  'src/catalog/types.ts': 'export const types = 1;\n',
  'src/v2/fields.ts': 'export const fields = 1;\n',
  'src/app.ts': 'export const app = 1;\n',
  'src/server.ts': 'export const server = 1;\n',
  'src/services.ts': "import { h } from './http/handler';\nexport const services = h;\n",
  'src/http/handler.ts': 'export const h = 1;\n',
  'db/seed/index.ts': 'export const seed = 1;\n',
  'db/migration-names.ts': 'export const names = [];\n',
  'bench/query.ts': 'export const bench = 1;\n',

  // One bad import per rule.
  'src/engines/posting/a.ts': "import { b } from './b';\nexport const a = b;\n", // no-circular
  'src/engines/posting/b.ts': "import { a } from './a';\nexport const b = a;\n",
  'src/engines/query/bench-user.ts': "import { bench } from '../../../bench/query';\nexport const x = bench;\n", // no-bench-in-src
  'src/engines/query/migrations-user.ts': "import { names } from '../../../db/migration-names';\nexport const x = names;\n", // db-only-from-start-and-services
  'src/http/seed-user.ts': "import { seed } from '../../db/seed/index';\nexport const x = seed;\n", // no-seed-in-src (and db-only-...)
  'src/boot.ts': "import { seed } from '../db/seed/index';\nexport const x = seed;\nexport const later = () => import('../db/seed/index');\n", // seed-only-lazily-at-start
  'src/http/entry-user.ts': "import { server } from '../server';\nexport const x = server;\n", // surface-not-up
  'src/v2/app-user.ts': "import { app } from '../app';\nexport const x = app;\n", // v2-not-up
  'src/http/v2-user.ts': "import { fields } from '../v2/fields';\nexport const x = fields;\n", // http-not-up
  'src/http/sql-user.ts': "import { dialect } from '../storage/dialect';\nexport const x = dialect;\n", // surface-talks-no-sql
  // services.ts -> http/handler.ts above: services-not-up
  'src/engines/match/services-user.ts': "import { services } from '../../services';\nexport const x = services;\n", // engines-not-up
  'src/engines/posting/events-user.ts': "import { store } from '../../events/store';\nexport const x = store;\n", // engines-never-call-events
  'src/events/lists.ts': "import { runner } from '../engines/posting/runner';\nexport const x = runner;\n", // events-read-through-query
  'src/events/detector.ts': "import { other } from '../engines/posting/other';\nexport const x = other;\n", // events-read-through-query (the detector too)
  'src/engines/query/match-user.ts': "import { match } from '../match/run';\nexport const x = match;\n", // query-is-the-engines-floor
  'src/engines/idempotency/protocol.ts': "import { runner } from '../posting/runner';\nexport const x = runner;\n", // idempotency-below-posting
  'src/storage/engine-user.ts': "import { plan } from '../engines/query/plan';\nexport const x = plan;\n", // storage-not-up
  'src/catalog/engine-user.ts': "import { plan } from '../engines/query/plan';\nexport const x = plan;\n", // ground-not-up
  'src/errors/catalog-user.ts': "import { types } from '../catalog/types';\nexport const x = types;\n", // errors-at-the-bottom

  // Allowed: a type from storage on the surface; v2 over http; events through engines/query.
  'src/http/type-user.ts': "import type { Dialect } from '../storage/dialect';\nexport const x = (d: Dialect) => d.engine;\n",
  'src/v2/http-user.ts': "import { h } from '../http/handler';\nexport const x = h;\n",
  'src/events/query-user.ts': "import { plan } from '../engines/query/plan';\nexport const x = plan;\n",
};

/** rule -> the one violation (`from -> to`) it must report. */
const EXPECTED: Record<string, string[]> = {
  'no-circular': ['src/engines/posting/a.ts -> src/engines/posting/b.ts'], // a circle is reported once
  'no-bench-in-src': ['src/engines/query/bench-user.ts -> bench/query.ts'],
  'no-seed-in-src': ['src/http/seed-user.ts -> db/seed/index.ts'],
  'seed-only-lazily-at-start': ['src/boot.ts -> db/seed/index.ts'],
  'db-only-from-start-and-services': ['src/engines/query/migrations-user.ts -> db/migration-names.ts', 'src/http/seed-user.ts -> db/seed/index.ts'],
  'surface-not-up': ['src/http/entry-user.ts -> src/server.ts'],
  'v2-not-up': ['src/v2/app-user.ts -> src/app.ts'],
  'http-not-up': ['src/http/v2-user.ts -> src/v2/fields.ts'],
  'surface-talks-no-sql': ['src/http/sql-user.ts -> src/storage/dialect.ts'],
  'services-not-up': ['src/services.ts -> src/http/handler.ts'],
  'engines-not-up': ['src/engines/match/services-user.ts -> src/services.ts'],
  'engines-never-call-events': ['src/engines/posting/events-user.ts -> src/events/store.ts'],
  'events-read-through-query': ['src/events/detector.ts -> src/engines/posting/other.ts', 'src/events/lists.ts -> src/engines/posting/runner.ts'],
  'query-is-the-engines-floor': ['src/engines/query/match-user.ts -> src/engines/match/run.ts'],
  'idempotency-below-posting': ['src/engines/idempotency/protocol.ts -> src/engines/posting/runner.ts'],
  'storage-not-up': ['src/storage/engine-user.ts -> src/engines/query/plan.ts'],
  'ground-not-up': ['src/catalog/engine-user.ts -> src/engines/query/plan.ts'],
  'errors-at-the-bottom': ['src/errors/catalog-user.ts -> src/catalog/types.ts'],
};

test('every layer rule fails on its known-bad import, names itself, and passes what it allows', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-layers-'));
  try {
    for (const [file, source] of Object.entries(TREE)) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), source);
    }
    const run = spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', 'json'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    assert.equal(run.status, 0, `the JSON report is written:\n${run.stderr}`);
    const result = JSON.parse(run.stdout) as { summary: { violations: Array<{ rule: { name: string }; from: string; to: string }> } };
    const found: Record<string, string[]> = {};
    for (const v of result.summary.violations) (found[v.rule.name] ??= []).push(`${v.from} -> ${v.to}`);
    for (const list of Object.values(found)) list.sort();

    const rules = (require(CONFIG) as { forbidden: Array<{ name: string }> }).forbidden.map((r) => r.name).sort();
    assert.deepEqual(Object.keys(EXPECTED).sort(), rules, 'the fixture has a bad import for every rule of the configuration');
    assert.deepEqual(found, EXPECTED);

    // What `make check-layers` runs: it fails (exit status: the number of violations) and prints the rule's name beside the import.
    const text = spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', 'err-long'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    assert.equal(text.status, result.summary.violations.length, text.stderr);
    assert.match(text.stdout, /error ground-not-up: src\/catalog\/engine-user\.ts → src\/engines\/query\/plan\.ts/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
