import * as Flags from '@oclif/core/flags';
import { formatTodoLine } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class TodoCancel extends SwitchboardCommand {
  static override summary = 'Cancel a todo nobody should work (humans only)';
  static override description =
    'A pending, failed or quarantined todo, or an approval still waiting for its verdict, is canceled: nobody can claim or decide it any more. A claimed todo must be released or finished first (exit 3). Agents may not cancel.';
  static override examples = [
    '<%= config.bin %> todo cancel 42',
    '<%= config.bin %> todo cancel 42 --reason "fixed upstream" --json',
  ];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };
  static override flags = {
    reason: Flags.string({ description: 'why, kept as its summary and in its history' }),
  };

  async run() {
    const { args, flags } = await this.parse(TodoCancel);
    const client = await this.client();
    const { todo } = await client.cancel(args.id, flags.reason);
    this.log(formatTodoLine(todo));
    return { todo };
  }
}
