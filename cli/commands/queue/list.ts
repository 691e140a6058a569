import { formatQueueTable } from '../../format-queues.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class QueueList extends SwitchboardCommand {
  static override summary = 'List the queues with their limits and usage';
  static override description =
    'A human sees every queue with limits or open todos; an agent sees its own queues.';
  static override examples = [
    '<%= config.bin %> queue list',
    '<%= config.bin %> queue list --json',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(QueueList);
    const client = await this.client();
    const { queues } = await client.listQueues();
    this.log(queues.length ? formatQueueTable(queues) : 'no queues with limits or open todos');
    return { queues };
  }
}
