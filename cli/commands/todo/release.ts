import { formatTodoLine } from '../../format-todos.js';
import { leaseTokenFlag, withLeaseToken } from '../../lease-token.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class TodoRelease extends SwitchboardCommand {
  static override summary = 'Give a todo you hold back to its queue, attempt not counted';
  static override examples = ['<%= config.bin %> todo release 42'];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };
  static override flags = { 'lease-token': leaseTokenFlag };

  async run() {
    const { args, flags } = await this.parse(TodoRelease);
    const client = await this.client();
    const { todo } = await withLeaseToken(
      client,
      args.id,
      flags['lease-token'],
      { ends: true },
      (token) => client.release(args.id, token),
    );
    this.log(formatTodoLine(todo));
    return { todo };
  }
}
