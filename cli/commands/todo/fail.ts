import * as Flags from '@oclif/core/flags';
import { formatTodoLine } from '../../format-todos.js';
import { leaseTokenFlag, withLeaseToken } from '../../lease-token.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class TodoFail extends SwitchboardCommand {
  static override summary = 'Fail a todo you hold; it is retried later while attempts are left';
  static override examples = [
    '<%= config.bin %> todo fail 42 --reason "tests time out on the runner"',
  ];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };
  static override flags = {
    reason: Flags.string({ description: 'why, for whoever looks next' }),
    'lease-token': leaseTokenFlag,
  };

  async run() {
    const { args, flags } = await this.parse(TodoFail);
    const client = await this.client();
    const { todo } = await withLeaseToken(
      client,
      args.id,
      flags['lease-token'],
      { ends: true },
      (token) => client.fail(args.id, token, flags.reason),
    );
    this.log(formatTodoLine(todo));
    return { todo };
  }
}
