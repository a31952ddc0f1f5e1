import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets the service must be able to use again (webhook signing secrets: HMAC needs the secret
 * itself, so they cannot be hashed like API keys) are stored encrypted: AES-256-GCM with a random
 * 96-bit nonce per value, authenticated together with the row they belong to (`context`, e.g.
 * `whkept:<endpoint id>`), so a value copied onto another row does not decrypt.
 *
 * Stored form: `enc1:<key id>:<base64url(nonce | ciphertext | tag)>`. The key id is the first 8 hex
 * digits of SHA-256 over the key: which of the configured keys opens the value (SECRETS_KEY, or one
 * of SECRETS_KEY_PREVIOUS after a rotation) without trying each. A value without the `enc1:` prefix
 * is one written before encryption (or by an older instance during an upgrade): read as it is, and
 * encrypted by the next start (src/events/store.ts, `resealSecrets`).
 */
const PREFIX = 'enc1:';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class SecretUnreadable extends Error {
  constructor(
    message: string,
    /** The key id the value names (undefined: the value is malformed). */
    readonly keyId?: string,
  ) {
    super(message);
    this.name = 'SecretUnreadable';
  }
}

/** The id a stored value carries for this key. */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

export class SecretBox {
  readonly currentKeyId: string;
  private readonly keys = new Map<string, Buffer>();

  /** `current` encrypts; `current` and every one of `previous` decrypt. Each key is 32 bytes. */
  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    for (const key of [current, ...previous]) {
      if (key.length !== 32) throw new Error('a secrets key is 32 bytes');
      if (!this.keys.has(keyIdOf(key))) this.keys.set(keyIdOf(key), key);
    }
    this.currentKeyId = keyIdOf(current);
  }

  /** The stored form of `plaintext` under the current key. */
  seal(plaintext: string, context: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentKeyId)!, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${PREFIX}${this.currentKeyId}:${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /** The plaintext of a stored value (a value stored before encryption is returned as it is). */
  open(stored: string, context: string): string {
    if (!isSealed(stored)) return stored;
    const [, keyId, payload] = stored.split(':');
    const key = keyId ? this.keys.get(keyId) : undefined;
    if (!key) throw new SecretUnreadable(`the secret is encrypted under key id ${keyId}, which neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS holds`, keyId);
    const raw = Buffer.from(payload ?? '', 'base64url');
    if (raw.length < NONCE_BYTES + TAG_BYTES) throw new SecretUnreadable('the stored secret is malformed', keyId);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretUnreadable(`the stored secret does not authenticate under key id ${keyId} (altered, or moved from another row)`, keyId);
    }
  }

  /** True when the value is encrypted under the current key (nothing to re-encrypt). */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`${PREFIX}${this.currentKeyId}:`);
  }
}

export function isSealed(stored: string): boolean {
  return stored.startsWith(PREFIX);
}
