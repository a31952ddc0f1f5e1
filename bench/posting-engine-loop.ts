/**
 * The write runner called in-process (services.writes.run, the call the route makes, no HTTP) on
 * its own connection to the bench database: the "engine" of bench/posting.ts and
 * bench/posting-engine.ts. A write that requires an Idempotency-Key gets a new key each time (its
 * claim is then part of the engine's work, as through HTTP); the others post without one. The
 * writes run under an API key of their own (idempotency records belong to an API key), and a keyed
 * answer must be `applied`: a claim the store refused would post without its record unnoticed.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { Knex } from 'knex';
import { openDatabase, parseDatabaseUrl } from '../src/storage/database';
import { ApiKeyRepository } from '../src/storage/api-keys';
import { loadConfig } from '../src/config';
import { createServices, type Services } from '../src/services';
import { WRITES, type AnyWriteDefinition } from '../src/engines/posting/writes';
import { ensureTraceContext } from '../src/telemetry/tracing';
import type { BenchContext, Scenario } from './posting-scenarios';

export interface EngineLoop {
  /** The service's own knex (its statements can be observed). */
  knex: Knex;
  services: Services;
  /** Posts the n-th document of `scenario` once; throws unless the answer is 200. */
  post(scenario: Scenario, n: number, tag: string): Promise<void>;
  /** Posts for `seconds`, `concurrency` at a time: documents per second. */
  run(scenario: Scenario, seconds: number, concurrency: number, next: () => number, tagOf: (n: number) => string): Promise<number>;
  close(): Promise<void>;
}

export async function openEngineLoop(databaseUrl: string, ctx: BenchContext): Promise<EngineLoop> {
  const target = parseDatabaseUrl(databaseUrl, { min: 0, max: 10 });
  const knex = openDatabase(target);
  ensureTraceContext(); // as the server does (the AsyncLocalStorage context manager)
  const services = createServices({ ...loadConfig({ ...process.env, DATABASE_URL: databaseUrl }), seedOnStart: false }, pino({ level: 'error' }), knex, target.engine);
  await services.lock.load();
  const apiKey = await new ApiKeyRepository(knex).ensure(`bench-engine-${ctx.runId}`, 'bench engine loop', 'integration');
  const definitions = new Map<string, AnyWriteDefinition>();
  const definitionOf = (scenario: Scenario) => {
    let def = definitions.get(scenario.path);
    if (!def) {
      def = WRITES.find((w) => `/api/v3${w.route}` === scenario.path)?.definition as AnyWriteDefinition | undefined;
      if (!def) throw new Error(`no write definition for ${scenario.path}`);
      definitions.set(scenario.path, def);
    }
    return def;
  };
  const post = async (scenario: Scenario, n: number, tag: string) => {
    const def = definitionOf(scenario);
    const out = await services.writes.run(def, {
      route: def.route,
      instance: def.route,
      correlationId: 'bench',
      apiKeyId: apiKey.id,
      apiKeyName: 'bench',
      dryRun: false,
      body: scenario.body(ctx, n, tag),
      ...(scenario.key === 'required' ? { idempotencyKey: `bench-engine-${ctx.runId}-${randomUUID()}` } : {}),
    });
    if (out.status !== 200) throw new Error(`engine ${scenario.name}: ${out.status} ${JSON.stringify(out.body).slice(0, 300)}`);
    if (scenario.key === 'required' && out.idempotencyStatus !== 'applied') throw new Error(`engine ${scenario.name}: keyed posting answered Idempotency-Status ${out.idempotencyStatus}, not applied`);
  };
  return {
    knex,
    services,
    post,
    async run(scenario, seconds, concurrency, next, tagOf) {
      const end = Date.now() + seconds * 1000;
      let count = 0;
      const worker = async () => {
        while (Date.now() < end) {
          const n = next();
          await post(scenario, n, tagOf(n));
          count += 1;
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      return count / seconds;
    },
    async close() {
      await services.dataChanges?.stop?.();
      await knex.destroy();
    },
  };
}
