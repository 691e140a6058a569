import type postgres from 'postgres';
import { displayId, type Actor, type Todo } from '../../ledger/index.js';
import { enqueueComment } from './enqueue-write-back.js';
import { githubMetaOf } from './github-todo-meta.js';

/**
 * A reply on a todo that came from an issue or pull request is posted there as a comment, saying
 * who replied (the App posts it; the text names the agent). Queued in the reply's transaction.
 */
export async function queueReplyComment(
  tx: postgres.TransactionSql,
  todo: Todo,
  text: string,
  actor: Actor,
): Promise<void> {
  const github = githubMetaOf(todo);
  if (!github) return;
  const footer = `\n\n<sub>reply from ${actor.name} (${actor.kind}) on switchboard todo ${displayId(todo.id)}</sub>`;
  await enqueueComment(tx, todo.id, github, text, footer);
}
