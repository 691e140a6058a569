import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SlackShow extends SwitchboardCommand {
  static override summary = "Show this server's Slack app and your link to it";
  static override description =
    'Never a token or a secret. Says when Slack refused the bot token (revoked, the app uninstalled): nothing is sent to Slack until an admin runs switchboard slack add again.';
  static override examples = [
    '<%= config.bin %> slack show',
    '<%= config.bin %> slack show --json',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(SlackShow);
    const client = await this.client();
    const shown = await client.getSlack();
    const { app, link } = shown;
    if (!app) this.log('Slack: not set up (an admin runs switchboard slack add)');
    else {
      this.log(
        app.installed
          ? `Slack: workspace ${app.team_name ?? app.team_id} (${app.team_id}), bot ${app.bot_user_id}, added by ${app.added_by}`
          : `Slack: set up by ${app.added_by}, not yet installed in a workspace`,
      );
      if (app.token_refused_at) {
        this.log(
          `Slack refused the bot token at ${app.token_refused_at} (${app.token_refused_reason}): nothing is sent until it is replaced (switchboard slack add)`,
        );
      }
    }
    this.log(
      link
        ? `you: linked to Slack user ${link.slack_user_id}; approvals go ${link.channel_id ? `to channel ${link.channel_id}` : 'to a direct message'}`
        : 'you: not linked (switchboard slack link)',
    );
    return shown;
  }
}
