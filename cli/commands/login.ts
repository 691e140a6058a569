import * as Flags from '@oclif/core/flags';
import { defaultCredentialsFile } from '../../src/platform/config/paths.js';
import { createApiClient } from '../../src/client/api-client.js';
import { ApiError } from '../../src/client/client-errors.js';
import {
  discoverSignIn,
  SignInError,
  signInWithCode,
  signInWithLoopback,
} from '../../src/client/oauth-sign-in.js';
import {
  CredentialsFileError,
  readCredentialsFile,
  serverKey,
  updateCredentialsFile,
  type CredentialsFile,
} from '../../src/platform/config/credentials-file.js';
import { CommandError, EXIT } from '../command-error.js';
import { formatPrincipal } from '../format-todos.js';
import { canOpenBrowser, openInBrowser } from '../open-in-browser.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Login extends SwitchboardCommand {
  static override summary =
    'Sign in to a server through the browser, add one with a token, or switch to one saved';
  static override description = `The credentials file (mode 0600) keeps a token per server URL and which server is current: the one every other command uses unless --url or SWITCHBOARD_URL names another.

Without --token, and with no working token saved for the server, signs in through the browser, as you (a human): on a machine with a desktop, the browser opens the server's consent page and comes back to this command (a loopback redirect with PKCE); in a terminal without one (over SSH), it shows a code to type into the console's /device page from any browser. --browser or --no-browser chooses. The token lands in the server's entry (replacing an earlier one, and saying so); 'switchboard logout' revokes it.

With --token, asks the server who the token belongs to, then saves it as that server's entry and makes the server current. With a working token already saved for the server (and neither --browser nor --no-browser), switches to it.`;
  static override examples = [
    '<%= config.bin %> login --url https://switchboard.example.com',
    '<%= config.bin %> login --url https://switchboard.example.com --no-browser',
    '<%= config.bin %> login --url http://127.0.0.1:3000 --token sbk_…',
    '<%= config.bin %> login --url http://127.0.0.1:3002',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    url: Flags.string({
      description:
        "the server, e.g. https://switchboard.example.com (default: SWITCHBOARD_URL, else the credentials file's current server)",
    }),
    token: Flags.string({
      description: 'an API token (sbk_…) to save instead of signing in through the browser',
    }),
    browser: Flags.boolean({
      allowNo: true,
      description:
        'sign in through a browser on this machine (--browser), or with a code typed into the console from any browser (--no-browser); default: whichever this machine can do',
    }),
  };

  async run() {
    const { flags } = await this.parse(Login);
    const file = defaultCredentialsFile();
    const credentials = await readFile(file);
    const named = flags.url ?? process.env.SWITCHBOARD_URL ?? credentials?.current;
    if (!named)
      throw new CommandError(
        'which server? pass --url URL, e.g. --url https://switchboard.example.com',
        EXIT.usage,
      );
    const url = serverKey(named);
    if (!url) {
      throw new CommandError(
        `--url must be an http(s) URL, not ${JSON.stringify(named)}`,
        EXIT.usage,
      );
    }
    const saved = credentials?.servers[url]?.token;
    if (!flags.token && saved && flags.browser === undefined) {
      try {
        const { principal } = await createApiClient({ url, token: saved }).whoami();
        await save(file, url, saved);
        this.log(`now using ${url}, as ${formatPrincipal(principal)}`);
        return { url, principal, credentials_file: file, replaced: false, method: 'saved' };
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 401) throw error;
        this.say(`the token saved for ${url} is refused (${error.message}); signing in again`);
      }
    }

    let token = flags.token;
    let method = 'token';
    if (!token) {
      const browser = flags.browser ?? canOpenBrowser();
      method = browser ? 'browser' : 'code';
      token = await signIn(url, browser, (line) => this.say(line));
    }
    const { principal } = await createApiClient({ url, token }).whoami();
    const { replaced } = await save(file, url, token);
    this.log(
      `logged in to ${url} as ${formatPrincipal(principal)}${method === 'token' ? '' : ' (signed in through the browser)'}` +
        `${replaced ? ' (replaced the token saved for it)' : ''}; credentials in ${file}`,
    );
    return { url, principal, credentials_file: file, replaced, method };
  }

  /** Instructions for the human go to stderr: stdout is the result (and --json's one document). */
  private say(line: string): void {
    process.stderr.write(`${line}\n`);
  }
}

async function signIn(url: string, browser: boolean, say: (line: string) => void): Promise<string> {
  try {
    const endpoints = await discoverSignIn(url);
    return browser
      ? await signInWithLoopback({ endpoints, open: openInBrowser, say })
      : await signInWithCode({ endpoints, say });
  } catch (error) {
    if (error instanceof SignInError) throw new CommandError(error.message, EXIT.unreachable);
    throw error;
  }
}

/** Makes `token` URL's entry and URL current; says whether it replaced another token. */
async function save(file: string, url: string, token: string): Promise<{ replaced: boolean }> {
  return updateCredentialsFile(file, (credentials) => {
    const earlier = credentials.servers[url]?.token;
    credentials.servers[url] = { token };
    credentials.current = url;
    return { write: true, replaced: earlier !== undefined && earlier !== token };
  }).catch(unreadable);
}

/** A file this CLI cannot read is left as it is: it may hold tokens that exist nowhere else. */
function unreadable(error: unknown): never {
  if (error instanceof CredentialsFileError) {
    throw new CommandError(error.message, EXIT.unreachable);
  }
  throw error;
}

const readFile = (file: string): Promise<CredentialsFile | undefined> =>
  readCredentialsFile(file).catch(unreadable);
