import type postgres from 'postgres';
import { displayId, type Actor, type Todo } from '../../ledger/index.js';
import { enqueueComment } from './enqueue-write-back.js';
import { githubMetaOf } from './github-todo-meta.js';

/**
 * When a todo someone asked for in a comment is completed with a summary, the summary goes back
 * to that conversation as a comment. Queued in the completion's own transaction: if the
 * completion commits, the comment will be posted (retried until GitHub takes it).
 */
export async function queueSummaryComment(
  tx: postgres.TransactionSql,
  todo: Todo,
  actor: Actor,
): Promise<void> {
  const github = githubMetaOf(todo);
  if (!github || github.rule !== 'comment' || !todo.summary) return;
  const footer = `\n\n<sub>switchboard todo ${displayId(todo.id)}, completed by ${actor.name}</sub>`;
  await enqueueComment(tx, todo.id, github, todo.summary, footer);
}
