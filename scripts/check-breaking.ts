/**
 * The breaking-change gate: compares the public document against the published baseline with
 * Optic's breaking-changes ruleset (@useoptic/optic's packages, which read OpenAPI 3.1 and run
 * offline, called in-process by scripts/lib/breaking-changes.ts: no CLI, no telemetry, nothing
 * written to disk), and fails on a breaking change unless `info.version` moved to a new major
 * version (the ruleset skips a major version change). Additive changes pass; the report is
 * printed either way.
 *
 *   tsx scripts/check-breaking.ts [BASELINE] [CURRENT]
 *   defaults: docs/contract/openapi-3.0.0.yaml and generated/openapi.public.yaml
 *
 * Exit 0: no breaking change (or a new major version); 1: breaking; 2: the gate could not run
 * (a document that does not load or is not valid OpenAPI).
 */
import path from 'node:path';
import { compareFiles, formatReport, type GateResult } from './lib/breaking-changes';

const ROOT = path.resolve(__dirname, '..');
const baseline = process.argv[2] ?? path.join(ROOT, 'docs', 'contract', 'openapi-3.0.0.yaml');
const current = process.argv[3] ?? path.join(ROOT, 'generated', 'openapi.public.yaml');
/** Relative to the repository when inside it, else absolute. */
function name(file: string): string {
  const relative = path.relative(ROOT, path.resolve(file));
  return relative.startsWith('..') ? path.resolve(file) : relative;
}

async function main(): Promise<number> {
  const startedMs = Date.now();
  let result: GateResult;
  try {
    result = await compareFiles(baseline, current);
  } catch (e) {
    process.stderr.write(`breaking-change gate: could not compare (${e instanceof Error ? e.message : String(e)})\n`);
    return 2;
  }
  process.stdout.write(formatReport(result));
  const seconds = ((Date.now() - startedMs) / 1000).toFixed(1);
  if (result.failures.length > 0) {
    process.stderr.write(
      `breaking-change gate: ${name(current)} breaks ${name(baseline)} (${seconds} s); ` +
        'make the change additive, or give info.version a new major version (a new baseline is then published)\n',
    );
    return 1;
  }
  process.stdout.write(`breaking-change gate: no breaking change against ${name(baseline)} (${seconds} s)\n`);
  return 0;
}

main().then((code) => {
  process.exitCode = code;
});
