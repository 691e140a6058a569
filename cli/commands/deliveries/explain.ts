import * as Args from '@oclif/core/args';
import type { DeliveryExplanation } from '../../../src/contract/deliveries.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class DeliveriesExplain extends SwitchboardCommand {
  static override summary =
    "Run today's rules on a delivery's stored facts: what they would make now, beside what it made (humans)";
  static override description = `A dry run: nothing is made, changed or sent. The rules run on the facts the delivery was recorded with, the way the intake runs them — routing, then trust — so after a change of rules (a repository's .github/switchboard.yml, a source's 'source rules') it answers "why did this make no todo?" and "what would it make now?".

For a GitHub delivery the rules are the repository's .github/switchboard.yml over the defaults, read from GitHub now through the App; the defaults when the server has no App credentials, the delivery names no repository, no rule can match its event, or GitHub did not answer — "rules:" says which. For a source's, the source's rules as saved now.`;
  static override examples = [
    '<%= config.bin %> deliveries explain 8',
    '<%= config.bin %> deliveries explain 8 --json',
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
    const { args } = await this.parse(DeliveriesExplain);
    const client = await this.client();
    const explanation = await client.explainDelivery(args.id);
    this.log(formatExplanation(explanation));
    return explanation;
  }
}

function formatExplanation({ delivery, was, would, rules }: DeliveryExplanation): string {
  const event = [delivery.event, delivery.action].filter(Boolean).join('.');
  const about = [
    delivery.subject && `in ${delivery.subject}`,
    delivery.actor && `by ${delivery.actor}`,
  ]
    .filter(Boolean)
    .join(' ');
  const lines = [
    `delivery ${delivery.id}: ${delivery.source} ${event}${about ? ` ${about}` : ''}, received ${delivery.received_at}`,
  ];
  lines.push(
    `  then:   ${was.disposition}${was.todo_id === null ? '' : ` — todo #${was.todo_id}`}`,
  );
  if (was.note) lines.push(`          ${was.note}`);
  if (!would) {
    lines.push(`  now:    cannot tell — ${rules.note}`);
    return lines.join('\n');
  }
  const made = would.queue
    ? ` on ${would.queue}: ${would.title}`
    : would.verdict
      ? `: would ${would.verdict.verdict} approval #${would.verdict.approval_id}`
      : '';
  lines.push(`  now:    ${would.disposition}${made}`);
  const details = [
    would.rule && `rule ${would.rule}`,
    would.kind && `kind ${would.kind}`,
    would.attributed_to && `attributed to ${would.attributed_to}`,
    would.assignee && `assigned to ${would.assignee}`,
    would.write_backs.length > 0 && `writes back ${would.write_backs.join(', ')}`,
  ].filter(Boolean);
  if (details.length) lines.push(`          ${details.join(', ')}`);
  if (would.note) lines.push(`          ${would.note}`);
  lines.push(`  rules:  ${rules.from} — ${rules.note}`);
  lines.push(
    would.disposition === was.disposition
      ? `the rules decide as they did then (${was.disposition})`
      : `the rules decide differently now: ${was.disposition} then, ${would.disposition} now`,
  );
  return lines.join('\n');
}
