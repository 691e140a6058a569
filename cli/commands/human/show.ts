import type { HumanDetails } from '../../../src/client/api-client.js';
import { principalNameArg } from '../../name-flags.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class HumanShow extends SwitchboardCommand {
  static override summary = 'Show a human: settings, status and agents (yours; an admin: anyone)';
  static override examples = [
    '<%= config.bin %> human show grace',
    '<%= config.bin %> human show grace --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    name: principalNameArg({ required: true, description: 'the human' }),
  };

  async run() {
    const { args } = await this.parse(HumanShow);
    const client = await this.client();
    const { human } = await client.showHuman(args.name);
    this.log(formatHuman(human));
    return { human };
  }
}

/** A human, their settings and their agents, one field a line. */
export function formatHuman(human: HumanDetails): string {
  const agents = human.agents.map(
    (agent) =>
      `${agent.name} (${(agent.queues ?? []).join(', ')}${agent.revoked_at ? `, revoked ${agent.revoked_at}` : ''})`,
  );
  const fields: [string, string][] = [
    ['status', human.revoked_at ? `deactivated ${human.revoked_at}` : 'active'],
    ['admin', human.is_admin ? 'yes' : 'no'],
    ['github login', human.github_login ?? ''],
    ['backup', human.backup ?? 'none (their approvals would go to the admins)'],
    ['backup for', human.backup_for.join(', ')],
    ['agents', agents.join('; ')],
    ['created', human.created_at],
  ];
  return [
    human.name,
    ...fields
      .filter(([, value]) => value !== '')
      .map(([name, value]) => `  ${`${name}:`.padEnd(14)}${value}`),
  ].join('\n');
}
