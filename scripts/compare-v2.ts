/**
 * Migration check (spec, Versioning 5): runs the same filter through /api/v2 and /api/v3 for one
 * entity or all 82, prints the counts side by side with a sample of the keys that differ, and
 * exits non-zero on any mismatch, so an integrator's CI can run it before switching traffic.
 *
 *   npm run compare-v2 -- [--filter '<v3 filter json>'] [--entity parts|part] [--json]
 *                         [--base-url https://host --api-key <uuid>]      remote server
 *                         [--database-url sqlite://...]                    in-process (default DATABASE_URL / embedded)
 *
 * Exit codes: 0 every entity agrees, 1 a mismatch, 2 bad arguments or the server unreachable.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { CATALOG } from '../generated/catalog';
import type { EntityDef } from '../src/catalog/types';
import { V2_FIELDS } from '../src/v2/fields';
import { v2NameOf } from '../src/v2/document';

export interface CallResult {
  status: number;
  body: any;
  /** X-Error-Code (both surfaces send it on every failure). */
  errorCode?: string;
}
/** POST a JSON body to a path (`/api/v3/parts/query`) of the server under comparison. */
export type Caller = (path: string, body: unknown) => Promise<CallResult>;

export interface EntityComparison {
  entity: string;
  v2Entity: string;
  v3Count?: number;
  v2Count?: number;
  v3Error?: string;
  v2Error?: string;
  /** Keys (published key field) only one side returned; a sample, when the counts differ. */
  onlyInV3: string[];
  onlyInV2: string[];
  /** same: counts agree; both-failed: both refused the filter with the same code (e.g. a field the entity lacks); mismatch otherwise. */
  outcome: 'same' | 'mismatch' | 'both-failed';
}

export interface CompareOptions {
  /** A v3 filter tree (`filters`); sent as `filter` to v2 (src/v2/fields.ts). */
  filter?: unknown;
  entities?: string[];
  sampleSize?: number;
  /** Rows per side read to find differing keys (bounded so a huge table does not stall CI). */
  maxKeyRows?: number;
}

const PAGE = 1000;

function keyField(entity: EntityDef): string {
  const f = Object.values(entity.fields).find((x) => x.column === entity.keyColumn);
  return f?.name ?? 'id';
}

function failureCode(r: CallResult): string | undefined {
  if (r.status === 200 && r.body?.responseType !== 'Error') return undefined;
  return String(r.errorCode ?? r.body?.errorCode ?? `HTTP_${r.status}`);
}

async function keys(call: Caller, entity: EntityDef, v2: string, filter: unknown, max: number): Promise<Set<string>> {
  const key = keyField(entity);
  const out = new Set<string>();
  for (let page = 1; out.size < max; page += 1) {
    const v3 = v2 === '';
    const r = v3
      ? await call(`/api/v3/${entity.entity}/query`, { select: [key], ...(filter !== undefined ? { filters: filter } : {}), page: { pageNumber: page, pageSize: PAGE } })
      : await call(`/api/v2/query/${v2}`, { selectFields: [key], ...(filter !== undefined ? { [v2FilterName]: filter } : {}), offset: (page - 1) * PAGE, pageSize: PAGE });
    if (failureCode(r)) break;
    const rows = (r.body.data ?? []) as Array<Record<string, unknown>>;
    for (const row of rows) out.add(String(row[key]));
    if (rows.length < PAGE) break;
  }
  return out;
}

/** The v2 name of v3 `filters`, from the one table of v2 names. */
const v2FilterName = (Object.entries(V2_FIELDS).find(([, v3]) => v3 === 'filters') ?? ['filter'])[0];

export async function compareV2(call: Caller, options: CompareOptions = {}): Promise<EntityComparison[]> {
  const names = options.entities ?? Object.keys(CATALOG).sort();
  const sample = options.sampleSize ?? 5;
  const out: EntityComparison[] = [];
  for (const name of names) {
    const entity = CATALOG[name];
    if (!entity) throw new Error(`unknown entity ${name}`);
    const v2Entity = v2NameOf(name) ?? name;
    const filter = options.filter;
    const v3 = await call(`/api/v3/${name}/query`, { ...(filter !== undefined ? { filters: filter } : {}), select: [keyField(entity)], page: { pageSize: 1 } });
    const v2 = await call(`/api/v2/query/${v2Entity}`, { ...(filter !== undefined ? { [v2FilterName]: filter } : {}), selectFields: [keyField(entity)], pageSize: 1 });
    const row: EntityComparison = { entity: name, v2Entity, onlyInV3: [], onlyInV2: [], outcome: 'same' };
    const e3 = failureCode(v3);
    const e2 = failureCode(v2);
    if (e3) row.v3Error = e3;
    else row.v3Count = Number(v3.body.page.totalCount);
    if (e2) row.v2Error = e2;
    else row.v2Count = Number(v2.body.page.count);
    if (e3 || e2) row.outcome = e3 && e2 && e3 === e2 ? 'both-failed' : 'mismatch';
    else if (row.v3Count !== row.v2Count) {
      row.outcome = 'mismatch';
      const max = options.maxKeyRows ?? 20_000;
      const [k3, k2] = await Promise.all([keys(call, entity, '', filter, max), keys(call, entity, v2Entity, filter, max)]);
      row.onlyInV3 = [...k3].filter((k) => !k2.has(k)).slice(0, sample);
      row.onlyInV2 = [...k2].filter((k) => !k3.has(k)).slice(0, sample);
    }
    out.push(row);
  }
  return out;
}

export function formatReport(rows: EntityComparison[]): string {
  const lines = [['entity (v3)', 'v2 name', 'v3 count', 'v2 count', 'difference', 'outcome'].join('\t')];
  for (const r of rows) {
    const diff = r.v3Count !== undefined && r.v2Count !== undefined ? String(r.v2Count - r.v3Count) : '';
    lines.push([r.entity, r.v2Entity, r.v3Count ?? r.v3Error ?? '', r.v2Count ?? r.v2Error ?? '', diff, r.outcome].join('\t'));
    if (r.onlyInV3.length > 0) lines.push(`  only in v3: ${r.onlyInV3.join(', ')}`);
    if (r.onlyInV2.length > 0) lines.push(`  only in v2: ${r.onlyInV2.join(', ')}`);
  }
  const mismatches = rows.filter((r) => r.outcome === 'mismatch').length;
  lines.push(`${rows.length} entities compared, ${mismatches} mismatch${mismatches === 1 ? '' : 'es'}, ${rows.filter((r) => r.outcome === 'both-failed').length} refused by both.`);
  return lines.join('\n');
}

/** A Caller over HTTP (remote mode, and in-process over a loopback listener). */
export function httpCaller(baseUrl: string, apiKey: string): Caller {
  const base = baseUrl.replace(/\/+$/, '');
  return async (path, body) => {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { code: `HTTP_${res.status}` };
    }
    return { status: res.status, body: parsed, errorCode: res.headers.get('x-error-code') ?? undefined };
  };
}

/** In-process: the app over a database URL on a loopback port, with a temporary key revoked afterwards. */
export async function inProcess<T>(databaseUrl: string | undefined, run: (call: Caller) => Promise<T>): Promise<T> {
  const [{ loadConfig }, { createServices }, { createApp }, { openDatabase, parseDatabaseUrl }, pino] = await Promise.all([
    import('../src/config'),
    import('../src/services'),
    import('../src/app'),
    import('../src/storage/database'),
    import('pino'),
  ]);
  const config = loadConfig({ ...process.env, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), LOG_LEVEL: 'silent' });
  const target = parseDatabaseUrl(config.databaseUrl, { min: 0, max: config.dbPoolMax });
  const knex = openDatabase(target);
  const services = createServices(config, pino.default({ level: 'silent' }), knex, target.engine);
  const { key, record } = await services.keys.create('compare-v2 (temporary)', 'integration');
  const server = http.createServer(createApp(services));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await run(httpCaller(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, key));
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await services.keys.setStateById(record.id, 'revoked', 'compare-v2 finished');
    await knex.destroy();
  }
}

function entityArg(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (CATALOG[value]) return [value];
  const plural = Object.keys(CATALOG).find((p) => v2NameOf(p) === value);
  if (plural) return [plural];
  throw new Error(`--entity ${value}: not an entity (use the v3 name, e.g. parts, or the v2 name, e.g. part)`);
}

export async function main(argv: string[]): Promise<number> {
  let args;
  let filter: unknown;
  let entities: string[] | undefined;
  try {
    args = parseArgs({
      args: argv,
      options: {
        filter: { type: 'string' },
        entity: { type: 'string' },
        'base-url': { type: 'string' },
        'api-key': { type: 'string' },
        'database-url': { type: 'string' },
        sample: { type: 'string' },
        json: { type: 'boolean' },
      },
    }).values;
    filter = args.filter === undefined ? undefined : JSON.parse(args.filter);
    entities = entityArg(args.entity);
    if (args['base-url'] && !args['api-key']) throw new Error('--base-url needs --api-key');
  } catch (err) {
    process.stderr.write(`compare-v2: ${(err as Error).message}\n`);
    return 2;
  }
  const options: CompareOptions = { filter, entities, sampleSize: args.sample ? Number(args.sample) : 5 };
  let rows: EntityComparison[];
  try {
    rows = args['base-url']
      ? await compareV2(httpCaller(args['base-url'], args['api-key']!), options)
      : await inProcess(args['database-url'], (call) => compareV2(call, options));
  } catch (err) {
    process.stderr.write(`compare-v2: ${(err as Error).message}\n`);
    return 2;
  }
  process.stdout.write((args.json ? JSON.stringify(rows, null, 2) : formatReport(rows)) + '\n');
  return rows.some((r) => r.outcome === 'mismatch') ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
