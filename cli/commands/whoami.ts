import { readCredentialsFile } from '../../src/platform/config/credentials-file.js';
import { defaultCredentialsFile } from '../../src/platform/config/paths.js';
import { SwitchboardCommand } from '../switchboard-command.js';
import { formatPrincipal } from '../format-todos.js';

export default class Whoami extends SwitchboardCommand {
  static override summary = 'Show who the CLI acts as, and on which server';
  static override description =
    'Also lists the servers the credentials file keeps a token for, marking the current one (the server commands use unless --url or SWITCHBOARD_URL names another).';
  static override examples = [
    '<%= config.bin %> whoami',
    '<%= config.bin %> whoami --json',
    '<%= config.bin %> whoami --url http://127.0.0.1:3002',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(Whoami);
    const client = await this.client();
    const { principal } = await client.whoami();
    const file = await readCredentialsFile(defaultCredentialsFile()).catch(() => undefined);
    const servers = Object.keys(file?.servers ?? {}).map((url) => ({
      url,
      current: url === file?.current,
    }));
    this.log(`${formatPrincipal(principal)} on ${client.url}`);
    const others = servers.filter((server) => server.url !== client.url);
    if (others.length) {
      this.log(
        `also saved: ${others.map((s) => s.url + (s.current ? ' (current)' : '')).join(', ')}`,
      );
    }
    return { url: client.url, principal, servers };
  }
}
