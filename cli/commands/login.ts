import * as Flags from '@oclif/core/flags';
import { defaultCredentialsFile } from '../../src/config/paths.js';
import { createApiClient } from '../../src/client/api-client.js';
import {
  CredentialsFileError,
  readCredentialsFile,
  serverKey,
  updateCredentialsFile,
  type CredentialsFile,
} from '../../src/config/credentials-file.js';
import { CommandError, EXIT } from '../command-error.js';
import { formatPrincipal } from '../format-todos.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Login extends SwitchboardCommand {
  static override summary = 'Add a server to the CLI credentials, or switch to one (checked first)';
  static override description = `The credentials file (mode 0600) keeps a token per server URL and which server is current: the one every other command uses unless --url or SWITCHBOARD_URL names another.

With --token, asks the server who the token belongs to, then saves it as that server's entry (replacing the entry's earlier token, and saying so) and makes the server current. Without --token, switches to a server already saved, after checking its token still works.`;
  static override examples = [
    '<%= config.bin %> login --url http://127.0.0.1:3000 --token sbk_…',
    '<%= config.bin %> login --url http://127.0.0.1:3002',
    '<%= config.bin %> login --url http://127.0.0.1:3002 --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    url: Flags.string({ required: true, description: 'the server, e.g. http://127.0.0.1:3000' }),
    token: Flags.string({
      description: 'an API token (sbk_…); without one, the token saved for --url',
    }),
  };

  async run() {
    const { flags } = await this.parse(Login);
    const url = serverKey(flags.url);
    if (!url) {
      throw new CommandError(
        `--url must be an http(s) URL, not ${JSON.stringify(flags.url)}`,
        EXIT.usage,
      );
    }
    const file = defaultCredentialsFile();
    const token = flags.token ?? savedToken(await readFile(file), url, file);
    const { principal } = await createApiClient({ url, token }).whoami();
    const { replaced } = await updateCredentialsFile(file, (credentials) => {
      const earlier = credentials.servers[url]?.token;
      credentials.servers[url] = { token };
      credentials.current = url;
      return { write: true, replaced: earlier !== undefined && earlier !== token };
    }).catch(unreadable);
    const who = formatPrincipal(principal);
    this.log(
      flags.token
        ? `logged in to ${url} as ${who}${replaced ? ' (replaced the token saved for it)' : ''}; credentials in ${file}`
        : `now using ${url}, as ${who}`,
    );
    return { url, principal, credentials_file: file, replaced };
  }
}

/** A file this CLI cannot read is left as it is: it may hold tokens that exist nowhere else. */
function unreadable(error: unknown): never {
  if (error instanceof CredentialsFileError) {
    throw new CommandError(error.message, EXIT.unreachable);
  }
  throw error;
}

const readFile = (file: string) => readCredentialsFile(file).catch(unreadable);

function savedToken(credentials: CredentialsFile | undefined, url: string, file: string): string {
  const token = credentials?.servers[url]?.token;
  if (token) return token;
  const saved = Object.keys(credentials?.servers ?? {});
  throw new CommandError(
    `no token saved for ${url} in ${file}${saved.length ? ` (it has ${saved.join(', ')})` : ''} — pass --token`,
    EXIT.usage,
  );
}
