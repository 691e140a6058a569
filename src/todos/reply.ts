import type { Actor } from '../data/actor.js';
import { replyToTodo } from '../data/todos/reply-to-todo.js';
import type { Todo } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/** A reply on a todo's history; `afterReply` (a write-back) commits with it or not at all. */
export function reply(
  state: TodoServiceState,
  actor: Actor,
  id: number,
  text: string,
): Promise<{ todo: Todo; text: string }> {
  const { afterReply } = state.hooks;
  return state.sql.begin(async (tx) => {
    const replied = await replyToTodo(tx, actor, id, text);
    await afterReply?.(tx, replied.todo, replied.text, actor);
    return replied;
  });
}
