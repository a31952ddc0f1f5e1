/**
 * The breaking-change gate's engine. It runs the pieces `optic diff --check` runs (Optic's loader,
 * validator and denormaliser from @useoptic/openapi-io, its differ from @useoptic/openapi-utilities
 * and its `breaking-changes` ruleset), in this process and without the CLI: the CLI wrote
 * `ci-run-details.json` into its working directory, started telemetry and an update check, and
 * took about a minute at full CPU on the 19,500-line public document.
 *
 * The minute went into Optic's rule runner, which rebuilds every property of every body once per
 * rule, before and after, whether it changed or not. So before the rules run, `prune` removes
 * what cannot break anything:
 * - what the two documents share unchanged, from both: an operation, a response, a header, a media
 *   type or a schema property that is deep-equal at the same place on both sides. Every rule of the
 *   ruleset fires on a node that was added, changed or removed; a node equal on both sides is none
 *   of these. A property is pruned only when its parent requires it on both sides or on neither, so
 *   "made optional" and "made required" still reach the rules; union schemas (oneOf/anyOf) are
 *   compared whole by the union rules and are never pruned inside.
 * - an operation, or a response status, that only the current document has: the ruleset's rules
 *   skip new operations ("rule doesn't apply for new operations") and check responses only when
 *   they change or go. They stay in the report as added.
 * test/contract/breaking-change-gate.test.ts runs every case with and without pruning and expects the same
 * verdicts, so a future ruleset that looks at more fails that test instead of passing silently.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

// Optic's packages, resolved from @useoptic/optic's own location: the versions its CLI runs.
const opticRequire = createRequire(require.resolve('@useoptic/optic'));
const io = opticRequire('@useoptic/openapi-io') as typeof import('@useoptic/openapi-io');
const utilities = opticRequire('@useoptic/openapi-utilities') as typeof import('@useoptic/openapi-utilities');
const rulesetsBase = opticRequire('@useoptic/rulesets-base') as typeof import('@useoptic/rulesets-base');
const standardRulesets = opticRequire('@useoptic/standard-rulesets') as typeof import('@useoptic/standard-rulesets');

/** A loaded document: dereferenced (cycles stay `$ref`), allOf merged, path parameters moved into operations. */
export type Document = Record<string, any>;

export interface Failure {
  /** Where Optic found it, e.g. `POST /utility/ping response 200 response body: application/json property serverTime`. */
  where: string;
  /** The rule's name, e.g. `prevent response property removal`. */
  rule: string;
  error: string;
}

export interface Change {
  change: 'added' | 'changed' | 'removed';
  /** JSON pointer into the current document (added, changed) or the baseline (removed). */
  pointer: string;
}

export interface GateResult {
  failures: Failure[];
  changes: Change[];
  /** Rules evaluated (passed or failed) on the pruned documents. */
  checks: number;
  /** Operations, responses, headers, media types and properties pruned before the rules ran. */
  pruned: number;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Reads, validates (strictly, as `optic diff` does by default) and denormalises one document. */
export async function loadDocument(file: string): Promise<Document> {
  const parsed = await io.parseOpenAPIWithSourcemap(path.resolve(file));
  const version = io.checkOpenAPIVersion(parsed.jsonLike);
  if (version !== '3.0.x' && version !== '3.1.x') throw new Error(`${file}: OpenAPI ${version} is not supported`);
  io.validateOpenApiV3Document(parsed.jsonLike, parsed.sourcemap, { strictOpenAPI: true });
  // Without the sourcemap: it only records where merged nodes came from (for Optic's web view),
  // and keeping it made the denormaliser take seconds on the public document.
  return io.denormalize({ ...parsed, sourcemap: undefined as never }, version, []).jsonLike as Document;
}

/**
 * Removes what cannot break anything (see the top of this file) from both documents, in place.
 * Returns how many nodes went, and the additions pruned (for the report).
 */
export function prune(baseline: Document, current: Document): { pruned: number; added: Change[] } {
  let pruned = 0;
  const added: Change[] = [];
  const before = baseline.paths ?? {};
  const after = current.paths ?? {};
  for (const pathKey of Object.keys(after)) {
    const a = after[pathKey];
    const b = before[pathKey];
    if (!isObject(a)) continue;
    for (const method of METHODS) {
      if (!isObject(a[method])) continue;
      const pointer = `/paths/${escapePointer(pathKey)}/${method}`;
      if (!isObject(b?.[method])) {
        delete a[method];
        added.push({ change: 'added', pointer });
      } else if (isDeepStrictEqual(b[method], a[method])) {
        delete b[method];
        delete a[method];
        pruned++;
      } else {
        pruned += pruneOperation(b[method], a[method], pointer, added);
      }
    }
    if (!METHODS.some((m) => m in a) && !(isObject(b) && METHODS.some((m) => m in b))) {
      delete after[pathKey];
      if (b !== undefined) delete before[pathKey];
    }
  }
  return { pruned: pruned + added.length, added };
}

function pruneOperation(b: any, a: any, pointer: string, added: Change[]): number {
  let pruned = 0;
  if (isObject(b.requestBody) && isObject(a.requestBody)) pruned += pruneContent(b.requestBody.content, a.requestBody.content);
  if (isObject(b.responses) && isObject(a.responses)) {
    for (const status of Object.keys(a.responses)) {
      if (status in b.responses) continue;
      delete a.responses[status];
      added.push({ change: 'added', pointer: `${pointer}/responses/${escapePointer(status)}` });
    }
    pruned += pruneEqualEntries(b.responses, a.responses, (rb, ra) => {
      let n = 0;
      if (isObject(rb.headers) && isObject(ra.headers)) n += pruneEqualEntries(rb.headers, ra.headers);
      return n + pruneContent(rb.content, ra.content);
    });
  }
  return pruned;
}

function pruneContent(b: unknown, a: unknown): number {
  if (!isObject(b) || !isObject(a)) return 0;
  return pruneEqualEntries(b, a, (mb, ma) => pruneSchema(mb.schema, ma.schema));
}

function pruneSchema(b: unknown, a: unknown): number {
  if (!isObject(b) || !isObject(a) || isUnion(b) || isUnion(a)) return 0;
  let pruned = 0;
  if (isObject(b.properties) && isObject(a.properties)) {
    for (const key of Object.keys(b.properties)) {
      if (!(key in a.properties)) continue;
      if (requires(b, key) === requires(a, key) && isDeepStrictEqual(b.properties[key], a.properties[key])) {
        delete b.properties[key];
        delete a.properties[key];
        unrequire(b, key);
        unrequire(a, key);
        pruned++;
      } else {
        pruned += pruneSchema(b.properties[key], a.properties[key]);
      }
    }
  }
  return pruned + pruneSchema(b.items, a.items);
}

/** Deletes the keys whose values are deep-equal on both sides; recurses with `inner` into the others. */
function pruneEqualEntries(b: Record<string, any>, a: Record<string, any>, inner?: (b: any, a: any) => number): number {
  let pruned = 0;
  for (const key of Object.keys(b)) {
    if (!(key in a)) continue;
    if (isDeepStrictEqual(b[key], a[key])) {
      delete b[key];
      delete a[key];
      pruned++;
    } else if (inner && isObject(b[key]) && isObject(a[key])) {
      pruned += inner(b[key], a[key]);
    }
  }
  return pruned;
}

function requires(schema: Record<string, any>, key: string): boolean {
  return Array.isArray(schema.required) && schema.required.includes(key);
}

function unrequire(schema: Record<string, any>, key: string): void {
  if (!Array.isArray(schema.required)) return;
  schema.required = schema.required.filter((k: unknown) => k !== key);
  if (schema.required.length === 0) delete schema.required;
}

function isUnion(schema: Record<string, any>): boolean {
  return 'oneOf' in schema || 'anyOf' in schema;
}

function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Runs Optic's breaking-changes ruleset (its defaults: a new major `info.version` skips the
 * checks) on the two loaded documents. `prune: false` runs it on the whole documents (slow on the
 * public one; the tests use it to show pruning keeps the verdicts).
 */
export async function compareDocuments(
  baseline: Document,
  current: Document,
  options: { prune?: boolean } = {},
): Promise<GateResult> {
  const { pruned, added } = options.prune === false ? { pruned: 0, added: [] } : prune(baseline, current);
  const ruleset = await standardRulesets.StandardRulesets['breaking-changes'].fromOpticConfig({});
  if (typeof ruleset === 'string') throw new Error(`Optic's breaking-changes ruleset: ${ruleset}`);
  const runner = new rulesetsBase.RuleRunner([ruleset]);
  const compared = await utilities.compareSpecs(
    { jsonLike: baseline, isEmptySpec: false } as never,
    { jsonLike: current, isEmptySpec: false } as never,
    runner,
    {},
  );
  const failures = compared.results
    .filter((r) => !r.passed && !r.exempted && (r.severity ?? utilities.Severity.Error) >= utilities.Severity.Error)
    .map((r) => ({ where: r.where, rule: r.name ?? 'rule', error: r.error ?? '' }));
  const changes = [
    ...added,
    ...compared.diffs.map((d) => ({
      change: utilities.typeofDiff(d) as Change['change'],
      pointer: d.after ?? d.before,
    })),
  ];
  return { failures, changes, checks: compared.results.length, pruned };
}

/** Loads both files and compares them: the gate on two files. */
export async function compareFiles(baselineFile: string, currentFile: string): Promise<GateResult> {
  const [baseline, current] = await Promise.all([loadDocument(baselineFile), loadDocument(currentFile)]);
  return compareDocuments(baseline, current);
}

/**
 * The report: the changes counted per operation (`POST /parts/query: 1 added`), then each breaking
 * change with where it is, the rule and Optic's message.
 */
export function formatReport(result: GateResult): string {
  const perPlace = new Map<string, Record<string, number>>();
  for (const { change, pointer } of result.changes) {
    const place = describePlace(pointer);
    const counts = perPlace.get(place) ?? {};
    counts[change] = (counts[change] ?? 0) + 1;
    perPlace.set(place, counts);
  }
  const lines = [`${result.changes.length} change(s) in ${perPlace.size} place(s); ${result.checks} check(s) run`];
  for (const [place, counts] of perPlace) {
    lines.push(`  ${place}: ${Object.entries(counts).map(([change, n]) => `${n} ${change}`).join(', ')}`);
  }
  if (result.failures.length > 0) {
    lines.push(`${result.failures.length} breaking change(s):`);
    for (const f of result.failures) lines.push(`  ${f.where}: ${f.rule}: ${f.error}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `/paths/~1utility~1ping/post/...` → `POST /utility/ping`; anything else → its first segment. */
function describePlace(pointer: string): string {
  const [root, pathKey, method] = pointer.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (root === 'paths' && pathKey !== undefined) return method ? `${method.toUpperCase()} ${pathKey}` : pathKey;
  return root ?? '(document)';
}
