import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../../command-error.js';
import { formatTodoLine } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class QuarantineCancel extends SwitchboardCommand {
  static override summary = 'Cancel a quarantined todo: nobody will work it (humans)';
  static override description =
    "Only a quarantined todo: anything else is refused (exit 3), so that a mistyped id cannot cancel work that waits for an agent ('todo cancel' cancels those).";
  static override examples = [
    '<%= config.bin %> quarantine cancel 42',
    '<%= config.bin %> quarantine cancel 42 --reason "spam" --json',
  ];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };
  static override flags = {
    reason: Flags.string({ description: 'why, kept as its summary and in its history' }),
  };

  async run() {
    const { args, flags } = await this.parse(QuarantineCancel);
    const client = await this.client();
    const { todo: current } = await client.getTodo(args.id);
    if (current.state !== 'quarantined') {
      throw new CommandError(
        `todo #${current.id} is ${current.state}, not quarantined — 'switchboard todo cancel ${current.id}' cancels it`,
        EXIT.refused,
      );
    }
    const { todo } = await client.cancel(args.id, flags.reason);
    this.log(formatTodoLine(todo));
    return { todo };
  }
}
