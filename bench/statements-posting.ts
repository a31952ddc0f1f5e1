/**
 * Statement log of a write, in process (supertest): every SQL text a posting runs, how often per
 * request and its time (knex query / query-response events).
 *   W=invoices N=200 node --import tsx bench/statements-posting.ts      (SHOW=1 N=1: print each statement)
 */
import { startTestApp } from '../test/support/app';
import { installPostingFixture } from '../test/support/posting-fixture';
import { SCENARIOS } from './posting-scenarios';
async function main() {
  const t = await startTestApp();
  await installPostingFixture(t.knex);
  const s = SCENARIOS.find((x) => x.name === (process.env.W ?? 'journals'))!;
  const ctx: any = { knex: t.knex, port: 0, apiKey: t.apiKey, runId: 'x' };
  await s.setup?.(ctx);
  for (let i = 0; i < 5; i++) await t.post(s.path, s.body(ctx, i, `W-${i}`));
  const start = new Map<string, number>(); const agg = new Map<string, { n: number; ms: number }>();
  let count = 0;
  t.knex.on('query', (q: any) => { start.set(q.__knexQueryUid, performance.now()); count++; if (process.env.SHOW) console.log(q.sql.slice(0, 160)); });
  t.knex.on('query-response', (_r: any, q: any) => { const k = q.sql.replace(/\s+/g, ' ').slice(0, 110); const a = agg.get(k) ?? { n: 0, ms: 0 }; a.n++; a.ms += performance.now() - (start.get(q.__knexQueryUid) ?? 0); agg.set(k, a); });
  const N = Number(process.env.N ?? 200); const t0 = performance.now();
  for (let i = 0; i < N; i++) { const r = await t.post(s.path, s.body(ctx, 100 + i, `P-${i}`)); if (r.status !== 200) throw new Error(JSON.stringify(r.body)); }
  const el = performance.now() - t0;
  console.log('per request ms', (el / N).toFixed(2), 'statements/request', (count / N).toFixed(1));
  for (const [k, v] of [...agg].sort((a, b) => b[1].ms - a[1].ms)) console.log((v.ms / N).toFixed(3), 'ms/req', (v.n / N).toFixed(1), 'x', k);
  await t.close();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
