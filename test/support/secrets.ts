/**
 * PostgreSQL (and SQL Server) refuse to start without SECRETS_KEY (src/storage/secrets-key.ts);
 * SQLite makes a key file next to its database. Tests on PostgreSQL use this one key, in their
 * own configuration and, through the environment, in every server process they start. Tests on
 * SQLite leave it unset, so they exercise the key file.
 */
export const TEST_SECRETS_KEY = 'ZTAOF+TnhMQK89bpr5HRKWY2gsqLsjC0TDRrr+vQXV4=';

/** The SECRETS_KEY environment of a server on `engine`: the test key on PostgreSQL, nothing on SQLite. */
export function secretsEnv(engine: string): Record<string, string> {
  return engine === 'sqlite' ? {} : { SECRETS_KEY: process.env.SECRETS_KEY || TEST_SECRETS_KEY };
}
