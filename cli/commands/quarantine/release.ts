import { formatTodoLine } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class QuarantineRelease extends SwitchboardCommand {
  static override summary = 'Release a quarantined todo: agents may work it now (humans)';
  static override description =
    "You vouch for what it asks: it becomes pending like any other todo and rings the agents of its queue. A todo that is not quarantined is refused (exit 3). 'quarantine list' shows why each one is quarantined.";
  static override examples = [
    '<%= config.bin %> quarantine release 42',
    '<%= config.bin %> quarantine release 42 --json',
  ];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };

  async run() {
    const { args } = await this.parse(QuarantineRelease);
    const client = await this.client();
    const { todo } = await client.releaseQuarantine(args.id);
    this.log(`released ${formatTodoLine(todo)}`);
    return { todo };
  }
}
