import * as Flags from '@oclif/core/flags';
import { TODO_STATES } from '../../../src/contract/todo.js';
import { CommandError, EXIT } from '../../command-error.js';
import { formatTodoTable } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdFlag } from '../../todo-id-arg.js';
import { queueFlag } from '../../name-flags.js';

/** The API's page size limit (GET /todos?limit=). */
const LIMIT_MAX = 500;
const LIMIT_DEFAULT = 50;

export default class TodoList extends SwitchboardCommand {
  static override summary = 'List todos, newest first';
  static override description = `Shows the open todos (pending, claimed, failed with a retry to come, quarantined) you may see, newest first. --mine shows only what waits for you: todos assigned to you (a human: approvals to decide, with who asks and when it expires) or held by you.

A page holds --limit todos (default ${LIMIT_DEFAULT}, at most ${LIMIT_MAX}); --before ID lists the next page, older than the last ID shown.`;
  static override examples = [
    '<%= config.bin %> todo list',
    '<%= config.bin %> todo list --queue reviews --state pending',
    '<%= config.bin %> todo list --mine --json',
    '<%= config.bin %> todo list --state all --limit 100 --before 4711',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    queue: queueFlag({ description: 'only this queue' }),
    state: Flags.string({
      description: 'one state, `open` (the default) or `all`',
      options: [...TODO_STATES, 'open', 'all'],
    }),
    mine: Flags.boolean({ description: 'only what waits for you: assigned to you or held by you' }),
    limit: Flags.integer({
      min: 1,
      description: `at most this many (default ${LIMIT_DEFAULT}, at most ${LIMIT_MAX})`,
    }),
    before: todoIdFlag({ description: 'only todos older than this one: the next page' }),
  };

  async run() {
    const { flags } = await this.parse(TodoList);
    if (flags.limit !== undefined && flags.limit > LIMIT_MAX) {
      throw new CommandError(
        `--limit is at most ${LIMIT_MAX}; for more, page: list with --limit ${LIMIT_MAX}, then again with --before the last ID shown`,
        EXIT.usage,
      );
    }
    const client = await this.client();
    const limit = flags.limit ?? LIMIT_DEFAULT;
    const { todos } = await client.listTodos({
      queue: flags.queue,
      state: flags.state,
      mine: flags.mine,
      limit: flags.limit,
      before: flags.before,
    });
    if (!todos.length) this.log('no todos');
    else {
      this.log(formatTodoTable(todos));
      // A full page: there may be more, older ones.
      if (todos.length === limit) {
        this.log(`(older todos: --before ${todos.at(-1)!.id} lists the next page)`);
      }
    }
    return { todos };
  }
}
