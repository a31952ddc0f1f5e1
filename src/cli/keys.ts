/**
 * API keys, from the project directory, against the same DATABASE_URL as the server:
 *
 *   npm run keys -- create --name NAME [--admin] [--scopes read,write,...]
 *                                                    the new key alone on the last line of stdout
 *   npm run keys -- list                             id, name, role, state, scopes, created (never a key or hash)
 *   npm run keys -- disable KEY --reason "TEXT"      requests get 503 with TEXT and Retry-After 300
 *   npm run keys -- enable KEY
 *   npm run keys -- revoke KEY                       permanent: requests get 401
 *
 * KEY is the key itself or its id (as `list` shows it). The first line names the database
 * (DATABASE_URL, without its password). The command works on the service's database only: one the
 * service has migrated and that holds a company; anything else (a mistyped or unset DATABASE_URL:
 * a file that does not exist, an empty database) is refused with nothing written, not even the
 * file (--init: a new database, migrated here; docs/sql-server.md). Pending migrations of a
 * database the service migrated before are applied first.
 * create, disable, enable and revoke are entries of the audit log (who: the operating-system user;
 * the change and its entry commit together), refusals too (a revoked key cannot be enabled).
 * Flags are parsed strictly (node:util parseArgs): an unknown flag, a value given to --admin or
 * --init, and a flag given twice are usage errors.
 * Exit codes: 0 done, 1 the key was not found or the change is not allowed, 2 usage or
 * configuration (a database that is not the service's included).
 */
import fs from 'node:fs';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { ConfigError, loadConfig } from '../config';
import { openDatabase, parseDatabaseUrl, type DatabaseTarget, type Engine } from '../storage/database';
import { hasNoCompany, pendingMigrations } from '../storage/database-state';
import { MIGRATION_NAMES } from '../../db/migration-names';
import type { AuditActor, AuditEntry } from '../audit';
import { auditRow, insertAuditRows } from '../audit/store';
import { ApiKeyRepository, type ApiKeyRecord } from '../storage/api-keys';
import { parseScopes, SCOPES, type Scope } from '../auth/scopes';
import { migrateLatest } from '../../db/migrate';

const USAGE = `usage: npm run keys -- <command>
  create --name NAME [--admin] [--scopes LIST]
                                  create a key (role integration, or admin with --admin); prints the key last.
                                  Without --scopes the key may do everything the spec allows (PII included);
                                  with --scopes (comma-separated: ${SCOPES.join(', ')}) only that.
  list                            list keys: id, name, role, state, scopes, created, reason
  disable KEY --reason "TEXT"     switch the service off for a key (503 with the reason, Retry-After 300)
  enable KEY                      switch it back on
  revoke KEY                      revoke for good (401 from then on)
KEY is the key or its id. DATABASE_URL selects the database (default sqlite://./data/books.sqlite):
one the service has migrated and that holds a company; --init (any command) accepts a new one and
migrates it first.`;

class UsageError extends Error {}
class CommandError extends Error {}
/** DATABASE_URL names a database that is not the service's (exit 2, like any configuration error). */
class NotTheServiceDatabase extends Error {}

interface Parsed {
  command: string;
  positional: string[];
  flags: Map<string, string | true>;
  /** --init: the database may be new (migrated here), any command. */
  init: boolean;
}

/** Every flag of every command; which command takes which is `allowOnly`'s. Booleans take no value (`--admin=true` is refused). */
const FLAGS = {
  name: { type: 'string' },
  admin: { type: 'boolean' },
  scopes: { type: 'string' },
  reason: { type: 'string' },
  init: { type: 'boolean' },
} as const;

const parseFlags = (args: string[]) => parseArgs({ args, options: FLAGS, allowPositionals: true, strict: true, tokens: true });

function parse(argv: string[]): Parsed {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') throw new UsageError('');
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(rest);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  // parseArgs keeps the last of a repeated flag: `--name a --name b` would name the key "b" silently.
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option') continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given more than once`);
    seen.add(token.name);
  }
  const flags = new Map<string, string | true>();
  for (const [name, value] of Object.entries(parsed.values)) if (name !== 'init' && value !== undefined && value !== false) flags.set(name, value);
  return { command, positional: parsed.positionals, flags, init: parsed.values.init === true };
}

function allowOnly(p: Parsed, flags: string[], positionals: number): void {
  for (const name of p.flags.keys()) if (!flags.includes(name)) throw new UsageError(`${p.command} does not take --${name}`);
  if (p.positional.length !== positionals) {
    throw new UsageError(positionals === 0 ? `${p.command} takes no arguments` : `${p.command} needs exactly one KEY (the key or its id)`);
  }
}

function textFlag(p: Parsed, name: string, max: number): string {
  const value = p.flags.get(name);
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`${p.command} needs --${name} "TEXT"`);
  if (value.trim().length > max) throw new UsageError(`--${name} is at most ${max} characters`);
  return value.trim();
}

/** `all` for an unscoped key (the spec's key), `none` for a key created with an empty list. */
function scopeText(k: ApiKeyRecord): string {
  if (k.scopes === null) return 'all';
  return k.scopes.length === 0 ? 'none' : k.scopes.join(',');
}

function describe(k: ApiKeyRecord): string {
  return `${k.id}  ${k.name}  role=${k.role}  state=${k.state}  scopes=${scopeText(k)}${k.reason ? `  reason="${k.reason}"` : ''}`;
}

function scopesFlag(p: Parsed): Scope[] | null {
  const value = p.flags.get('scopes');
  if (value === undefined) return null;
  if (typeof value !== 'string') throw new UsageError('--scopes needs a comma-separated list');
  try {
    return parseScopes(value);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function table(keys: ApiKeyRecord[]): string {
  const rows = [['ID', 'NAME', 'ROLE', 'STATE', 'SCOPES', 'CREATED', 'REASON'], ...keys.map((k) => [k.id, k.name, k.role, k.state, scopeText(k), k.createdAt, k.reason ?? ''])];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd()).join('\n');
}

async function find(repo: ApiKeyRepository, value: string): Promise<ApiKeyRecord> {
  const key = await repo.findByKeyOrId(value);
  if (!key) throw new CommandError(`no API key matches ${value} (give the key or its id from \`npm run keys -- list\`)`);
  return key;
}

/** Who is at the command line: the operating-system user (the audit log's `actor`), one correlation id per run. */
function operator(): AuditActor {
  let name: string;
  try {
    name = os.userInfo().username;
  } catch {
    name = process.env.USER || process.env.USERNAME || 'unknown';
  }
  return { type: 'operator', name, keyId: null, correlationId: randomUUID() };
}

/** What a command changes, with its audit entry, in one transaction; a refusal is an entry too. */
interface Audited {
  knex: Knex;
  engine: Engine;
  actor: AuditActor;
}

async function change<T>(a: Audited, apply: (repo: ApiKeyRepository) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
  return a.knex.transaction(async (trx) => {
    const result = await apply(new ApiKeyRepository(trx));
    await insertAuditRows(trx, [auditRow(a.engine, a.actor, entry(result), new Date())]);
    return result;
  });
}

async function refuse(a: Audited, entry: Omit<AuditEntry, 'outcome'>, message: string): Promise<never> {
  await insertAuditRows(a.knex, [auditRow(a.engine, a.actor, { ...entry, outcome: 'refused', detail: { ...entry.detail, error: message } }, new Date())]);
  throw new CommandError(message);
}

async function run(p: Parsed, a: Audited, out: (line: string) => void): Promise<void> {
  const repo = new ApiKeyRepository(a.knex);
  switch (p.command) {
    case 'create': {
      allowOnly(p, ['name', 'admin', 'scopes'], 0);
      const name = textFlag(p, 'name', 100);
      const role = p.flags.get('admin') === true ? 'admin' : 'integration';
      const scopes = scopesFlag(p);
      const { key, record } = await change(
        a,
        (keys) => keys.create(name, role, undefined, scopes),
        ({ record: r }) => ({ action: 'api-key.created', target: r.id, outcome: 'succeeded', detail: { name: r.name, role: r.role, scopes: r.scopes } }),
      );
      out(`created ${role} key "${record.name}" (id ${record.id}, scopes ${scopeText(record)}); it is stored hashed and cannot be shown again:`);
      out(key);
      return;
    }
    case 'list': {
      allowOnly(p, [], 0);
      const keys = await repo.list();
      out(keys.length === 0 ? 'no API keys' : table(keys));
      return;
    }
    case 'disable': {
      allowOnly(p, ['reason'], 1);
      const reason = textFlag(p, 'reason', 500);
      const key = await find(repo, p.positional[0]!);
      if (key.state === 'revoked') await refuse(a, { action: 'api-key.disabled', target: key.id, detail: { reason } }, `key ${key.id} is revoked; it cannot be disabled`);
      const done = await change(a, (keys) => keys.setStateById(key.id, 'disabled', reason), () => ({ action: 'api-key.disabled', target: key.id, outcome: 'succeeded', detail: { name: key.name, reason } }));
      out(`disabled: ${describe(done!)}`);
      return;
    }
    case 'enable': {
      allowOnly(p, [], 1);
      const key = await find(repo, p.positional[0]!);
      if (key.state === 'revoked') await refuse(a, { action: 'api-key.enabled', target: key.id }, `key ${key.id} is revoked; revoked keys stay revoked (create a new one)`);
      const done = await change(a, (keys) => keys.setStateById(key.id, 'active', null), () => ({ action: 'api-key.enabled', target: key.id, outcome: 'succeeded', detail: { name: key.name } }));
      out(`enabled: ${describe(done!)}`);
      return;
    }
    case 'revoke': {
      allowOnly(p, [], 1);
      const key = await find(repo, p.positional[0]!);
      const done = await change(a, (keys) => keys.setStateById(key.id, 'revoked', key.reason), () => ({ action: 'api-key.revoked', target: key.id, outcome: 'succeeded', detail: { name: key.name } }));
      out(`revoked: ${describe(done!)}`);
      return;
    }
    default:
      throw new UsageError(`unknown command "${p.command}"`);
  }
}

const NOT_WRITTEN = 'nothing was written. Check DATABASE_URL; --init sets up a new database here (migrations applied first)';

/** SQLite: opening a file that does not exist creates it; a mistyped path must not. */
function refuseMissingFile(target: DatabaseTarget): void {
  if (target.engine !== 'sqlite' || !target.file || target.file === ':memory:' || fs.existsSync(target.file)) return;
  throw new NotTheServiceDatabase(`${target.display} does not exist: ${NOT_WRITTEN}`);
}

/**
 * The keys live in the service's database, which the service migrated on its first start and which
 * holds the company's books. A database never migrated, or without a company, is not it (a
 * mistyped or unset DATABASE_URL): refused before anything is written, unless --init says it is
 * new. Pending migrations of a database the service migrated before are applied (an upgrade: the
 * new tables the keys may need; docs/sql-server.md applies them this way with the migrator login).
 */
async function prepare(knex: Knex, target: DatabaseTarget, init: boolean): Promise<void> {
  const pending = await pendingMigrations(knex, MIGRATION_NAMES);
  if (!init) {
    if (pending === null) throw new NotTheServiceDatabase(`${target.display} was never migrated by this service: it is not the service's database; ${NOT_WRITTEN}`);
    if (await hasNoCompany(knex)) throw new NotTheServiceDatabase(`${target.display} holds no company (no ledger account): it is not the books the service serves; ${NOT_WRITTEN}`);
  }
  if (pending === null || pending.length > 0) await migrateLatest(knex);
}

async function main(argv: string[]): Promise<number> {
  let parsed: Parsed;
  let databaseUrl: string;
  try {
    parsed = parse(argv);
    databaseUrl = loadConfig(process.env).databaseUrl;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message ? `error: ${err.message}\n` : ''}${USAGE}\n`);
      return 2;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  let knex: Knex | undefined;
  try {
    const target = parseDatabaseUrl(databaseUrl, { min: 0, max: 2 });
    // First, whatever follows: which database this run reads and writes (a wrong one is seen at once).
    process.stdout.write(`database ${target.display}\n`);
    if (!parsed.init) refuseMissingFile(target);
    knex = openDatabase(target);
    await prepare(knex, target, parsed.init);
    await run(parsed, { knex, engine: target.engine, actor: operator() }, (line) => process.stdout.write(`${line}\n`));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n${USAGE}\n`);
      return 2;
    }
    if (err instanceof NotTheServiceDatabase) {
      process.stderr.write(`error: ${err.message}\n`);
      return 2;
    }
    if (err instanceof CommandError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    await knex?.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
