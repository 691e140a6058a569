import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * The CLI's credentials file: one token per server, keyed by the server's URL, and the server
 * the CLI uses when a command names none.
 *
 * ```json
 * { "current": "http://127.0.0.1:3000",
 *   "servers": { "http://127.0.0.1:3000": { "token": "sbk_…" } } }
 * ```
 *
 * Read on every CLI start, so checked by hand: zod would cost about 100 ms of each.
 */
export interface CredentialsFile {
  current?: string | undefined;
  servers: Record<string, { token: string }>;
}

/** The file is there but is not a credentials file this CLI can read. */
export class CredentialsFileError extends Error {
  override readonly name = 'CredentialsFileError';
}

/**
 * The URL an entry is keyed by: scheme and host lower-cased, default port and trailing slashes
 * dropped, so that `http://127.0.0.1:3000/` and `http://127.0.0.1:3000` are one server.
 * Undefined for anything but an http(s) URL.
 */
export function serverKey(url: string): string | undefined {
  if (!/^https?:\/\/[^/]/i.test(url)) return undefined;
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, '');
  } catch {
    return undefined;
  }
}

export function parseCredentialsFile(text: string, file: string): CredentialsFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CredentialsFileError(`${file} is not valid JSON — run 'switchboard login' again`);
  }
  const bad = () =>
    new CredentialsFileError(`${file} is not a switchboard credentials file — fix or remove it`);
  if (typeof json !== 'object' || json === null) throw bad();
  const { url, token, current, servers } = json as Record<string, unknown>;
  // Until several servers were kept, the file held one: { url, token }.
  if (typeof url === 'string' && typeof token === 'string' && servers === undefined) {
    const key = serverKey(url);
    if (!key) throw bad();
    return { current: key, servers: { [key]: { token } } };
  }
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    throw new CredentialsFileError(`${file} has no servers — run 'switchboard login' again`);
  }
  const parsed: CredentialsFile = { servers: {} };
  for (const [entryUrl, entry] of Object.entries(servers)) {
    const key = serverKey(entryUrl);
    const entryToken = (entry as { token?: unknown } | null)?.token;
    if (!key || typeof entryToken !== 'string') throw bad();
    parsed.servers[key] = { token: entryToken };
  }
  if (current !== undefined) {
    if (typeof current !== 'string' || !serverKey(current)) throw bad();
    parsed.current = serverKey(current);
  }
  return parsed;
}

/** The file's credentials, or undefined when there is no such file. */
export async function readCredentialsFile(file: string): Promise<CredentialsFile | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return parseCredentialsFile(text, file);
}

/**
 * Reads the file (none: no servers), lets `change` edit it, and writes it back (0600) if
 * `change` returned `{ write: true }`. Writers take turns (proper-lockfile), so two servers
 * starting at once each add their entry: neither write loses the other's.
 */
export async function updateCredentialsFile<T extends { write: boolean }>(
  file: string,
  change: (credentials: CredentialsFile) => Promise<T> | T,
): Promise<T> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const { lock } = await import('proper-lockfile');
  const unlock = await lock(file, {
    lockfilePath: `${file}.lock`,
    realpath: false,
    stale: 10_000,
    retries: { retries: 100, minTimeout: 20, maxTimeout: 200 },
    onCompromised: () => {},
  });
  try {
    const credentials = (await readCredentialsFile(file)) ?? { servers: {} };
    const outcome = await change(credentials);
    if (outcome.write) await writeCredentials(file, credentials);
    return outcome;
  } finally {
    await unlock();
  }
}

async function writeCredentials(file: string, credentials: CredentialsFile): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  const { current, servers } = credentials;
  await writeFile(temporary, JSON.stringify({ current, servers }, null, 2) + '\n', { mode: 0o600 });
  await rename(temporary, file);
}
