import * as Flags from '@oclif/core/flags';
import { SwitchboardCommand } from '../switchboard-command.js';

const WAYS = ['web-push', 'slack', 'webhook'] as const;
const onOff = (description: string) => Flags.string({ description, options: ['on', 'off'] });

export default class Notifications extends SwitchboardCommand {
  static override summary = 'Show or choose how you are told of what waits for you';
  static override description =
    "Humans only. Each way is on until turned off: the console's Web Push, Slack (a linked Slack user), your outbound webhook. With none on, an approval for you still waits, and its history says nobody was told.";
  static override examples = [
    '<%= config.bin %> notifications',
    '<%= config.bin %> notifications --web-push off --slack on',
    '<%= config.bin %> notifications --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    'web-push': onOff("the console's Web Push"),
    slack: onOff('a Slack message from the bot'),
    webhook: onOff('your outbound webhook'),
  };

  async run() {
    const { flags } = await this.parse(Notifications);
    const client = await this.client();
    const change = Object.fromEntries(
      WAYS.filter((way) => flags[way] !== undefined).map((way) => [
        way.replace('-', '_'),
        flags[way] === 'on',
      ]),
    );
    const { preferences } =
      Object.keys(change).length > 0
        ? await client.setNotifications(change)
        : await client.getNotifications();
    for (const way of WAYS) {
      this.log(
        `${way.padEnd(9)} ${preferences[way.replace('-', '_') as keyof typeof preferences] ? 'on' : 'off'}`,
      );
    }
    return { preferences };
  }
}
