/**
 * CPU profile of the service posting one write (bench/posting-scenarios.ts) under autocannon:
 *   W=journals C=1 SECS=5 PROF_DIR=/tmp/prof node --import tsx bench/profile-posting.ts
 * The server child runs with --cpu-prof (NOPROF=1: without) and writes its profile on exit
 * (open it in Chrome DevTools or summarise the .cpuprofile JSON). Prints requests per second.
 */
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { createTestDatabase } from '../test/support/app';
import { installPostingFixture } from '../test/support/posting-fixture';
import { postJson, spawnServer } from '../test/support/server-process';
import { parseDatabaseUrl } from '../src/storage/database';
import { SCENARIOS } from './posting-scenarios';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<any>;
async function main() {
  const s = SCENARIOS.find((x) => x.name === (process.env.W ?? 'journals'))!;
  const db = await createTestDatabase();
  const knex = knexFactory(parseDatabaseUrl(db.url, { min: 0, max: 10 }).config);
  await installPostingFixture(knex);
  const adminKey = randomUUID(), apiKey = randomUUID(), runId = randomUUID().slice(0, 6);
  const dir = process.env.PROF_DIR ?? '/tmp/tp/prof';
  const server = await spawnServer({ databaseUrl: db.url, adminKey, apiKey, nodeArgs: process.env.NOPROF ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`], env: { LOG_LEVEL: 'error', RATE_LIMIT_PER_MINUTE: '0', DB_POOL_MAX: '10', ...(process.env.STMT_LOG ? { STMT_LOG: '1' } : {}) } });
  const ctx = { knex, port: server.port, apiKey, runId };
  await s.setup?.(ctx as any);
  let seq = 0;
  for (let i = 0; i < 20; i++) { const n = ++seq; const r = await postJson(server.port, s.path, s.body(ctx as any, n, `W-${runId}-${n}`), { 'x-api-key': apiKey }); if (r.status !== 200) throw new Error(JSON.stringify(r.body)); }
  const result = await autocannon({ url: `http://127.0.0.1:${server.port}${s.path}`, method: 'POST', connections: Number(process.env.C ?? 1), duration: Number(process.env.SECS ?? 5), headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    requests: [{ setupRequest: (req: any) => { const n = ++seq; return { ...req, body: JSON.stringify(s.body(ctx as any, n, `P-${runId}-${n}`)) }; } }] });
  console.log(s.name, 'req/s', result['2xx'] / Number(process.env.SECS ?? 5), 'non2xx', result.non2xx);
  await server.kill('SIGTERM');
  await knex.destroy();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
