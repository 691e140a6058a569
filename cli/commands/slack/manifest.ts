import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SlackManifest extends SwitchboardCommand {
  static override summary = "Print the Slack app manifest, naming this server's public URL";
  static override description =
    "Paste it in Slack: Your Apps → Create New App → From an app manifest. It asks for two bot scopes (chat:write, im:history) and the user scope openid (Sign in with Slack) and names this server's /api/slack/events and /api/slack/interactions.";
  static override examples = [
    '<%= config.bin %> slack manifest > slack-app.yml',
    '<%= config.bin %> slack manifest --json',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(SlackManifest);
    const client = await this.client();
    const { manifest } = await client.slackManifest();
    this.log(manifest.trimEnd());
    return { manifest };
  }
}
