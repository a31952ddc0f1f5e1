/**
 * scripts/engine-test-files.ts, which picks the files `make test-postgres` runs: a file depends on
 * the engine when it, a module it imports (transitively) or a repository script it names reads
 * TEST_ENGINE or TEST_POSTGRES_URL; the others run only in `make test-sqlite`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dependsOnEngine } from '../scripts/engine-test-files';

const ROOT = path.resolve(__dirname, '..');
let dir: string;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-files-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

test('a file that reads neither variable, nor imports or names anything that does, is independent', () => {
  write('helper.ts', "export const answer = 42;\n");
  assert.equal(dependsOnEngine(write('plain.test.ts', "import { answer } from './helper';\nconst s = 'app';\n")), false);
});

test('reading TEST_ENGINE or TEST_POSTGRES_URL, directly or through a relative import two levels down, depends', () => {
  assert.equal(dependsOnEngine(write('direct.test.ts', 'const e = process.env.TEST_POSTGRES_URL;\n')), true);
  write('deep.ts', "export const engine = process.env.TEST_ENGINE ?? 'sqlite';\n");
  write('middle.ts', "export { engine } from './deep';\n");
  assert.equal(dependsOnEngine(write('transitive.test.ts', "import { engine } from './middle';\n")), true);
});

test('a repository module named by a string literal (a spawned script) is followed', () => {
  // test/support/app.ts reads TEST_ENGINE; a file that only names it (as a spawned script would) depends.
  assert.equal(dependsOnEngine(write('spawns.test.ts', "const args = ['--import', 'tsx', 'test/support/app.ts'];\n")), true);
  assert.equal(dependsOnEngine(write('joins.test.ts', "const p = ['test', 'support', 'app.ts'].join('/');\n")), true);
  // A relative specifier is resolved from the file, not matched by name.
  assert.equal(dependsOnEngine(write('relative.test.ts', "const p = './app';\n")), false);
});

test('the command lists the dependent files, or with --independent the others', () => {
  const files = [write('a.test.ts', 'process.env.TEST_ENGINE;\n'), write('b.test.ts', 'export {};\n')];
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'scripts/engine-test-files.ts', ...args], { cwd: ROOT, encoding: 'utf8' });
  assert.deepEqual(run(...files).stdout.trim().split('\n'), [files[0]]);
  assert.deepEqual(run('--independent', ...files).stdout.trim().split('\n'), [files[1]]);
});
