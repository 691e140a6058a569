import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../../command-error.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SlackChannel extends SwitchboardCommand {
  static override summary = 'Choose where your approvals arrive in Slack: a channel, or --dm';
  static override description =
    "CHANNEL is Slack's id of it (C0123ABCD: the channel's details show it), and the bot must be a member. Only your linked Slack user's presses decide, wherever the message is.";
  static override examples = [
    '<%= config.bin %> slack channel C0123ABCD',
    '<%= config.bin %> slack channel --dm',
  ];
  static override enableJsonFlag = true;
  static override args = {
    channel: Args.string({ description: "the channel's id" }),
  };
  static override flags = {
    dm: Flags.boolean({ description: 'a direct message from the bot (the default)' }),
  };

  async run() {
    const { args, flags } = await this.parse(SlackChannel);
    if (Boolean(args.channel) === Boolean(flags.dm)) {
      throw new CommandError('name a channel, or pass --dm (not both)', EXIT.usage);
    }
    const client = await this.client();
    const { link } = await client.setSlackChannel(args.channel ?? null);
    this.log(
      link.channel_id
        ? `your approvals now arrive in channel ${link.channel_id}`
        : 'your approvals now arrive in a direct message from the bot',
    );
    return { link };
  }
}
