/**
 * Starts the production entry point (src/main.ts) on DATABASE_URL, waits for /readyz 200, then
 * prints `MODULES <json>`: the project's own modules in the require cache, i.e. the import graph
 * the start loaded, and exits. Used by test/startup-imports.test.ts.
 */
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

async function main(): Promise<void> {
  await import('../../src/main');
  const port = Number(process.env.PORT);
  for (let i = 0; i < 1200; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) {
      const modules = Object.keys(require.cache)
        .filter((f) => f.startsWith(ROOT) && !f.includes(`${path.sep}node_modules${path.sep}`))
        .map((f) => path.relative(ROOT, f).split(path.sep).join('/'))
        .sort();
      process.stdout.write(`MODULES ${JSON.stringify(modules)}\n`);
      process.exit(0);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  process.stderr.write('not ready in 60 s\n');
  process.exit(1);
}

void main();
