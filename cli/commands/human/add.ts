import * as Flags from '@oclif/core/flags';
import { formatPrincipal } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { principalNameArg } from '../../name-flags.js';

export default class HumanAdd extends SwitchboardCommand {
  static override summary = 'Add a human, with a token shown once (admins)';
  static override description =
    "Humans decide approvals, release quarantined todos and own agents. With --github-login, their `/approve N` and `/deny N` comments on GitHub count as theirs. Prints the token once: hand it over, and they run 'switchboard login --url URL --token TOKEN'.";
  static override examples = [
    '<%= config.bin %> human add grace --github-login grace-h',
    '<%= config.bin %> human add linus --admin --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    name: principalNameArg({
      required: true,
      description: 'lowercase name, unique among agents and humans',
    }),
  };
  static override flags = {
    'github-login': Flags.string({ description: 'their GitHub login', helpValue: 'LOGIN' }),
    admin: Flags.boolean({ description: 'an admin: may see and decide everything' }),
  };

  async run() {
    const { args, flags } = await this.parse(HumanAdd);
    const client = await this.client();
    const { human, token } = await client.addHuman({
      name: args.name,
      github_login: flags['github-login'],
      is_admin: flags.admin || undefined,
    });
    this.log(`added ${formatPrincipal(human)}`);
    this.log(`\ntoken (shown once — hand it over): ${token}`);
    this.log(`\nThey sign in with: switchboard login --url ${client.url} --token ${token}`);
    return { human, token };
  }
}
