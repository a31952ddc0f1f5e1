/**
 * Bad-value fuzz, the long run of test/http/bad-values-property.test.ts (same generator,
 * test/support/bad-values.ts): requests with a value outside its rule for every operation with a
 * body, through the app on a copy of the seeded demo company, counted by status and error code.
 * Any 5xx is listed with its request. Not a test: it prints, and exits 1 when a 5xx was seen.
 *
 *   node --import tsx bench/fuzz.ts                       SQLite
 *   TEST_ENGINE=postgres TEST_POSTGRES_URL=postgres://... node --import tsx bench/fuzz.ts
 *   FUZZ_CASES (default 20000), FUZZ_SEED (default: random; printed so a run can be repeated)
 */
import fc from 'fast-check';
import { startTestApp } from '../test/support/app';
import { installPostingFixture } from '../test/support/posting-fixture';
import { caseArbitrary, type Case } from '../test/support/bad-values';

const CASES = Number(process.env.FUZZ_CASES ?? 20_000);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

async function main(): Promise<void> {
  // Admin-only locking (the operator opt-in): a value the lock accepts would otherwise lock the database mid-run.
  const t = await startTestApp({ config: { rateLimitPerMinute: 0, validateResponses: false, lockAdminOnly: true } });
  await installPostingFixture(t.knex);
  const counts = new Map<string, number>();
  const byOperation = new Map<string, number>();
  const serverErrors: string[] = [];
  let refusedMustFail = 0;
  let acceptedMustFail = 0;
  const started = Date.now();
  const cases: Case[] = fc.sample(caseArbitrary, { numRuns: CASES, seed: SEED });
  try {
    for (const c of cases) {
      let req = t.http.post(`/api/v3${c.op.path}${c.query}`).set('x-api-key', t.apiKey).set('Content-Type', 'application/json');
      if (c.idempotencyKey) req = req.set('Idempotency-Key', c.idempotencyKey);
      const res = await req.send(c.body);
      const code = res.status >= 400 ? String(res.headers['x-error-code'] ?? '(no code)') : '';
      const key = `${res.status} ${code}`.trim();
      counts.set(key, (counts.get(key) ?? 0) + 1);
      byOperation.set(c.op.operationId, (byOperation.get(c.op.operationId) ?? 0) + 1);
      if (res.status >= 500) serverErrors.push(`${c.label}\n    ${c.body.slice(0, 300)}\n    -> ${res.text.slice(0, 300)}`);
      if (c.mustFail) {
        if (res.status >= 400) refusedMustFail += 1;
        else acceptedMustFail += 1;
      }
    }
  } finally {
    await t.close();
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(`engine ${t.engine}, ${cases.length} cases in ${seconds.toFixed(1)} s (${(cases.length / seconds).toFixed(0)}/s), seed ${SEED}`);
  console.log('\n| status | code | count |\n|---|---|---|');
  for (const [key, n] of [...counts].sort((a, b) => b[1] - a[1])) {
    const [status, code = ''] = key.split(' ');
    console.log(`| ${status} | ${code} | ${n} |`);
  }
  const writes = (byOperation.get('postLedgerTransaction') ?? 0) + (byOperation.get('postApInvoice') ?? 0);
  console.log(`\noperations covered: ${byOperation.size}; write cases: ${writes}`);
  console.log(`must-fail cases refused: ${refusedMustFail}, accepted (a bug): ${acceptedMustFail}`);
  console.log(`5xx: ${serverErrors.length}`);
  for (const e of serverErrors.slice(0, 20)) console.log(`  ${e}`);
  if (serverErrors.length > 0 || acceptedMustFail > 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
