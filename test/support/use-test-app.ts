/**
 * The app of a test file: started (startTestApp) before the file's tests, closed after them.
 * `set` receives it once it is started (and may prepare more, before any test runs):
 * `let t: TestApp; useTestApp((app) => (t = app));`
 */
import { after, before } from 'node:test';
import { startTestApp, type StartOptions, type TestApp } from './app';

export function useTestApp(set: (app: TestApp) => unknown, options: StartOptions = {}): void {
  let app: TestApp | undefined;
  before(async () => {
    app = await startTestApp(options);
    await set(app);
  });
  after(async () => {
    await app?.close();
  });
}
