/**
 * Splits test files by whether what they do can depend on the database engine under test: a
 * file depends on it when it, a module it imports, or a script it starts reads TEST_ENGINE or
 * TEST_POSTGRES_URL. Modules are followed through relative imports and through string literals
 * that name a .ts file of the repository by the end of its path (a test that spawns
 * `path.join(ROOT, 'test', 'support', 'import-graph.ts')` or `scripts/generate.ts` reaches them).
 *
 * `make test-postgres` runs only the dependent files: the others run exactly the same code on
 * both engines' runs (no database, or a SQLite file of their own) and `make test-sqlite` ran them.
 *
 *   tsx scripts/engine-test-files.ts [--independent] FILE...
 *   prints the dependent files (or, with --independent, the others), one a line
 */
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const SOURCE_DIRS = ['src', 'db', 'test', 'bench', 'scripts', 'clients', 'generated'];
const READS_ENGINE = /\bTEST_ENGINE\b|\bTEST_POSTGRES_URL\b/;
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;
const STRING_LITERAL = /['"`]([\w./-]+)['"`]/g;

/** Every .ts file of the repository (outside node_modules) by its file name. */
function tsFilesByName(): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  const walk = (dir: string): void => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(full);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        byName.set(entry.name, [...(byName.get(entry.name) ?? []), full]);
      }
    }
  };
  for (const dir of SOURCE_DIRS) walk(path.join(ROOT, dir));
  return byName;
}

/**
 * The repository's .ts files a string literal names: `x.ts`, `dir/x.ts` or `dir/x`, by the end of
 * their path (`./x` and `../x` are relative imports, resolved as such).
 */
function filesNamedBy(literal: string, byName: Map<string, string[]>): string[] {
  if (literal.startsWith('.') || (!literal.endsWith('.ts') && !literal.includes('/'))) return [];
  const suffix = `/${literal}${literal.endsWith('.ts') ? '' : '.ts'}`;
  return (byName.get(path.basename(suffix)) ?? []).filter((p) => p.endsWith(suffix));
}

function resolveRelative(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  return [base, `${base}.ts`, path.join(base, 'index.ts')].find((p) => p.endsWith('.ts') && fs.existsSync(p));
}

export function dependsOnEngine(file: string, byName: Map<string, string[]> = tsFilesByName()): boolean {
  const seen = new Set<string>();
  const queue = [path.resolve(file)];
  while (queue.length > 0) {
    const current = queue.pop()!;
    if (seen.has(current)) continue;
    seen.add(current);
    const text = fs.readFileSync(current, 'utf8');
    if (READS_ENGINE.test(text)) return true;
    for (const [, specifier] of text.matchAll(RELATIVE_IMPORT)) {
      const target = resolveRelative(current, specifier!);
      if (target) queue.push(target);
    }
    for (const [, literal] of text.matchAll(STRING_LITERAL)) queue.push(...filesNamedBy(literal!, byName));
  }
  return false;
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const independent = args[0] === '--independent';
  const byName = tsFilesByName();
  for (const file of independent ? args.slice(1) : args) {
    if (dependsOnEngine(file, byName) !== independent) process.stdout.write(`${file}\n`);
  }
}
