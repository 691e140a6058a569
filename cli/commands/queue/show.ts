import { queueArg } from '../../name-flags.js';
import { formatQueueDetails } from '../../format-queues.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class QueueShow extends SwitchboardCommand {
  static override summary =
    "Show a queue's limits, how much of them is in use, and whether its todos are held back";
  static override description =
    'Anyone who may work the queue may see it. Held back: the queue is at a limit, and its waiting todos stay pending until the time shown.';
  static override examples = [
    '<%= config.bin %> queue show reviews',
    '<%= config.bin %> queue show reviews --json',
  ];
  static override enableJsonFlag = true;
  static override args = { queue: queueArg({ required: true, description: 'the queue' }) };

  async run() {
    const { args } = await this.parse(QueueShow);
    const client = await this.client();
    const { queue } = await client.getQueue(args.queue);
    this.log(formatQueueDetails(queue));
    return { queue };
  }
}
