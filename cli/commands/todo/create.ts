import * as Flags from '@oclif/core/flags';
import { BODY_MAX, TITLE_MAX } from '../../../src/contract/neutralise-text.js';
import { TEXT_MAX, TITLE_REQUEST_MAX } from '../../../src/contract/text-limits.js';
import { checkTextLength } from '../../check-text-length.js';
import { CommandError, EXIT } from '../../command-error.js';
import { formatTodoLine } from '../../format-todos.js';
import { kindFlag, principalFlag, queueFlag } from '../../name-flags.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

/** The longest link a todo takes (the API's limit). */
const LINK_MAX = 2048;

export default class TodoCreate extends SwitchboardCommand {
  static override summary = 'Create a todo on a queue';
  static override description = `With --key, creating is idempotent: while a todo with that key is open on the queue, the existing one is returned (and \`created\` is false).

--link attaches a link (the todo's url: a pull request, a ticket, a log), shown by \`todo show\`, \`todo list\` and the console. (--url names the server, as on every command.)

A todo keeps the first ${TITLE_MAX} characters of its title and ${BODY_MAX.toLocaleString('en-US')} of its body; longer ones are cut, and the CLI says so on stderr.`;
  static override examples = [
    '<%= config.bin %> todo create --queue reviews --title "Review PR #482"',
    '<%= config.bin %> todo create --queue reviews --title "Review PR #1" --link https://github.com/acme/api/pull/1',
    '<%= config.bin %> todo create --queue ci --title "Flaky test" --body "see run 991" --key ci-991 --assignee bot --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    queue: queueFlag({ required: true, description: 'the queue, e.g. reviews' }),
    title: Flags.string({
      required: true,
      description: `one line, at most ${TITLE_MAX} characters`,
    }),
    body: Flags.string({ description: 'longer text' }),
    link: Flags.string({
      description: 'a link to what the todo is about (its url), e.g. a pull request',
      helpValue: 'URL',
    }),
    kind: kindFlag({ description: 'what it is, dotted words (default: manual)' }),
    key: Flags.string({ description: 'idempotency key: at most one open todo per key and queue' }),
    assignee: principalFlag('assignee')({ description: 'the one agent or human who may claim it' }),
  };

  async run() {
    const { flags } = await this.parse(TodoCreate);
    checkTextLength(flags.title, {
      name: '--title',
      accepted: TITLE_REQUEST_MAX,
      kept: TITLE_MAX,
      advice: 'put the rest in --body',
    });
    checkTextLength(flags.body, {
      name: '--body',
      accepted: TEXT_MAX,
      kept: BODY_MAX,
      advice: 'shorten it, or put the text elsewhere and attach it with --link URL',
    });
    if (flags.link !== undefined) checkLink(flags.link);
    const client = await this.client();
    const { todo, created } = await client.createTodo({
      queue: flags.queue,
      title: flags.title,
      body: flags.body,
      url: flags.link,
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

/** A link people open from the console and the terminal: an http(s) URL, as long as the API takes. */
function checkLink(link: string): void {
  let url: URL | undefined;
  try {
    url = new URL(link);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new CommandError(
      `--link must be an http(s) URL, e.g. https://github.com/acme/api/pull/1, not ${JSON.stringify(link.slice(0, 80))}`,
      EXIT.usage,
    );
  }
  if (link.length > LINK_MAX) {
    throw new CommandError(
      `--link is ${link.length.toLocaleString('en-US')} characters; a todo's link is at most ${LINK_MAX.toLocaleString('en-US')}`,
      EXIT.usage,
    );
  }
}
