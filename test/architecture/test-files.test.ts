/**
 * Every test file is run, by both suites: `make test-sqlite` and `make test-postgres` take their
 * files from scripts/test-files.sh, which lists each file under test/ named *.test.ts exactly
 * once (the longest first, then the others in name order). A file nobody listed runs too; a
 * listed name that no longer exists is an error here, not a silent gap in the order. The suites
 * run them through scripts/run-tests.ts, which starts them in that order (node --test sorts them).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'scripts', 'test-files.sh');

function listed(cwd = ROOT, script = SCRIPT): string[] {
  const run = spawnSync('bash', [script], { cwd, encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout.split('\n').filter(Boolean);
}

function testFilesUnder(dir: string, base = dir): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? testFilesUnder(path.join(dir, e.name), base) : e.name.endsWith('.test.ts') ? [path.relative(base, path.join(dir, e.name))] : []));
}

/** The script's LONGEST_FIRST list. */
function longestFirst(): string[] {
  const m = /LONGEST_FIRST='\n([^']*)'/.exec(fs.readFileSync(SCRIPT, 'utf8'));
  assert.ok(m, 'the script has its LONGEST_FIRST list');
  return m[1]!.split('\n').filter(Boolean);
}

test('scripts/test-files.sh lists every test file exactly once, the listed longest first, then the rest in name order', () => {
  const files = listed();
  const all = testFilesUnder(path.join(ROOT, 'test')).map((f) => `test/${f.split(path.sep).join('/')}`);
  assert.equal(new Set(files).size, files.length, 'no file twice');
  assert.deepEqual([...files].sort(), [...all].sort(), 'exactly the test files under test/');
  const first = longestFirst();
  for (const f of first) assert.ok(fs.existsSync(path.join(ROOT, f)), `${f} (LONGEST_FIRST in scripts/test-files.sh) exists`);
  assert.deepEqual(files.slice(0, first.length), first, 'the listed files first, in their order');
  const rest = files.slice(first.length);
  assert.deepEqual(rest, [...rest].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), 'the others in name order');
});

test('a test file the list does not name is run; a listed name that is gone is left out', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-test-files-'));
  try {
    fs.mkdirSync(path.join(dir, 'scripts'));
    fs.copyFileSync(SCRIPT, path.join(dir, 'scripts', 'test-files.sh'));
    const [kept, ...gone] = longestFirst();
    for (const f of [kept!, 'test/zeta/new-thing.test.ts', 'test/alpha/a.test.ts']) {
      fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      fs.writeFileSync(path.join(dir, f), '');
    }
    fs.writeFileSync(path.join(dir, 'test', 'alpha', 'helper.ts'), '');
    assert.deepEqual(listed(dir, path.join(dir, 'scripts', 'test-files.sh')), [kept, 'test/alpha/a.test.ts', 'test/zeta/new-thing.test.ts']);
    assert.ok(gone.length > 0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('make test-sqlite and make test-postgres run the files of scripts/test-files.sh, in its order', () => {
  const files = listed();
  for (const target of ['test-sqlite', 'test-postgres']) {
    // -n: print the recipe only; -o: never (re)install node_modules for it.
    const run = spawnSync('make', ['-n', '--no-print-directory', '-o', 'node_modules/.install-stamp', target], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TEST_POSTGRES_URL: 'postgres://unused' } });
    assert.equal(run.status, 0, run.stderr);
    const command = run.stdout.split('\n').find((l) => l.includes('node --import tsx scripts/run-tests.ts '));
    assert.ok(command, `${target} runs scripts/run-tests.ts:\n${run.stdout}`);
    const given = command.split(/\s+/).filter((w) => w.endsWith('.test.ts') || w.endsWith('.test.ts;'));
    assert.deepEqual(given.map((w) => w.replace(/;$/, '')), files, target);
  }
});

test('scripts/run-tests.ts starts the files in the order given (node --test sorts them), and fails the run on a failed test', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-run-tests-'));
  try {
    const log = path.join(dir, 'started');
    const write = (name: string, body: string) =>
      fs.writeFileSync(path.join(dir, name), `const test = require('node:test');\nrequire('node:fs').appendFileSync(${JSON.stringify(log)}, '${name}\\n');\ntest('${name}', () => { ${body} });\n`);
    for (const name of ['c.test.js', 'a.test.js', 'b.test.js']) write(name, '');
    write('fails.test.js', "throw new Error('expected');");
    // Without this process's NODE_TEST_CONTEXT: a runner started from inside a test file runs nothing.
    const { NODE_TEST_CONTEXT: _context, ...env } = process.env;
    const runner = (files: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'run-tests.ts'), '--concurrency=1', ...files.map((f) => path.join(dir, f))], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    const passing = runner(['c.test.js', 'a.test.js', 'b.test.js']);
    assert.equal(passing.status, 0, passing.stdout + passing.stderr);
    assert.deepEqual(fs.readFileSync(log, 'utf8').split('\n').filter(Boolean), ['c.test.js', 'a.test.js', 'b.test.js']);
    assert.match(passing.stdout, /tests 3\b/);
    const failing = runner(['fails.test.js', 'a.test.js']);
    assert.equal(failing.status, 1, 'a failed test fails the run');
    assert.match(failing.stdout, /fail 1\b/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
