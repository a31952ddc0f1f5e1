/**
 * The app of a posting test file: started (seeded demo company) with the posting fixture before
 * the file's tests, closed after them, and, unless `invariants: false`, the books' invariants
 * checked after every test (whatever a test posted or refused, the books stay coherent).
 * `set` receives the app once it is started: `let t: TestApp; usePostingApp((app) => (t = app));`
 */
import { afterEach } from 'node:test';
import type { TestApp } from './app';
import { assertBooksInvariants } from './invariants';
import { installPostingFixture } from './posting-fixture';
import { useTestApp } from './use-test-app';

export function usePostingApp(set: (app: TestApp) => void, options: { invariants?: boolean } = {}): void {
  let app: TestApp | undefined;
  useTestApp(async (started) => {
    await installPostingFixture(started.knex);
    app = started;
    set(started);
  });
  if (options.invariants !== false) {
    afterEach(async () => {
      if (app) await assertBooksInvariants(app.knex);
    });
  }
}
