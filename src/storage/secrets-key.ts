import fs from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { ConfigError, type Config } from '../config';
import { parseDatabaseUrl } from './database';
import { SecretBox } from './secret-box';

/**
 * Where the key that encrypts stored secrets comes from (docs/decisions/0260-webhook-secrets-encrypted-at-rest.md):
 *   - SECRETS_KEY when set (with SECRETS_KEY_PREVIOUS for reading values under earlier keys);
 *   - else, on the embedded SQLite database, a key file next to the database file
 *     (`<database>.secrets-key`, mode 0600), created by the first process that needs it, so
 *     `make run` works with nothing set and every process on that file (WORKERS, a second
 *     instance) uses the same key;
 *   - else (PostgreSQL, SQL Server) the start is refused naming SECRETS_KEY: a generated key
 *     would live on one host only, and the other instances could not read what it encrypted.
 * When SECRETS_KEY is set and a key file exists too (moving from the file to a managed key), the
 * file's key still decrypts, and the next start re-encrypts under SECRETS_KEY.
 */
export function secretsKeyFileOf(databaseFile: string): string {
  return `${databaseFile}.secrets-key`;
}

export function openSecretBox(config: Pick<Config, 'databaseUrl' | 'secretsKey' | 'secretsKeyPrevious'>): SecretBox {
  const target = parseDatabaseUrl(config.databaseUrl);
  const file = target.engine === 'sqlite' && target.file && target.file !== ':memory:' ? secretsKeyFileOf(target.file) : undefined;
  if (config.secretsKey) {
    const fromFile = file && fs.existsSync(file) ? [readKeyFile(file)] : [];
    return new SecretBox(config.secretsKey, [...config.secretsKeyPrevious, ...fromFile]);
  }
  if (target.engine !== 'sqlite') {
    throw new ConfigError(
      'SECRETS_KEY must be set with PostgreSQL or SQL Server: 32 random bytes in base64 (openssl rand -base64 32), the same for every instance; webhook signing secrets are encrypted under it',
    );
  }
  // An in-memory database lives as long as this process: so does its key.
  if (!file) return new SecretBox(randomBytes(32));
  return new SecretBox(readOrCreateKeyFile(file));
}

function readKeyFile(file: string): Buffer {
  const text = fs.readFileSync(file, 'utf8').trim();
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32) throw new ConfigError(`${file} must hold 32 bytes in base64 (the secrets key of this database); set SECRETS_KEY or restore the file`);
  return key;
}

/**
 * The key file, created exactly once however many processes start at the same moment: the key is
 * written in full to a file of this process's own, then hard-linked to the shared name, which fails
 * when another process linked first (then its key is read). A reader never sees a half-written key.
 */
export function readOrCreateKeyFile(file: string): Buffer {
  if (fs.existsSync(file)) return readKeyFile(file);
  const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
  fs.writeFileSync(tmp, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return readKeyFile(file);
}
