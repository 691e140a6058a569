import { readFile } from 'node:fs/promises';
import {
  CredentialsFileError,
  parseCredentialsFile,
  serverKey,
} from '../platform/config/credentials-file.js';
import { defaultCredentialsFile } from '../platform/config/paths.js';
import type { Credentials } from './api-client.js';
import { CredentialsError } from './client-errors.js';

type Env = Record<string, string | undefined>;

const NONE = "no credentials — run 'switchboard login' or 'switchboard up'";

/**
 * Which server and token the CLI uses:
 *
 * - SWITCHBOARD_TOKEN (with SWITCHBOARD_URL, the server it is for: a token is never sent to a
 *   server it was not meant for);
 * - else the credentials file's entry for the server named by `--url` (`url`), else by
 *   SWITCHBOARD_URL, else for the file's current server.
 */
export async function resolveCredentials(
  env: Env = process.env,
  { url: flagUrl }: { url?: string | undefined } = {},
): Promise<Credentials> {
  const envUrl = env.SWITCHBOARD_URL
    ? checkedUrl(env.SWITCHBOARD_URL, 'SWITCHBOARD_URL')
    : undefined;
  const envToken = env.SWITCHBOARD_TOKEN || undefined;
  const named = flagUrl ? checkedUrl(flagUrl, '--url') : envUrl;
  if (envToken) {
    if (!envUrl) {
      throw new CredentialsError(
        'SWITCHBOARD_TOKEN needs SWITCHBOARD_URL, the server it is for — set both, or neither to use the credentials file',
      );
    }
    if (named !== envUrl) {
      throw new CredentialsError(
        `SWITCHBOARD_TOKEN is for ${envUrl} (SWITCHBOARD_URL), not --url ${named} — unset it to use the credentials file's entry`,
      );
    }
    return { url: envUrl, token: envToken };
  }

  const file = defaultCredentialsFile(env);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new CredentialsError(`cannot read ${file}: ${(error as Error).message}`);
    }
    throw new CredentialsError(named ? noEntry(named, file) : NONE);
  }
  let servers: Record<string, { token: string }>;
  let current: string | undefined;
  try {
    ({ servers, current } = parseCredentialsFile(text, file));
  } catch (error) {
    if (error instanceof CredentialsFileError) throw new CredentialsError(error.message);
    throw error;
  }
  const url = named ?? current;
  if (!url) {
    const saved = Object.keys(servers);
    throw new CredentialsError(
      saved.length
        ? `no current server (${file} keeps ${saved.join(', ')}) — pick one with 'switchboard login --url ${saved[0]}', or pass --url`
        : `${file} names no current server — run 'switchboard login --url URL' to choose one`,
    );
  }
  const entry = servers[url];
  if (!entry) {
    const saved = Object.keys(servers);
    throw new CredentialsError(
      noEntry(url, file) + (saved.length ? ` (it has ${saved.join(', ')})` : ''),
    );
  }
  return { url, token: entry.token };
}

function noEntry(url: string, file: string): string {
  return `no credentials for ${url} in ${file} — run 'switchboard login --url ${url} --token …', or 'switchboard admin token --save' on its data directory`;
}

function checkedUrl(url: string, where: string): string {
  const key = serverKey(url);
  if (!key) throw new CredentialsError(`${where}: ${JSON.stringify(url)} is not an http(s) URL`);
  return key;
}
