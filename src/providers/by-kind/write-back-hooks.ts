import type postgres from 'postgres';
import { excerpt } from '../../contract/neutralise-text.js';
import type { TodoHooks } from '../../todos/create-todo-service.js';
import { displayId, type Actor, type Todo } from '../../data/index.js';
import { providerFor, providerOfKind } from './provider-for.js';
import { PROVIDER_KINDS } from '../../contract/todo.js';
import { COMMENT_MAX, enqueueWriteBack } from '../../data/outbox/enqueue-write-back.js';

/** The providers a todo's summary may go back to. */
const WRITES_BACK = PROVIDER_KINDS.filter((kind) => providerFor(kind).writeBack);

/**
 * Replies and summaries back to where a todo came from, for every provider that takes them,
 * queued in the transaction of the reply or the completion: a reply on a todo (`todo reply`, the
 * `reply` tool) is posted on its issue or merge request saying who wrote it; the summary of a
 * todo someone asked for in a comment goes back to that conversation. The todo's source says
 * whose it is; a todo from anywhere else (the CLI, the API) writes back nowhere.
 */
export function writeBackHooks(options: {
  /** Whether the App's credentials are here now (without them nothing goes back to GitHub). */
  github: () => boolean;
}): Required<Pick<TodoHooks, 'afterComplete' | 'afterReply'>> {
  async function queue(
    tx: postgres.TransactionSql,
    todo: Todo,
    text: string,
    line: string,
    only?: { rule: string },
  ): Promise<void> {
    const provider = providerOfKind(todo.source);
    if (!provider?.writeBack || (provider.kind === 'github' && !options.github())) return;
    const destination = provider.writeBack.destinationOf(todo);
    if (!destination || (only && destination.rule !== only.rule)) return;
    const footer = provider.writeBack.footer(line);
    await enqueueWriteBack(tx, {
      todoId: todo.id,
      source: destination.source,
      kind: provider.kind,
      write_back: 'comment',
      target: destination.target,
      // Cut between characters to leave room for who wrote it.
      body: excerpt(text, COMMENT_MAX - footer.length) + footer,
    });
  }
  return {
    afterReply: (tx, todo, text, actor: Actor) =>
      queue(
        tx,
        todo,
        text,
        `reply from ${actor.name} (${actor.kind}) on switchboard todo ${displayId(todo.id)}`,
      ),
    afterComplete: {
      sources: WRITES_BACK,
      run: async (tx, todo, actor) => {
        if (!todo.summary) return;
        await queue(
          tx,
          todo,
          todo.summary,
          `switchboard todo ${displayId(todo.id)}, completed by ${actor.name}`,
          { rule: 'comment' },
        );
      },
    },
  };
}
