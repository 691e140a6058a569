import * as Flags from '@oclif/core/flags';
import { formatTodoLine } from '../../format-todos.js';
import { kindFlag, principalFlag, queueFlag } from '../../name-flags.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class TodoCreate extends SwitchboardCommand {
  static override summary = 'Create a todo on a queue';
  static override description =
    'With --key, creating is idempotent: while a todo with that key is open on the queue, the existing one is returned (and `created` is false).';
  static override examples = [
    '<%= config.bin %> todo create --queue reviews --title "Review PR #482"',
    '<%= config.bin %> todo create --queue ci --title "Flaky test" --body "see run 991" --key ci-991 --assignee bot --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    queue: queueFlag({ required: true, description: 'the queue, e.g. reviews' }),
    title: Flags.string({ required: true, description: 'one line, at most 200 characters' }),
    body: Flags.string({ description: 'longer text' }),
    kind: kindFlag({ description: 'what it is, dotted words (default: manual)' }),
    key: Flags.string({ description: 'idempotency key: at most one open todo per key and queue' }),
    assignee: principalFlag('assignee')({ description: 'the one agent or human who may claim it' }),
  };

  async run() {
    const { flags } = await this.parse(TodoCreate);
    const client = await this.client();
    const { todo, created } = await client.createTodo({
      queue: flags.queue,
      title: flags.title,
      body: flags.body,
      kind: flags.kind,
      key: flags.key,
      assignee: flags.assignee,
    });
    this.log(
      created ? `created ${formatTodoLine(todo)}` : `exists already: ${formatTodoLine(todo)}`,
    );
    return { todo, created };
  }
}
