import { SwitchboardCommand } from '../../switchboard-command.js';

export default class WebhookRemove extends SwitchboardCommand {
  static override summary = 'Remove your outbound webhook';
  static override description =
    'Doorbells no live session of yours can take are then stored, and offered again when one attaches. Exit 0 also when none was set (--json: {"removed": false}).';
  static override examples = [
    '<%= config.bin %> webhook remove',
    '<%= config.bin %> webhook remove --json',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(WebhookRemove);
    const client = await this.client();
    const { removed } = await client.removeWebhook();
    this.log(removed ? 'webhook removed' : 'no webhook was set');
    return { removed };
  }
}
