import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SlackUnlink extends SwitchboardCommand {
  static override summary = 'Unlink your Slack user, at once';
  static override description =
    'The next press of that Slack user decides nothing, and no more approvals are sent there. Exit 3 when you were not linked.';
  static override examples = ['<%= config.bin %> slack unlink'];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(SlackUnlink);
    const client = await this.client();
    const { unlinked } = await client.unlinkSlack();
    this.log('Slack user unlinked');
    return { unlinked };
  }
}
