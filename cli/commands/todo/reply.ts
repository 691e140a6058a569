import * as Flags from '@oclif/core/flags';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdArg } from '../../todo-id-arg.js';

export default class TodoReply extends SwitchboardCommand {
  static override summary =
    "Reply on a todo: a message in its history (and on GitHub, for a provider's todo)";
  static override examples = ['<%= config.bin %> todo reply 42 --text "use the staging database"'];
  static override enableJsonFlag = true;
  static override args = { id: todoIdArg };
  static override flags = { text: Flags.string({ required: true, description: 'the reply' }) };

  async run() {
    const { args, flags } = await this.parse(TodoReply);
    const client = await this.client();
    const { todo, text } = await client.reply(args.id, flags.text);
    this.log(`replied on #${todo.id}`);
    return { todo, text };
  }
}
