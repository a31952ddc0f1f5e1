/**
 * Starts the production entry point (src/main.ts) on DATABASE_URL, waits for /readyz 200, then
 * prints `MODULES <json>`: the project's own modules in the require cache, i.e. the import graph
 * the start loaded, and exits; then `PACKAGES <json>`, the npm packages loaded, and `UNDICI <bool>`,
 * whether Node's bundled fetch client was loaded (polled here through node:http, so that only the
 * server can have loaded it). Used by test/architecture/startup-imports.test.ts.
 */

function readyzStatus(port: number): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', () => resolve(0));
  });
}
import http from 'node:http';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

async function main(): Promise<void> {
  await import('../../src/main');
  const port = Number(process.env.PORT);
  for (let i = 0; i < 1200; i++) {
    const ok = (await readyzStatus(port)) === 200;
    if (ok) {
      const modules = Object.keys(require.cache)
        .filter((f) => f.startsWith(ROOT) && !f.includes(`${path.sep}node_modules${path.sep}`))
        .map((f) => path.relative(ROOT, f).split(path.sep).join('/'))
        .sort();
      process.stdout.write(`MODULES ${JSON.stringify(modules)}\n`);
      const packages = new Set<string>();
      for (const f of Object.keys(require.cache)) {
        const at = f.lastIndexOf(`node_modules${path.sep}`);
        if (at < 0) continue;
        const parts = f.slice(at + 'node_modules'.length + 1).split(path.sep);
        packages.add(parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
      }
      process.stdout.write(`PACKAGES ${JSON.stringify([...packages].sort())}\n`);
      const natives = (process as unknown as { moduleLoadList?: string[] }).moduleLoadList ?? [];
      process.stdout.write(`UNDICI ${natives.some((m) => m.includes('undici'))}\n`);
      process.exit(0);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  process.stderr.write('not ready in 60 s\n');
  process.exit(1);
}

void main();
