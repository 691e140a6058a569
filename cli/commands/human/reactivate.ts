import { formatPrincipal } from '../../format-todos.js';
import { principalNameArg } from '../../name-flags.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class HumanReactivate extends SwitchboardCommand {
  static override summary =
    'Let a deactivated human in again, with a new token shown once (admins)';
  static override description = `What deactivation ended stays ended: their old tokens, sign-ins and sessions, and their agents (they add new ones). Their approvals stay with whoever took them. Prints a new token once: hand it over, and they run 'switchboard login --url URL --token TOKEN' (or sign in with GitHub, if they have a login).`;
  static override examples = [
    '<%= config.bin %> human reactivate grace',
    '<%= config.bin %> human reactivate grace --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    name: principalNameArg({ required: true, description: 'the human' }),
  };

  async run() {
    const { args } = await this.parse(HumanReactivate);
    const client = await this.client();
    const { human, token } = await client.reactivateHuman(args.name);
    this.log(`reactivated ${formatPrincipal(human)}`);
    this.log(`\ntoken (shown once — hand it over): ${token}`);
    this.log(`\nThey sign in with: switchboard login --url ${client.url} --token ${token}`);
    return { human, token };
  }
}
