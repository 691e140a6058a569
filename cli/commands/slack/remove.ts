import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SlackRemove extends SwitchboardCommand {
  static override summary = "Remove this server's Slack app, its token and secrets";
  static override description =
    "Admins only. Nothing more is sent to Slack, and Slack's requests are refused. Humans' links stay, for the same workspace added again.";
  static override examples = ['<%= config.bin %> slack remove'];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(SlackRemove);
    const client = await this.client();
    const { removed } = await client.removeSlackApp();
    this.log('Slack app removed');
    return { removed };
  }
}
