import { formatTodoDetails } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class TodoShow extends SwitchboardCommand {
  static override summary = 'Show a todo and its history: who did what, when';
  static override examples = [
    '<%= config.bin %> todo show 42',
    '<%= config.bin %> todo show 42 --json',
  ];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };

  async run() {
    const { args } = await this.parse(TodoShow);
    const client = await this.client();
    const { todo, history, held_back = null } = await client.getTodo(args.id);
    this.log(formatTodoDetails(todo, history, held_back));
    return { todo, history, held_back };
  }
}
