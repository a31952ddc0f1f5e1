import fs from 'node:fs';
import path from 'node:path';

/**
 * Replaces the section of bench/README.md that starts with the line `title` (e.g. "## Query engine")
 * up to the next "## " heading, or appends it when there is none; other sections stay as they are.
 */
export function writeReadmeSection(title: string, section: string): void {
  const file = path.join(__dirname, 'README.md');
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n\nNumbers, not tests. Each section says how to re-run it.\n';
  const startAt = current.search(new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  let next: string;
  if (startAt < 0) next = `${current.trimEnd()}\n\n${section}`;
  else {
    const after = current.indexOf('\n## ', startAt + 1);
    next = current.slice(0, startAt) + section + (after < 0 ? '' : `\n${current.slice(after + 1)}`);
  }
  fs.writeFileSync(file, next.replace(/\n{3,}/g, '\n\n'));
}
