import * as Flags from '@oclif/core/flags';
import { defaultCredentialsFile } from '../../src/platform/config/paths.js';
import { discoverSignIn, revokeSignIn, SignInError } from '../../src/client/oauth-sign-in.js';
import {
  CredentialsFileError,
  readCredentialsFile,
  serverKey,
  updateCredentialsFile,
} from '../../src/platform/config/credentials-file.js';
import { CommandError, EXIT } from '../command-error.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Logout extends SwitchboardCommand {
  static override summary = 'Sign out of a server: revoke its token and remove its entry';
  static override description = `Revokes the token saved for the server (RFC 7009) and removes the server's entry from the credentials file; if it was the current server, none is current until the next login.

A token from a sign-in ('switchboard login' through the browser) stops working at once. A token that did not come from one (from 'agent add', 'human add', 'admin token' or the first start) cannot be revoked this way: its entry is removed all the same, and the command says it still works — 'switchboard token list' shows it, and 'switchboard token revoke ID' ends it. If the server cannot be reached, nothing is removed.`;
  static override examples = [
    '<%= config.bin %> logout',
    '<%= config.bin %> logout --url https://switchboard.example.com',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    url: Flags.string({
      description:
        "the server (default: SWITCHBOARD_URL, else the credentials file's current server)",
    }),
  };

  async run() {
    const { flags } = await this.parse(Logout);
    const file = defaultCredentialsFile();
    const credentials = await readCredentialsFile(file).catch(unreadable);
    const named = flags.url ?? process.env.SWITCHBOARD_URL ?? credentials?.current;
    const url = named === undefined ? undefined : serverKey(named);
    if (!url) {
      throw new CommandError(
        named === undefined
          ? 'which server? pass --url URL'
          : `--url must be an http(s) URL, not ${JSON.stringify(named)}`,
        EXIT.usage,
      );
    }
    const token = credentials?.servers[url]?.token;
    if (!token)
      throw new CommandError(`not logged in to ${url}: ${file} has no token for it`, EXIT.usage);
    let outcome: 'revoked' | 'not_signed_in';
    try {
      outcome = await revokeSignIn(await discoverSignIn(url), token);
    } catch (error) {
      if (!(error instanceof SignInError)) throw error;
      outcome = 'not_signed_in';
    }
    await updateCredentialsFile(file, (saved) => {
      delete saved.servers[url];
      if (saved.current === url) saved.current = undefined;
      return { write: true };
    }).catch(unreadable);
    this.log(
      outcome === 'revoked'
        ? `logged out of ${url}: its token is revoked and removed from ${file}`
        : `logged out of ${url}: its token is removed from ${file} but still works — it did not come from a sign-in; 'switchboard token list' shows it and 'switchboard token revoke ID' ends it`,
    );
    return { url, revoked: outcome === 'revoked', credentials_file: file };
  }
}

function unreadable(error: unknown): never {
  if (error instanceof CredentialsFileError)
    throw new CommandError(error.message, EXIT.unreachable);
  throw error;
}
