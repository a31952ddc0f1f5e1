/**
 * The breaking-change gate: compares the public document against the published baseline with
 * Optic (@useoptic/optic, which reads OpenAPI 3.1 and runs offline), and fails on a breaking change
 * unless `info.version` moved to a new major version (Optic's breaking-changes ruleset skips a
 * major version change). Additive changes pass; the report is printed either way.
 *
 *   tsx scripts/check-breaking.ts [BASELINE] [CURRENT]
 *   defaults: docs/contract/openapi-3.0.0.yaml and generated/openapi.public.yaml
 *
 * Exit 0: no breaking change (or a new major version); 1: breaking; 2: the tool could not run.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const baseline = process.argv[2] ?? path.join(ROOT, 'docs', 'contract', 'openapi-3.0.0.yaml');
const current = process.argv[3] ?? path.join(ROOT, 'generated', 'openapi.public.yaml');
const optic = path.join(ROOT, 'node_modules', '.bin', 'optic');

const run = spawnSync(optic, ['diff', baseline, current, '--check', '--severity', 'error'], {
  encoding: 'utf8',
  // No telemetry and no cloud: the gate runs offline, in CI as on a laptop.
  env: { ...process.env, OPTIC_TELEMETRY_LEVEL: 'off', CI: process.env.CI ?? 'true' },
  maxBuffer: 64 * 1024 * 1024,
  timeout: 600_000,
});
process.stdout.write(run.stdout ?? '');
process.stderr.write(run.stderr ?? '');
if (run.error || run.status === null) {
  process.stderr.write(`breaking-change gate: optic did not run (${run.error?.message ?? `signal ${run.signal}`})\n`);
  process.exit(2);
}
if (run.status !== 0) {
  process.stderr.write(
    `breaking-change gate: ${path.relative(ROOT, current)} breaks ${path.relative(ROOT, baseline)}; ` +
      'make the change additive, or give info.version a new major version (a new baseline is then published)\n',
  );
  process.exit(1);
}
process.stdout.write(`breaking-change gate: no breaking change against ${path.relative(ROOT, baseline)}\n`);
