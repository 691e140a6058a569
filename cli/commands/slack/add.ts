import * as Flags from '@oclif/core/flags';
import { slackAppProblems } from '../../../src/contract/slack-app.js';
import { CommandError, EXIT } from '../../command-error.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SlackAdd extends SwitchboardCommand {
  static override summary = "Set up this server's Slack app: its bot token and signing secret";
  static override description =
    "Admins only; the server needs SWITCHBOARD_SECRET_KEY, which seals them. The bot token is checked with Slack (auth.test), which names the workspace; the token and the secrets are never shown again. Running it again replaces them (a new token after a reinstall clears a refused one). Create the app first from the manifest 'switchboard slack manifest' prints.";
  static override examples = [
    '<%= config.bin %> slack add --bot-token "$SLACK_BOT_TOKEN" --signing-secret "$SLACK_SIGNING_SECRET"',
    'SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… <%= config.bin %> slack add --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    'bot-token': Flags.string({
      description: 'the Bot User OAuth Token (xoxb-…; OAuth & Permissions)',
      env: 'SLACK_BOT_TOKEN',
    }),
    'signing-secret': Flags.string({
      description: "the app's Signing Secret (Basic Information → App Credentials)",
      env: 'SLACK_SIGNING_SECRET',
    }),
    'client-id': Flags.string({ description: "the app's Client ID (for installs from Slack)" }),
    'client-secret': Flags.string({
      description: "the app's Client Secret",
      env: 'SLACK_CLIENT_SECRET',
    }),
  };

  async run() {
    const { flags } = await this.parse(SlackAdd);
    const input = {
      bot_token: flags['bot-token'],
      signing_secret: flags['signing-secret'],
      client_id: flags['client-id'],
      client_secret: flags['client-secret'],
    };
    // Every argument is checked, and every problem said, before the server or Slack is asked.
    const problems = slackAppProblems(input);
    if (problems.length || input.signing_secret === undefined)
      throw new CommandError(problems.join('; '), EXIT.usage);
    const client = await this.client();
    const { app } = await client.addSlackApp({ ...input, signing_secret: input.signing_secret });
    const { events_url, interactions_url } = await client.getSlack();
    this.log(
      app.installed
        ? `Slack app set up in workspace ${app.team_name ?? app.team_id} (${app.team_id}), bot ${app.bot_user_id}`
        : 'Slack app set up, not yet installed in a workspace',
    );
    this.log(
      `\nSlack posts to:\n  events:       ${events_url}\n  interactions: ${interactions_url}`,
    );
    this.log("\nEach human links their Slack user with 'switchboard slack link'.");
    return { app, events_url, interactions_url };
  }
}
