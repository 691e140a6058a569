import * as Flags from '@oclif/core/flags';
import { formatTodoLine } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class TodoDeny extends SwitchboardCommand {
  static override summary = 'Deny an approval todo (humans only): the agent must not';
  static override description =
    "Only a human decides: the approval's assignee or an admin. The first verdict wins; a later one is refused (exit 3) with who decided and when.";
  static override examples = [
    '<%= config.bin %> todo deny 43',
    '<%= config.bin %> todo deny 43 --note "not on production"',
  ];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };
  static override flags = { note: Flags.string({ description: 'a word for the agent' }) };

  async run() {
    const { args, flags } = await this.parse(TodoDeny);
    const client = await this.client();
    const { todo } = await client.deny(args.id, flags.note);
    this.log(formatTodoLine(todo));
    return { todo };
  }
}
