import type { Db } from '../db/open-database.js';
import type { Actor } from './actor.js';
import { updateLeasedTodo } from './lease.js';
import type { Todo } from './todo.js';
import { assertStorable } from './validate.js';
import { excerpt } from '../contract/neutralise-text.js';

export interface Completion {
  summary?: string | null | undefined;
  /** Any JSON value the worker wants to leave behind. */
  result?: unknown;
}

export async function completeTodo(
  db: Db,
  actor: Actor,
  id: number,
  leaseToken: string,
  completion: Completion = {},
): Promise<Todo> {
  const summary = completion.summary ?? null;
  const result = completion.result ?? null;
  assertStorable({ summary, result });
  return updateLeasedTodo(db, actor, id, leaseToken, {
    set: db`state = 'done', available_at = null, lease_token = null,
            summary = ${summary}, result = ${result === null ? null : db.json(result as never)}`,
    action: 'completed',
    data: summary === null ? null : { summary: excerpt(summary) },
  });
}
