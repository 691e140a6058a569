import * as Flags from '@oclif/core/flags';
import { openInBrowser } from '../open-in-browser.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Open extends SwitchboardCommand {
  static override summary = 'Sign in to the web console: a one-time link, opened in your browser';
  static override description =
    'Asks the server for a sign-in link for the human the CLI acts as (agents cannot sign in). The link works once, for five minutes; it is printed, and opened in the desktop browser where there is one.';
  static override examples = [
    '<%= config.bin %> open',
    '<%= config.bin %> open --print',
    '<%= config.bin %> open --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    print: Flags.boolean({ description: 'only print the link; do not open a browser' }),
  };

  async run() {
    const { flags } = await this.parse(Open);
    const client = await this.client();
    const { url } = await client.signInLink();
    if (this.jsonEnabled()) return { url };
    this.log(url);
    if (!flags.print && openInBrowser(url))
      this.log('(opened in your browser; the link works once)');
    return { url };
  }
}
