import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export interface SecretBox {
  /** Nonce (12 bytes), tag (16), ciphertext: what a bytea column holds. */
  seal(secret: string): Buffer;
  open(sealed: Buffer): string;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Sources' secrets at rest: AES-256-GCM under the server key, a fresh nonce each time. GCM's tag
 * means a sealed value changed in the database is refused, not decrypted into another secret.
 * The key never leaves the server process; the database alone holds nothing usable.
 */
export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('the secret key must be 32 bytes');
  return {
    seal(secret) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return Buffer.concat([nonce, cipher.getAuthTag(), ciphertext]);
    },
    open(sealed) {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
      decipher.setAuthTag(sealed.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
      return Buffer.concat([
        decipher.update(sealed.subarray(NONCE_BYTES + TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    },
  };
}
