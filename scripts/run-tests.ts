/**
 * Runs test files in the order given, `--concurrency` (default 2) at a time, each in a process of
 * its own, with the spec reporter on stdout; exits 1 when a test failed. What `node --test FILES`
 * does, but in the given order: Node 20's `--test` sorts its files by name (its file list is a
 * sorted glob of the arguments), and the order is what makes the two lanes end together
 * (scripts/test-files.sh, docs/decisions/0340-test-files-longest-first.md).
 *
 *   node --import tsx scripts/run-tests.ts [--concurrency=N] file...
 *
 * Run it with `--import tsx`: each test file's process gets this process's Node options.
 */
import path from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

const args = process.argv.slice(2);
const option = args.find((a) => a.startsWith('--concurrency='));
const concurrency = option ? Number(option.slice('--concurrency='.length)) : 2;
const files = args.filter((a) => !a.startsWith('--'));
if (!Number.isInteger(concurrency) || concurrency < 1 || files.length === 0) {
  process.stderr.write('usage: node --import tsx scripts/run-tests.ts [--concurrency=N] file...\n');
  process.exit(2);
}

run({ files: files.map((f) => path.resolve(f)), concurrency })
  .on('test:fail', (data: { todo?: unknown }) => {
    // As node --test: a failed test fails the run, a failed todo test does not.
    if (data.todo === undefined || data.todo === false) process.exitCode = 1;
  })
  .compose(new spec())
  .pipe(process.stdout);
