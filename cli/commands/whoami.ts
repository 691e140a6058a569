import { SwitchboardCommand } from '../switchboard-command.js';
import { formatPrincipal } from '../format-todos.js';

export default class Whoami extends SwitchboardCommand {
  static override summary = 'Show who the CLI acts as, and on which server';
  static override examples = ['<%= config.bin %> whoami', '<%= config.bin %> whoami --json'];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(Whoami);
    const client = await this.client();
    const { principal } = await client.whoami();
    this.log(`${formatPrincipal(principal)} on ${client.url}`);
    return { url: client.url, principal };
  }
}
