import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../../command-error.js';
import { fitToTerminal, formatTable } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

/** The API's page size limit (GET /deliveries?limit=). */
const LIMIT_MAX = 500;
const LIMIT_DEFAULT = 50;

export default class DeliveriesList extends SwitchboardCommand {
  static override summary =
    'List recent deliveries and what each made, or why it made nothing (humans)';
  static override description = `Every verified delivery of every provider — GitHub's and every source's, in one id space — newest first: its event, what it is about (SUBJECT: the repository, project or team), who caused it (ACTOR), its disposition (created, quarantined, no_rule, bot_sender, unreadable, duplicate, verdict, verdict_refused), the todo it made and the note that says what the disposition does not. 'deliveries show ID' shows one in full, 'deliveries explain ID' what today's rules would make of it.

A page holds --limit deliveries (default ${LIMIT_DEFAULT}, at most ${LIMIT_MAX}); --before ID lists the next page, older than the last ID shown. Deliveries older than the retention period (SWITCHBOARD_RETENTION_DAYS, 30 days) are pruned.`;
  static override examples = [
    '<%= config.bin %> deliveries list',
    '<%= config.bin %> deliveries list --source github --limit 20',
    '<%= config.bin %> deliveries list --source code --before 4711 --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    source: Flags.string({ description: "only this source's: `github`, or a source's name" }),
    limit: Flags.integer({
      min: 1,
      description: `at most this many (default ${LIMIT_DEFAULT}, at most ${LIMIT_MAX})`,
    }),
    before: Flags.integer({
      min: 1,
      description: 'only deliveries older than this id: the next page',
    }),
  };

  async run() {
    const { flags } = await this.parse(DeliveriesList);
    if (flags.limit !== undefined && flags.limit > LIMIT_MAX) {
      throw new CommandError(
        `--limit is at most ${LIMIT_MAX}; for more, page: list with --limit ${LIMIT_MAX}, then again with --before the last ID shown`,
        EXIT.usage,
      );
    }
    const client = await this.client();
    const { deliveries } = await client.listDeliveries({
      source: flags.source,
      limit: flags.limit,
      before: flags.before,
    });
    if (!deliveries.length) {
      this.log(flags.before ? 'no older deliveries' : 'no deliveries yet');
      return { deliveries };
    }
    this.log(
      fitToTerminal(
        formatTable(
          ['ID', 'SOURCE', 'EVENT', 'SUBJECT', 'ACTOR', 'DISPOSITION', 'TODO', 'RECEIVED', 'NOTE'],
          deliveries.map((delivery) => [
            String(delivery.id),
            delivery.source,
            [delivery.event, delivery.action].filter(Boolean).join('.'),
            delivery.subject ?? '',
            delivery.actor ?? '',
            delivery.disposition,
            delivery.todo_id === null ? '' : `#${delivery.todo_id}`,
            delivery.received_at,
            delivery.note ?? '',
          ]),
        ),
      ),
    );
    // A full page: there may be more, older ones.
    if (deliveries.length === (flags.limit ?? LIMIT_DEFAULT)) {
      this.log(`(older deliveries: --before ${deliveries.at(-1)!.id} lists the next page)`);
    }
    return { deliveries };
  }
}
