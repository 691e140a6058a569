import * as Flags from '@oclif/core/flags';
import { defaultCredentialsFile } from '../../src/config/paths.js';
import { createApiClient } from '../../src/client/api-client.js';
import { CommandError, EXIT } from '../command-error.js';
import { formatPrincipal } from '../format-todos.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Login extends SwitchboardCommand {
  static override summary = 'Save the server URL and token the CLI uses (checked first)';
  static override description =
    'Asks the server who the token belongs to, then writes the credentials file (mode 0600) that every other command reads when SWITCHBOARD_URL/SWITCHBOARD_TOKEN are not set.';
  static override examples = ['<%= config.bin %> login --url http://127.0.0.1:3000 --token sbk_…'];
  static override enableJsonFlag = true;
  static override flags = {
    url: Flags.string({ required: true, description: 'the server, e.g. http://127.0.0.1:3000' }),
    token: Flags.string({ required: true, description: 'an API token (sbk_…)' }),
  };

  async run() {
    const { flags } = await this.parse(Login);
    if (!/^https?:\/\/[^/]/.test(flags.url)) {
      throw new CommandError(
        `--url must be an http(s) URL, not ${JSON.stringify(flags.url)}`,
        EXIT.usage,
      );
    }
    const client = createApiClient({ url: flags.url, token: flags.token });
    const { principal } = await client.whoami();
    // Imported here only: the module brings zod, which would slow every other command's start.
    const { writeCredentialsFile } = await import('../../src/config/credentials-file.js');
    const file = defaultCredentialsFile();
    await writeCredentialsFile(file, { url: client.url, token: flags.token });
    this.log(`logged in to ${client.url} as ${formatPrincipal(principal)}; credentials in ${file}`);
    return { url: client.url, principal, credentials_file: file };
  }
}
