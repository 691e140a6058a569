import { formatTodoLine } from '../../format-todos.js';
import { leaseFlag } from '../../lease-flag.js';
import { leaseTokenFlag, withLeaseToken } from '../../lease-token.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class TodoHeartbeat extends SwitchboardCommand {
  static override summary = 'Extend the lease on a todo you hold';
  static override description =
    "Renews the lease for --lease seconds from now (default 300). Refused (exit 3) once the lease has run out: the todo may already be someone else's.";
  static override examples = [
    '<%= config.bin %> todo heartbeat 42',
    '<%= config.bin %> todo heartbeat 42 --lease 900 --json',
  ];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };
  static override flags = { lease: leaseFlag, 'lease-token': leaseTokenFlag };

  async run() {
    const { args, flags } = await this.parse(TodoHeartbeat);
    const client = await this.client();
    const { todo } = await withLeaseToken(
      client,
      args.id,
      flags['lease-token'],
      { ends: false },
      (token) => client.heartbeat(args.id, token, flags.lease),
    );
    this.log(formatTodoLine(todo));
    return { todo };
  }
}
