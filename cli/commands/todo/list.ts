import * as Flags from '@oclif/core/flags';
import { TODO_STATES } from '../../../src/contract/todo.js';
import { formatTodoTable } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class TodoList extends SwitchboardCommand {
  static override summary = 'List todos, newest first';
  static override description =
    'Shows the open todos (pending, claimed, failed with a retry to come, quarantined) you may see, newest first. --mine shows only what waits for you: todos assigned to you (a human: approvals to decide) or held by you.';
  static override examples = [
    '<%= config.bin %> todo list',
    '<%= config.bin %> todo list --queue reviews --state pending',
    '<%= config.bin %> todo list --mine --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    queue: Flags.string({ description: 'only this queue' }),
    state: Flags.string({
      description: 'one state, `open` (the default) or `all`',
      options: [...TODO_STATES, 'open', 'all'],
    }),
    mine: Flags.boolean({ description: 'only what waits for you: assigned to you or held by you' }),
    limit: Flags.integer({ min: 1, max: 500, description: 'at most this many (default 50)' }),
  };

  async run() {
    const { flags } = await this.parse(TodoList);
    const client = await this.client();
    const { todos } = await client.listTodos({
      queue: flags.queue,
      state: flags.state,
      mine: flags.mine,
      limit: flags.limit,
    });
    this.log(todos.length ? formatTodoTable(todos) : 'no todos');
    return { todos };
  }
}
