/**
 * The documents speak published names (issue 26): under src/engines/posting/documents/ no code
 * spells a table or column of the accounting database. The catalog (generated/catalog.ts) maps the
 * published names, and the records module (src/engines/posting/records/) turns them into SQL. So
 * a document has, outside its comments:
 *   - no `trx(...)` call: it reads, inserts and updates through the records module;
 *   - no word that is a legacy table or column name of the catalog (`acpinv`, `vndnum`, `_idnum`,
 *     the audit columns), as an identifier, a property or a string;
 *   - no text width written by hand (`.slice(0, 50)`): widths come from the column (records fitText,
 *     src/catalog/bounds.ts); another cut is a named constant.
 * A legacy name that is also a published name (`status`, `amount`) is a published name. Comments
 * may cite the legacy system's names for a reader who knows them.
 *
 * And every document folder has the same anatomy, read top to bottom: input.ts (the body),
 * references.ts (what it refers to, resolved), cascade.ts (what it posts), read-back.ts (its
 * result), index.ts (the wiring: the line writes.ts lists); a file over 300 lines says why at its top.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CATALOG } from '../../../generated/catalog';

const DOCUMENTS = path.resolve(__dirname, '..', '..', '..', 'src', 'engines', 'posting', 'documents');

/** Columns every table has that no entity publishes (src/engines/posting/records/audit.ts). */
const AUDIT_COLUMNS = ['insusr', 'insdte', 'updusr', 'upddte'];

/**
 * Legacy names that are also ordinary words a document uses as a variable (`const source = ...`):
 * checked as a whole string literal only (`'source'` names the transaction-sources table).
 */
const ENGLISH_WORDS = new Set(['source', 'cancel', 'serial']);

function names(): { legacy: Set<string>; published: Set<string> } {
  const legacy = new Set<string>(AUDIT_COLUMNS);
  const published = new Set<string>();
  for (const entity of Object.values(CATALOG)) {
    published.add(entity.entity);
    legacy.add(entity.table);
    legacy.add(entity.keyColumn);
    for (const field of Object.values(entity.fields)) {
      published.add(field.name);
      legacy.add(field.column);
    }
    for (const child of Object.values(entity.children)) {
      published.add(child.name);
      legacy.add(child.table);
      legacy.add(child.parentColumn);
      legacy.add(child.orderColumn);
      for (const field of Object.values(child.fields)) {
        published.add(field.name);
        legacy.add(field.column);
      }
    }
  }
  for (const name of published) legacy.delete(name);
  return { legacy, published };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const full = path.join(dir, entry);
      if (statSync(full).isDirectory()) return sourceFiles(full);
      return entry.endsWith('.ts') ? [full] : [];
    });
}

/** The code without its comments (lines kept, so that findings name the right line). */
function withoutComments(text: string): string {
  let out = '';
  let i = 0;
  let quote: string | null = null;
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (quote) {
      out += c;
      if (c === '\\') {
        out += next ?? '';
        i += 2;
        continue;
      }
      if (c === quote) quote = null;
      i += 1;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') {
      quote = c;
      out += c;
      i += 1;
    } else if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i += 1;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const comment = text.slice(i, end < 0 ? text.length : end + 2);
      out += comment.replace(/[^\n]/g, ' ');
      i += comment.length;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

interface Finding {
  where: string;
  what: string;
}

/** What `text` (a file's content, named `name`) spells that a document must not. */
function findingsIn(text: string, name: string, legacy: ReadonlySet<string>): Finding[] {
  const out: Finding[] = [];
  withoutComments(text)
    .split('\n')
    .forEach((line, i) => {
      const where = `${name}:${i + 1}`;
      if (/\btrx\s*\(/.test(line)) out.push({ where, what: 'a trx(...) call: read and write through the records module' });
      for (const m of line.matchAll(/\.slice\(\s*0\s*,\s*\d+\s*\)/g)) out.push({ where, what: `${m[0]}: a width written by hand (records fitText, or a named constant)` });
      for (const m of line.matchAll(/['"`]([A-Za-z_][A-Za-z0-9_]*)['"`]/g)) {
        if (legacy.has(m[1]!) || ENGLISH_WORDS.has(m[1]!)) out.push({ where, what: `the legacy name ${m[0]}` });
      }
      for (const m of line.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) {
        if (legacy.has(m[0]) && !ENGLISH_WORDS.has(m[0])) out.push({ where, what: `the legacy name ${m[0]}` });
      }
    });
  return out;
}

function findings(file: string, legacy: ReadonlySet<string>): Finding[] {
  return findingsIn(readFileSync(file, 'utf8'), path.relative(path.resolve(__dirname, '..', '..', '..'), file), legacy);
}

test('the names checked are the catalog legacy names, and the documents are found', () => {
  const { legacy, published } = names();
  for (const name of ['acpinv', 'apivln', 'vndnum', '_idnum', '_idref', 'linnum', 'lgrrec', 'upddte', 'updusr', 'source']) assert.ok(legacy.has(name), `${name} is a legacy name`);
  for (const name of ['status', 'amount']) assert.ok(published.has(name) && !legacy.has(name), `${name} is a published name`);
  const files = sourceFiles(DOCUMENTS);
  assert.ok(files.length >= 7 * 5, `every document folder's files are read (${files.length})`);
});

test('no document under src/engines/posting/documents/ spells a legacy table or column, calls trx(...) or cuts text by hand', () => {
  const { legacy } = names();
  const found = sourceFiles(DOCUMENTS).flatMap((file) => findings(file, legacy));
  assert.deepEqual(
    found.map((f) => `${f.where}: ${f.what}`),
    [],
    'documents speak published names: the records module (src/engines/posting/records/) maps them through the catalog',
  );
});

/** The files every document folder has. */
const ANATOMY = ['cascade.ts', 'index.ts', 'input.ts', 'read-back.ts', 'references.ts'];
const MAX_LINES = 300;

test('every document folder has the same anatomy, and no file over 300 lines without a reason at its top', () => {
  const folders = readdirSync(DOCUMENTS).filter((entry) => statSync(path.join(DOCUMENTS, entry)).isDirectory());
  assert.ok(folders.length >= 7, `document folders: ${folders.join(', ')}`);
  const missing = folders.flatMap((folder) => ANATOMY.filter((file) => !readdirSync(path.join(DOCUMENTS, folder)).includes(file)).map((file) => `${folder}/${file}`));
  assert.deepEqual(missing, [], 'each document folder: input, references, cascade, read-back, index');
  const long = sourceFiles(DOCUMENTS)
    .map((file) => ({ file: path.relative(DOCUMENTS, file), lines: readFileSync(file, 'utf8').split('\n') }))
    .filter(({ lines }) => lines.length > MAX_LINES && !lines.slice(0, 20).some((line) => /over 300 lines/i.test(line)))
    .map(({ file, lines }) => `${file}: ${lines.length} lines`);
  assert.deepEqual(long, [], `a document file over ${MAX_LINES} lines says why in its opening comment ("Over 300 lines: ...")`);
});

test('the check finds what it looks for, and leaves comments alone', () => {
  const { legacy } = names();
  const probe = [
    "const row = await trx('acpinv').where({ vndnum: 1 }).first('_idnum'); // vndnum in a comment is fine",
    '/* so is acpinv here */ const text = description.slice(0, 50);',
    "const source = await loadReferenceRows(ctx, 'source', refs, ['inactv']);",
    'const ok = `${vendorNumber} status ${row.status}`; // a published name',
  ].join('\n');
  assert.deepEqual(
    findingsIn(probe, 'probe.ts', legacy).map((f) => `${f.where} ${f.what}`),
    [
      'probe.ts:1 a trx(...) call: read and write through the records module',
      "probe.ts:1 the legacy name 'acpinv'",
      "probe.ts:1 the legacy name '_idnum'",
      'probe.ts:1 the legacy name acpinv',
      'probe.ts:1 the legacy name vndnum',
      'probe.ts:1 the legacy name _idnum',
      'probe.ts:2 .slice(0, 50): a width written by hand (records fitText, or a named constant)',
      "probe.ts:3 the legacy name 'source'",
      "probe.ts:3 the legacy name 'inactv'",
      'probe.ts:3 the legacy name inactv',
    ],
  );
});
