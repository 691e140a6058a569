import * as Args from '@oclif/core/args';
import type { DeliveryRecord } from '../../../src/contract/deliveries.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class DeliveriesShow extends SwitchboardCommand {
  static override summary =
    'Show one delivery in full: its record and the facts the rules read (humans)';
  static override description =
    "ID is the id 'deliveries list' shows (not the provider's delivery id). The facts are what the rules read of the payload — titles and bodies neutralised and capped as a todo's are, every other field bounded — never the payload itself; with the SHA-256 of the signed body, which is how a replay under another delivery id is recognised.";
  static override examples = [
    '<%= config.bin %> deliveries show 8',
    '<%= config.bin %> deliveries show 8 --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    id: Args.integer({
      required: true,
      min: 1,
      description: "the delivery's id, as 'deliveries list' shows it",
    }),
  };

  async run() {
    const { args } = await this.parse(DeliveriesShow);
    const client = await this.client();
    const { delivery } = await client.getDelivery(args.id);
    this.log(formatDelivery(delivery));
    return { delivery };
  }
}

function formatDelivery(delivery: DeliveryRecord): string {
  const fields: [string, string | number | null][] = [
    ['delivery id', delivery.delivery_id],
    [
      'source',
      delivery.source === delivery.kind ? delivery.source : `${delivery.source} (${delivery.kind})`,
    ],
    ['subject', delivery.subject],
    ['actor', delivery.actor],
    ['installation', delivery.installation_id],
    [
      'disposition',
      delivery.todo_id === null
        ? delivery.disposition
        : `${delivery.disposition} — todo #${delivery.todo_id}`,
    ],
    ['note', delivery.note],
    ['received', delivery.received_at],
    ['body sha-256', delivery.body_sha256],
  ];
  const lines = [
    `delivery ${delivery.id}: ${[delivery.event, delivery.action].filter(Boolean).join('.')}`,
  ];
  for (const [name, value] of fields) {
    if (value !== null && value !== '') lines.push(`  ${`${name}:`.padEnd(15)}${value}`);
  }
  lines.push('', 'Facts (what the rules read)');
  lines.push(
    delivery.facts
      ? JSON.stringify(delivery.facts, null, 2).replace(/^/gm, '  ')
      : '  none: recorded before deliveries kept their facts',
  );
  return lines.join('\n');
}
