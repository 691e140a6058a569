import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const SECRET_KEY_FILE = 'secret.key';

/**
 * The server key that seals sources' secrets: SWITCHBOARD_SECRET_KEY (32 bytes, base64 or hex),
 * or — only with the embedded database, whose data directory is this machine's alone — one
 * generated on first start into `<data dir>/secret.key` (mode 0600). With DATABASE_URL and no
 * key there is none: processes sharing a database must share the key, so none is made up.
 */
export async function loadSecretKey(options: {
  secretKey: string | undefined;
  embedded: boolean;
  dataDir: string;
}): Promise<Buffer | undefined> {
  if (options.secretKey !== undefined) return parseSecretKey(options.secretKey);
  if (!options.embedded) return undefined;
  const file = join(options.dataDir, SECRET_KEY_FILE);
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  try {
    // 'wx': two processes starting at once cannot both write one.
    const handle = await open(file, 'wx', 0o600);
    try {
      await handle.writeFile(`${randomBytes(32).toString('base64')}\n`);
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return parseSecretKey((await readFile(file, 'utf8')).trim(), file);
}

/**
 * The server key as loadSecretKey would find it, and where it is, but never made up: `backup`
 * says where the key its sealed secrets need is, and `restore` whether the one here is that key.
 */
export async function findSecretKey(options: {
  secretKey: string | undefined;
  embedded: boolean;
  dataDir: string;
}): Promise<{ key: Buffer; where: string } | undefined> {
  if (options.secretKey !== undefined) {
    return { key: parseSecretKey(options.secretKey), where: 'SWITCHBOARD_SECRET_KEY' };
  }
  if (!options.embedded) return undefined;
  const file = join(options.dataDir, SECRET_KEY_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return { key: parseSecretKey(text.trim(), file), where: file };
}

/**
 * Names a key without giving it away (a hash of it, cut short): a backup records which key
 * sealed its secrets, so that a restore can tell whether the key it will be used with opens them.
 */
export function secretKeyId(key: Buffer): string {
  return createHash('sha256')
    .update('switchboard secret key id\0')
    .update(key)
    .digest('hex')
    .slice(0, 16);
}

/** 32 bytes as 64 hex digits or as base64 (`openssl rand -base64 32`). */
export function parseSecretKey(text: string, where = 'SWITCHBOARD_SECRET_KEY'): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(text)
    ? Buffer.from(text, 'hex')
    : /^[A-Za-z0-9+/]{43}=?$/.test(text)
      ? Buffer.from(text, 'base64')
      : undefined;
  if (key?.length !== 32) {
    throw new Error(`${where} must be 32 bytes, base64 or hex (openssl rand -base64 32)`);
  }
  return key;
}
