import * as Flags from '@oclif/core/flags';
import type { HumanSettings } from '../../../src/client/api-client.js';
import { nameProblem } from '../../../src/contract/name-rules.js';
import { CommandError, EXIT } from '../../command-error.js';
import { principalNameArg } from '../../name-flags.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { formatHuman } from './show.js';

export default class HumanSet extends SwitchboardCommand {
  static override summary = "Change a human's settings (yours; an admin: anyone's)";
  static override description = `--backup OTHER: who takes NAME's pending approvals when NAME is deactivated — another active human; "none" clears it. A setting not given is kept. Prints the human as 'human show' does.`;
  static override examples = [
    '<%= config.bin %> human set grace --backup linus',
    '<%= config.bin %> human set grace --backup none --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    name: principalNameArg({ required: true, description: 'the human' }),
  };
  static override flags = {
    backup: Flags.string({
      description: 'who takes their pending approvals when they are deactivated, or none',
      helpValue: 'OTHER|none',
    }),
  };

  async run() {
    const { args, flags } = await this.parse(HumanSet);
    const settings: HumanSettings = {};
    if (flags.backup !== undefined) {
      const problem = flags.backup === 'none' ? null : nameProblem(flags.backup, '--backup');
      if (problem) throw new CommandError(problem, EXIT.usage);
      settings.backup = flags.backup === 'none' ? null : flags.backup;
    }
    if (Object.keys(settings).length === 0)
      throw new CommandError(
        'give a setting to change: --backup OTHER|none — see --help',
        EXIT.usage,
      );
    const client = await this.client();
    const { human } = await client.setHuman(args.name, settings);
    this.log(formatHuman(human));
    return { human };
  }
}
