import * as Args from '@oclif/core/args';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class AgentRevoke extends SwitchboardCommand {
  static override summary = 'Revoke an agent and every token it has, at once';
  static override examples = ['<%= config.bin %> agent revoke reviewer'];
  static override enableJsonFlag = true;
  static override args = { name: Args.string({ required: true, description: 'the agent' }) };

  async run() {
    const { args } = await this.parse(AgentRevoke);
    const client = await this.client();
    const { agent } = await client.revokeAgent(args.name);
    this.log(`revoked ${agent.name}: its tokens no longer work`);
    return { agent };
  }
}
