/**
 * The breaking-change gate (scripts/check-breaking.ts over scripts/lib/breaking-changes.ts: Optic's
 * breaking-changes ruleset, in-process) on small documents cut from the published baseline: each
 * kind of breaking change fails, additive changes pass, a new major info.version lets a removal
 * pass. Every case also runs without pruning and must give the same verdicts, which is what makes
 * the pruning (what lets the gate run in seconds on the whole public document) safe to keep.
 * (`make test` runs the gate on the real document against docs/contract/openapi-3.0.0.yaml.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { compareDocuments, loadDocument, type Document, type GateResult } from '../../scripts/lib/breaking-changes';

const ROOT = path.resolve(__dirname, '..', '..');
const KEPT_STATUSES = ['200', '400', '409'];
let dir: string;
let published: any;
const baselines = new Map<string, Promise<{ doc: any; file: string; loaded: Document }>>();

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'breaking-'));
  published = parse(fs.readFileSync(path.join(ROOT, 'docs', 'contract', 'openapi-3.0.0.yaml'), 'utf8'));
  assert.equal(published.openapi.slice(0, 3), '3.1', 'the baseline is OpenAPI 3.1');
  assert.equal(published.info.version, '3.0.0');
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * The published baseline cut down to `operations`, each with its 200 and two refusals (400 and,
 * where declared, 409: unchanged responses to prune) and the components they reach, written to a
 * file and loaded once per set: each case carries only what it changes, so that running it
 * without pruning too stays short.
 */
function baselineOf(operations: string[], tweak?: (doc: any) => void): Promise<{ doc: any; file: string; loaded: Document }> {
  const key = `${operations.join(' ')}${tweak ? ` ${tweak.toString()}` : ''}`;
  let entry = baselines.get(key);
  if (!entry) {
    const doc = structuredClone(published);
    doc.paths = Object.fromEntries(operations.map((p) => [p, doc.paths[p]]));
    assert.ok(operations.every((p) => doc.paths[p]?.post?.responses['200']), `${key}: the operations exist in the baseline`);
    for (const p of operations) {
      const responses = doc.paths[p].post.responses;
      for (const status of Object.keys(responses)) if (!KEPT_STATUSES.includes(status)) delete responses[status];
    }
    keepReachableComponents(doc);
    tweak?.(doc);
    const file = path.join(dir, `baseline-${baselines.size}.yaml`);
    fs.writeFileSync(file, stringify(doc));
    entry = loadDocument(file).then((loaded) => ({ doc, file, loaded }));
    baselines.set(key, entry);
  }
  return entry;
}

/** Drops the components no kept operation reaches, so that each document loads in milliseconds. */
function keepReachableComponents(doc: any): void {
  const reached = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && !reached.has(value)) {
        reached.add(value);
        const [, , kind, name] = value.split('/');
        walk(doc.components[kind!][name!]);
      } else walk(value);
    }
  };
  walk(doc.paths);
  for (const [kind, entries] of Object.entries<Record<string, unknown>>(doc.components)) {
    for (const name of Object.keys(entries)) if (!reached.has(`#/components/${kind}/${name}`)) delete entries[name];
  }
}

function writeCurrent(baselineDoc: any, change: (doc: any) => void): string {
  const doc = structuredClone(baselineDoc);
  change(doc);
  const file = path.join(dir, `current-${Math.random().toString(36).slice(2)}.yaml`);
  fs.writeFileSync(file, stringify(doc));
  return file;
}

const verdicts = (r: GateResult) => r.failures.map((f) => `${f.where} | ${f.rule} | ${f.error}`).sort();

/**
 * The gate in-process on the baseline cut to `operations` (then `tweak`ed, for what the published
 * document lacks) and that cut with `change` applied, pruned; asserts that the whole documents
 * give the same verdicts.
 */
async function gate(operations: string[], change: (doc: any) => void, tweak?: (doc: any) => void): Promise<GateResult> {
  const baseline = await baselineOf(operations, tweak);
  const current = await loadDocument(writeCurrent(baseline.doc, change));
  const pruned = await compareDocuments(structuredClone(baseline.loaded), structuredClone(current));
  const whole = await compareDocuments(structuredClone(baseline.loaded), current, { prune: false });
  assert.deepEqual(verdicts(pruned), verdicts(whole), 'pruning changed the verdicts');
  return pruned;
}

function assertBreaks(r: GateResult, where: RegExp, message: RegExp): void {
  assert.ok(
    r.failures.some((f) => where.test(f.where) && message.test(`${f.rule}: ${f.error}`)),
    `expected a breaking change at ${where} matching ${message}; got:\n${verdicts(r).join('\n') || '(none)'}`,
  );
}

const schemas = (doc: any) => doc.components.schemas;
const drop = (list: string[] | undefined, name: string) => (list ?? []).filter((n) => n !== name);

test('the unchanged document passes, with nothing left to check', async () => {
  const r = await gate(['/utility/ping', '/vendors/query'], () => {});
  assert.deepEqual(r.failures, []);
  assert.deepEqual(r.changes, []);
  assert.equal(r.checks, 0);
});

test('additive changes pass: an optional field, an operation, a status, a header, a wider request enum', async () => {
  const r = await gate(['/utility/ping', '/utility/lock', '/vendors/query', '/ap-invoices'], (doc) => {
    schemas(doc).PingResult.properties.serverVersion = { type: 'string', description: 'Build of the server.' };
    schemas(doc).LockRequest.properties.reason = { type: 'string', maxLength: 200 };
    schemas(doc).ApInvoiceInput.properties.status.enum.push(3);
    doc.paths['/parts/query'] = structuredClone(doc.paths['/vendors/query']);
    doc.paths['/parts/query'].post.operationId = 'queryPartsAgain';
    doc.paths['/utility/lock'].post.responses['418'] = { description: 'A teapot.' };
    doc.paths['/utility/ping'].post.responses['200'].headers['X-Server-Build'] = { schema: { type: 'string' } };
    doc.paths['/utility/ping'].post.description = 'Reworded.';
  });
  assert.deepEqual(r.failures, []);
  const added = r.changes.filter((c) => c.change === 'added').map((c) => c.pointer);
  assert.ok(added.includes('/paths/~1parts~1query/post'), added.join('\n'));
  assert.ok(added.includes('/paths/~1utility~1lock/post/responses/418'), added.join('\n'));
  assert.ok(added.some((p) => p.endsWith('/properties/serverVersion')), added.join('\n'));
});

test('a removed operation fails', async () => {
  const r = await gate(['/utility/ping', '/utility/lock'], (doc) => {
    delete doc.paths['/utility/lock'];
  });
  assertBreaks(r, /POST \/utility\/lock/, /operation/i);
});

test('a removed response status fails', async () => {
  const r = await gate(['/utility/lock'], (doc) => {
    delete doc.paths['/utility/lock'].post.responses['409'];
  });
  assertBreaks(r, /POST \/utility\/lock.*409/, /status code/i);
});

test('a removed response field fails', async () => {
  const r = await gate(['/utility/ping'], (doc) => {
    delete schemas(doc).PingResult.properties.serverTime;
    schemas(doc).PingResult.required = drop(schemas(doc).PingResult.required, 'serverTime');
  });
  assertBreaks(r, /POST \/utility\/ping response 200.*serverTime/, /remov/i);
});

test('a response field removed deep inside a body, beside an addition in the same body, fails', async () => {
  const r = await gate(['/vendors/query'], (doc) => {
    delete schemas(doc).Vendor.properties.email;
    schemas(doc).Vendor.properties.website = { type: 'string' };
    schemas(doc).VendorPage.properties.nextPageToken = { type: 'string' };
  });
  assertBreaks(r, /POST \/vendors\/query response 200.*data\/items\/email/, /remov/i);
});

test('a required response field made optional fails (the field itself unchanged)', async () => {
  const r = await gate(['/utility/ping'], (doc) => {
    schemas(doc).PingResult.required = drop(schemas(doc).PingResult.required, 'serverTime');
  });
  assertBreaks(r, /POST \/utility\/ping response 200.*serverTime/, /optional/i);
});

test('a new required request field fails', async () => {
  const r = await gate(['/utility/lock'], (doc) => {
    schemas(doc).LockRequest.properties.reason = { type: 'string' };
    schemas(doc).LockRequest.required.push('reason');
  });
  assertBreaks(r, /POST \/utility\/lock request/, /required request property 'reason'/);
});

test('an optional request field made required fails (the field itself unchanged)', async () => {
  const r = await gate(['/ledger-transactions'], (doc) => {
    schemas(doc).JournalInput.required.push('description');
  });
  assertBreaks(r, /POST \/ledger-transactions request.*description/, /required/i);
});

test('a narrowed request enum fails', async () => {
  const r = await gate(['/ap-invoices'], (doc) => {
    schemas(doc).ApInvoiceInput.properties.status.enum = [1];
  });
  assertBreaks(r, /POST \/ap-invoices request.*status/, /enum/i);
});

test('a widened response enum fails', async () => {
  const r = await gate(['/utility/ping'], (doc) => {
    schemas(doc).PingResult.properties.status.enum.push('degraded');
  });
  assertBreaks(r, /POST \/utility\/ping response 200.*status/, /enum/i);
});

test('a changed type fails, in a response and in a request', async () => {
  const r = await gate(['/utility/ping', '/ledger-transactions'], (doc) => {
    schemas(doc).PingResult.properties.databaseRoundTripMs.type = 'string';
    schemas(doc).JournalInput.properties.sourceNumber.type = 'string';
  });
  assertBreaks(r, /POST \/utility\/ping response 200.*databaseRoundTripMs/, /type/i);
  assertBreaks(r, /POST \/ledger-transactions request.*sourceNumber/, /type/i);
});

test('a response union that admits a new type fails', async () => {
  const union = (doc: any) => {
    schemas(doc).PingResult.properties.lockUser = {
      type: 'object',
      properties: { name: { type: 'string' }, since: { type: 'string' } },
      oneOf: [{ required: ['name'] }, { required: ['since'] }],
    };
  };
  const r = await gate(
    ['/utility/ping'],
    (doc) => {
      schemas(doc).PingResult.properties.lockUser.properties.since = { type: 'integer' };
      schemas(doc).PingResult.properties.engine.description = 'Reworded.';
    },
    union,
  );
  assertBreaks(r, /POST \/utility\/ping response 200.*lockUser/, /type/i);
});

test('a new required parameter fails', async () => {
  const r = await gate(['/vendors/query'], (doc) => {
    doc.paths['/vendors/query'].post.parameters = [{ name: 'X-Tenant', in: 'header', required: true, schema: { type: 'string' } }];
  });
  assertBreaks(r, /POST \/vendors\/query/, /required header parameter X-Tenant/);
});

test('a removal passes under a new major info.version', async () => {
  const r = await gate(['/utility/ping', '/utility/lock'], (doc) => {
    delete doc.paths['/utility/lock'];
    doc.info.version = '4.0.0';
  });
  assert.deepEqual(r.failures, []);
});

/** The command itself: exit status, report, and nothing written into the repository. */
function runScript(...args: string[]): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/check-breaking.ts', ...args], { cwd: ROOT });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, out }));
  });
}

test('scripts/check-breaking.ts exits 1 on a breaking change, 0 on an additive one, 2 on a broken document, and writes nothing', async () => {
  const listing = () => fs.readdirSync(ROOT).sort();
  const rootBefore = listing();
  const baseline = await baselineOf(['/utility/ping', '/utility/lock']);
  const broken = writeCurrent(baseline.doc, (doc) => (doc.paths['/utility/ping'].post.responses = 'none'));
  const [breaking, additive, invalid] = await Promise.all([
    runScript(baseline.file, writeCurrent(baseline.doc, (doc) => delete doc.paths['/utility/lock'])),
    runScript(baseline.file, writeCurrent(baseline.doc, (doc) => (doc.paths['/utility/lock'].post.responses['418'] = { description: 'A teapot.' }))),
    runScript(baseline.file, broken),
  ]);
  assert.equal(breaking.status, 1, breaking.out);
  assert.match(breaking.out, /\d+ breaking change\(s\):\n {2}POST \/utility\/lock: prevent operation removal/);
  assert.match(breaking.out, /breaks .*baseline-\d+\.yaml/);
  assert.equal(additive.status, 0, additive.out);
  assert.match(additive.out, /POST \/utility\/lock: 1 added/);
  assert.match(additive.out, /no breaking change/);
  assert.equal(invalid.status, 2, invalid.out);
  assert.match(invalid.out, /could not compare/);
  assert.deepEqual(listing(), rootBefore, 'the gate wrote into the repository root');
  assert.ok(!fs.existsSync(path.join(ROOT, 'ci-run-details.json')));
});
