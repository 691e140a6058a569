import * as Flags from '@oclif/core/flags';
import type { ApiClient, Todo } from '../../src/client/api-client.js';
import { openWakeStream, type WakeStream } from '../../src/client/open-wake-stream.js';
import { describeInboxItem } from '../inbox-lines.js';
import { SwitchboardCommand } from '../switchboard-command.js';

/** More than anyone works through at once; the oldest beyond it wait for the next look. */
const INBOX_LIMIT = 200;

export default class Inbox extends SwitchboardCommand {
  static override summary = 'What waits for you: approvals to decide, todos assigned to you';
  static override description = `In a terminal it is interactive: move with the arrows or j/k; the selected item is shown in full (an approval's body is the input preview of what is asked); a or d allows or denies an approval, with an optional note; r reads it again; q quits. With --watch it follows the server's event stream and is current within a second: a new item, a verdict given elsewhere, a todo claimed or done.

When stdout is not a terminal it prints one line per item (--watch: then one per item as it arrives, until interrupted). --json prints {"todos": […]} once.`;
  static override examples = [
    '<%= config.bin %> inbox',
    '<%= config.bin %> inbox --watch',
    '<%= config.bin %> inbox --json',
    '<%= config.bin %> inbox --watch | tee -a inbox.log',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    watch: Flags.boolean({
      description: 'stay open, updated as work for you arrives',
      exclusive: ['json'],
    }),
  };

  async run(): Promise<{ todos: Todo[] } | void> {
    const { flags } = await this.parse(Inbox);
    const client = await this.client();
    const load = () => loadInbox(client);
    const todos = await load();
    if (this.jsonEnabled()) return { todos };

    // Every change the server sees, not only the doorbells rung for this human: a verdict given
    // elsewhere (the console, another terminal) or a todo claimed by someone rings nobody here.
    const wakes = flags.watch
      ? openWakeStream(await this.credentials(), undefined, { changes: true })
      : undefined;
    try {
      if (process.stdout.isTTY && process.stdin.isTTY) {
        await this.interactive(client, todos, wakes);
      } else {
        await this.plain(todos, wakes, load);
      }
    } finally {
      wakes?.close();
    }
  }

  private async interactive(client: ApiClient, todos: Todo[], wakes: WakeStream | undefined) {
    // Loaded here only: the other commands never pay for the terminal library.
    const { inboxPrompt } = await import('../inbox-prompt.js');
    const { principal } = await client.whoami();
    const stopWatching = new AbortController();
    try {
      await inboxPrompt(
        {
          me: principal.name,
          todos,
          live: wakes !== undefined,
          load: () => loadInbox(client),
          subscribe(onChange, onProblem) {
            if (wakes) {
              follow(
                wakes,
                () => loadInbox(client),
                onChange,
                stopWatching.signal,
                onProblem,
              ).catch((error: Error) => onProblem(`not live any more: ${error.message}`));
            }
            return () => stopWatching.abort();
          },
          async decide(id, verdict, note) {
            const { todo } =
              verdict === 'allow' ? await client.approve(id, note) : await client.deny(id, note);
            return `#${todo.id} ${todo.verdict === 'allow' ? 'allowed' : 'denied'}${note ? ` (note: ${note})` : ''}`;
          },
        },
        // Leave the terminal as it was: the inbox is a view, not a record.
        { clearPromptOnDone: true },
      );
    } catch (error) {
      // Ctrl-C: the prompt is closed and the terminal restored; that is how one leaves.
      if ((error as Error).name !== 'ExitPromptError') throw error;
    } finally {
      stopWatching.abort();
    }
  }

  private async plain(todos: Todo[], wakes: WakeStream | undefined, load: () => Promise<Todo[]>) {
    for (const todo of todos) this.log(describeInboxItem(todo).line);
    if (!wakes) {
      if (!todos.length) this.log('nothing waits for you');
      return;
    }
    const seen = new Set(todos.map((todo) => todo.id));
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
    process.stderr.write('watching for more — Ctrl-C stops\n');
    try {
      await follow(
        wakes,
        load,
        (fresh) => {
          for (const todo of fresh) {
            if (seen.has(todo.id)) continue;
            seen.add(todo.id);
            this.log(describeInboxItem(todo).line);
          }
        },
        stop.signal,
        (problem) => process.stderr.write(`${problem}\n`),
      );
    } finally {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    }
  }
}

/** Approvals first, soonest to expire first; then the rest, newest first. */
async function loadInbox(client: ApiClient): Promise<Todo[]> {
  const { todos } = await client.listTodos({ mine: true, limit: INBOX_LIMIT });
  const approvals = todos
    .filter((todo) => todo.kind === 'approval')
    .sort((a, b) => Date.parse(a.expires_at ?? '') - Date.parse(b.expires_at ?? ''));
  return [...approvals, ...todos.filter((todo) => todo.kind !== 'approval')];
}

/**
 * Reads the inbox once the stream listens, and again every time it rings (on every change the
 * server sees), until `signal`: as with claiming, what changed before `ready` is in the first
 * read, the rest rings. Rings during a read make one more read, not one each.
 */
async function follow(
  wakes: WakeStream,
  load: () => Promise<Todo[]>,
  onChange: (todos: Todo[]) => void,
  signal: AbortSignal,
  onProblem: (message: string) => void,
): Promise<void> {
  try {
    await wakes.ready;
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
  for (let attempt = 0; !signal.aborted; attempt++) {
    const seen = wakes.rings;
    try {
      onChange(await load());
      attempt = 0;
    } catch (error) {
      if (signal.aborted) return;
      // The server went away for a moment: the stream reconnects, and rings once it is back.
      onProblem(`cannot read the inbox: ${(error as Error).message}`);
    }
    await wakes.waitPast(seen, { deadline: Infinity, attempt, signal });
  }
}
