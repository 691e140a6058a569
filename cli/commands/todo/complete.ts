import { readFile } from 'node:fs/promises';
import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../../command-error.js';
import { formatTodoLine } from '../../format-todos.js';
import { leaseTokenFlag, withLeaseToken } from '../../lease-token.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class TodoComplete extends SwitchboardCommand {
  static override summary = 'Complete a todo you hold, with a summary and an optional JSON result';
  static override examples = [
    '<%= config.bin %> todo complete 42 --summary "LGTM, two nits left as comments"',
    '<%= config.bin %> todo complete 42 --result \'{"approved":true}\'',
    '<%= config.bin %> todo complete 42 --summary done --result @result.json --json',
  ];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };
  static override flags = {
    summary: Flags.string({ description: 'what was done, for people (and GitHub write-back)' }),
    result: Flags.string({
      description: 'a JSON value, or @FILE to read it from a file',
      helpValue: 'JSON|@FILE',
    }),
    'lease-token': leaseTokenFlag,
  };

  async run() {
    const { args, flags } = await this.parse(TodoComplete);
    const result = flags.result === undefined ? undefined : await readJson(flags.result);
    const client = await this.client();
    const { todo } = await withLeaseToken(
      client,
      args.id,
      flags['lease-token'],
      { ends: true },
      (token) => client.complete(args.id, token, { summary: flags.summary, result }),
    );
    this.log(formatTodoLine(todo));
    return { todo };
  }
}

async function readJson(value: string): Promise<unknown> {
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = await readFile(value.slice(1), 'utf8');
    } catch (error) {
      throw new CommandError(
        `--result: cannot read ${value.slice(1)} (${(error as NodeJS.ErrnoException).code})`,
        EXIT.usage,
      );
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CommandError(
      `--result must be JSON (or @FILE holding JSON): ${JSON.stringify(text.slice(0, 40))} is not`,
      EXIT.usage,
    );
  }
}
