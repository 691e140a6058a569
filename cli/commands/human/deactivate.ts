import { principalNameArg } from '../../name-flags.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class HumanDeactivate extends SwitchboardCommand {
  static override summary = "End a human's access and their agents', at once (admins)";
  static override description = `In every server process at once: NAME's tokens, sign-ins (the CLI's and MCP clients'), console sessions and open streams end, and so do those of every agent of NAME's, which are revoked for good. NAME's pending approvals go to their backup ('human set NAME --backup OTHER') if one is set and active, else to the admins (every admin's to decide); each approval's history says so. Their other todos stay as they are, attributed as before. 'human reactivate NAME' lets them in again. The last admin cannot be deactivated (exit 3).`;
  static override examples = [
    '<%= config.bin %> human deactivate grace',
    '<%= config.bin %> human deactivate grace --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    name: principalNameArg({ required: true, description: 'the human' }),
  };

  async run() {
    const { args } = await this.parse(HumanDeactivate);
    const client = await this.client();
    const deactivation = await client.deactivateHuman(args.name);
    const { agents, approvals } = deactivation;
    const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
    this.log(
      `deactivated ${args.name}: ${plural(deactivation.tokens_revoked, 'token')} revoked, ` +
        `${plural(deactivation.sign_ins_revoked, 'sign-in')} and ${plural(deactivation.sessions_ended, 'console session')} ended` +
        (agents.length ? `; agents revoked: ${agents.join(', ')}` : ''),
    );
    for (const approval of approvals)
      this.log(
        `  approval #${approval.id} now waits for ${approval.assignee ?? 'the admins'} — ${approval.title}`,
      );
    return deactivation;
  }
}
