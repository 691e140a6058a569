import * as Flags from '@oclif/core/flags';
import type { ApiClient, Todo } from '../../../src/client/api-client.js';
import { fitToTerminal, formatTable, quarantineReason } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export type QuarantinedTodo = Todo & { quarantine_reason: string | null };

/** How many todos' histories are read at once, for their reasons. */
const READ_AT_ONCE = 8;

export default class QuarantineList extends SwitchboardCommand {
  static override summary = 'List the quarantined todos, and why each is quarantined (humans)';
  static override description =
    "A todo made from an untrusted sender's event (or from a fork's code) is quarantined: no agent sees it until a human releases it ('quarantine release ID') or cancels it ('quarantine cancel ID'). Newest first; WHY is the reason recorded when it was quarantined (--json: quarantine_reason).";
  static override examples = [
    '<%= config.bin %> quarantine list',
    '<%= config.bin %> quarantine list --queue issues --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    queue: Flags.string({ description: 'only this queue' }),
    limit: Flags.integer({ min: 1, max: 500, description: 'at most this many (default 50)' }),
  };

  async run() {
    const { flags } = await this.parse(QuarantineList);
    const client = await this.client();
    const { todos: found } = await client.listTodos({
      state: 'quarantined',
      queue: flags.queue,
      limit: flags.limit,
    });
    const todos = await withReasons(client, found);
    this.log(
      todos.length
        ? fitToTerminal(
            formatTable(
              ['ID', 'QUEUE', 'FROM', 'SINCE', 'WHY', 'TITLE'],
              todos.map((todo) => [
                `#${todo.id}`,
                todo.queue,
                todo.attributed_to,
                todo.created_at,
                todo.quarantine_reason ?? '',
                todo.title,
              ]),
            ),
          )
        : 'nothing in quarantine',
    );
    return { todos };
  }
}

/** The reason is kept in each todo's history: read them a few at a time. */
async function withReasons(client: ApiClient, todos: Todo[]): Promise<QuarantinedTodo[]> {
  const result: QuarantinedTodo[] = [];
  for (let start = 0; start < todos.length; start += READ_AT_ONCE) {
    const batch = todos.slice(start, start + READ_AT_ONCE);
    const read = await Promise.all(batch.map((todo) => client.getTodo(todo.id)));
    for (const [index, { history }] of read.entries()) {
      result.push({ ...batch[index]!, quarantine_reason: quarantineReason(history) });
    }
  }
  return result;
}
