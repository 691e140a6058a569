import { readFile } from 'node:fs/promises';
import { defaultCredentialsFile } from '../config/paths.js';
import type { Credentials } from './api-client.js';
import { CredentialsError } from './client-errors.js';

type Env = Record<string, string | undefined>;

const NONE = "no credentials — run 'switchboard login' or 'switchboard up'";

/**
 * Which server and token the CLI uses: SWITCHBOARD_URL and SWITCHBOARD_TOKEN when set (both, so
 * a token is never sent to a server it was not meant for), else the credentials file that
 * `switchboard up` or `switchboard login` wrote.
 *
 * The file is checked by hand rather than with the server's zod schema: importing zod costs
 * about 100 ms of every CLI start.
 */
export async function resolveCredentials(env: Env = process.env): Promise<Credentials> {
  const url = env.SWITCHBOARD_URL || undefined;
  const token = env.SWITCHBOARD_TOKEN || undefined;
  if (url && token) return { url: checkedUrl(url, 'SWITCHBOARD_URL'), token };
  if (url || token) {
    throw new CredentialsError(
      'SWITCHBOARD_URL and SWITCHBOARD_TOKEN go together — set both, or neither to use the credentials file',
    );
  }
  const file = defaultCredentialsFile(env);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new CredentialsError(NONE);
    throw new CredentialsError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let json: { url?: unknown; token?: unknown };
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    throw new CredentialsError(`${file} is not valid JSON — run 'switchboard login' again`);
  }
  if (typeof json?.url !== 'string' || typeof json.token !== 'string') {
    throw new CredentialsError(`${file} has no url and token — run 'switchboard login' again`);
  }
  return { url: checkedUrl(json.url, file), token: json.token };
}

function checkedUrl(url: string, where: string): string {
  if (!/^https?:\/\/[^/]/.test(url)) {
    throw new CredentialsError(`${where}: ${JSON.stringify(url)} is not an http(s) URL`);
  }
  return url.replace(/\/+$/, '');
}
