import { formatTable } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class AgentList extends SwitchboardCommand {
  static override summary = 'List the agents you own (an admin: every agent)';
  static override examples = [
    '<%= config.bin %> agent list',
    '<%= config.bin %> agent list --json',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(AgentList);
    const client = await this.client();
    const { agents } = await client.listAgents();
    this.log(
      agents.length
        ? formatTable(
            ['NAME', 'OWNER', 'QUEUES', 'STATUS', 'CREATED'],
            agents.map((agent) => [
              agent.name,
              agent.owner ?? '',
              (agent.queues ?? []).join(','),
              agent.revoked_at ? `revoked ${agent.revoked_at}` : 'active',
              agent.created_at,
            ]),
          )
        : "no agents — 'switchboard agent add NAME --queue Q' vends one",
    );
    return { agents };
  }
}
