import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SlackLink extends SwitchboardCommand {
  static override summary = 'Link your Slack user: print a one-time code to send the bot';
  static override description =
    "Humans only. Send the code to the switchboard bot in a direct message within ten minutes: your Slack user is then linked to you, approvals assigned to you arrive there, and your Allow and Deny count as yours. Until then, a press of yours in Slack decides nothing. A new code replaces the last; 'switchboard slack unlink' undoes the link at once.";
  static override examples = [
    '<%= config.bin %> slack link',
    '<%= config.bin %> slack link --json',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(SlackLink);
    const client = await this.client();
    const { code, expires_at } = await client.slackLinkCode();
    this.log(`Send this code to the switchboard bot in a direct message in Slack: ${code}`);
    this.log(`(it works once, until ${expires_at})`);
    return { code, expires_at };
  }
}
