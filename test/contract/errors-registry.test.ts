/**
 * docs/errors.md lists exactly the codes of src/errors/registry.ts (code, status, title,
 * type URI), type URIs end in the lower-case hyphenated code, and codes are append-only: every
 * code of the committed snapshot test/fixtures/error-codes.json still exists with its status.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PROBLEM_CODES, PROBLEM_TYPE_BASE, codeSlug, problemTypeUri, type ProblemCode } from '../../src/errors/registry';

const ROOT = path.resolve(__dirname, '..', '..');
const registry = PROBLEM_CODES as Record<string, { status: number; title: string; when: string }>;

interface DocRow {
  code: string;
  status: number;
  title: string;
  type: string;
  when: string;
}

function docRows(): DocRow[] {
  const md = fs.readFileSync(path.join(ROOT, 'docs', 'errors.md'), 'utf8');
  const lines = md.split('\n');
  const header = lines.findIndex((l) => /^\|\s*Code\s*\|\s*Status\s*\|\s*Title\s*\|\s*Type URI\s*\|\s*When\s*\|/.test(l));
  assert.ok(header >= 0, 'docs/errors.md has a table with columns Code | Status | Title | Type URI | When');
  const rows: DocRow[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line
      .slice(1, line.trimEnd().length - 1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim().replace(/\\\|/g, '|'));
    assert.equal(cells.length, 5, `docs/errors.md row has 5 cells: ${line}`);
    const unquote = (s: string) => s.replace(/^`|`$/g, '');
    rows.push({ code: unquote(cells[0]!), status: Number(cells[1]), title: cells[2]!, type: unquote(cells[3]!), when: cells[4]! });
  }
  return rows;
}

test('docs/errors.md lists every registry code, and only those, with the same status, title and type URI', () => {
  const rows = docRows();
  const documented = rows.map((r) => r.code);
  assert.equal(new Set(documented).size, documented.length, 'no code is listed twice in docs/errors.md');
  const missing = Object.keys(registry).filter((c) => !documented.includes(c));
  const extra = documented.filter((c) => !(c in registry));
  assert.deepEqual(missing, [], `codes in the registry but not in docs/errors.md: ${missing.join(', ')}`);
  assert.deepEqual(extra, [], `codes in docs/errors.md but not in the registry: ${extra.join(', ')}`);
  for (const row of rows) {
    const spec = registry[row.code]!;
    assert.equal(row.status, spec.status, `${row.code}: status in docs/errors.md`);
    assert.equal(row.title, spec.title, `${row.code}: title in docs/errors.md`);
    assert.equal(row.type, problemTypeUri(row.code as ProblemCode), `${row.code}: type URI in docs/errors.md`);
    assert.ok(row.when.length > 10, `${row.code}: docs/errors.md says when it happens`);
  }
});

test('type URIs end in the lower-case hyphenated code; codes are UPPER_SNAKE; statuses are 4xx/5xx', () => {
  for (const [code, spec] of Object.entries(registry)) {
    assert.match(code, /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/, `${code} is UPPER_SNAKE_CASE`);
    const uri = problemTypeUri(code as ProblemCode);
    assert.ok(uri.startsWith(PROBLEM_TYPE_BASE), `${code}: type URI under ${PROBLEM_TYPE_BASE}`);
    const last = new URL(uri).pathname.split('/').pop();
    assert.equal(last, code.toLowerCase().replace(/_/g, '-'), `${code}: last segment of the type URI`);
    assert.equal(codeSlug(code), last);
    assert.ok(spec.status >= 400 && spec.status <= 599, `${code}: status ${spec.status} is an error status`);
    assert.ok(spec.title.length > 0);
  }
});

test('codes are append-only: every published code (test/fixtures/error-codes.json) keeps its status', () => {
  const snapshot = JSON.parse(fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'error-codes.json'), 'utf8')) as Record<string, number>;
  for (const [code, status] of Object.entries(snapshot)) {
    assert.ok(code in registry, `published code ${code} was removed from the registry: codes are append-only`);
    assert.equal(registry[code]!.status, status, `published code ${code} changed status ${status} -> ${registry[code]!.status}: codes never change`);
  }
  const unpublished = Object.keys(registry).filter((c) => !(c in snapshot));
  assert.deepEqual(unpublished, [], `new codes must be appended to test/fixtures/error-codes.json: ${unpublished.join(', ')}`);
});

test('the problem types named by the spec exist with the statuses the spec gives them', () => {
  const named: Record<string, number> = {
    UNAUTHORIZED: 401,
    PERIOD_CLOSED: 422,
    MAINTENANCE_LOCK: 423,
    CHANGE_STAMP_UNSUPPORTED: 501,
    IDEMPOTENCY_KEY_INVALID: 400,
    IDEMPOTENCY_KEY_REUSED: 409,
    IDEMPOTENCY_KEY_IN_FLIGHT: 409,
  };
  for (const [code, status] of Object.entries(named)) assert.equal(registry[code]?.status, status, code);
});
