import { homedir } from 'node:os';
import { join } from 'node:path';

type Env = Record<string, string | undefined>;

/** `$XDG_DATA_HOME/switchboard`, else `~/.local/share/switchboard` (DESIGN §5.1). */
export function defaultDataDir(env: Env = process.env): string {
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'switchboard');
}

/** `$XDG_CONFIG_HOME/switchboard/credentials.json`, else `~/.config/switchboard/credentials.json`. */
export function defaultCredentialsFile(env: Env = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'switchboard', 'credentials.json');
}
