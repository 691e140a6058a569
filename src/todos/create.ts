import type { Actor } from '../data/actor.js';
import { createTodo, type CreatedTodo, type NewTodo } from '../data/todos/create-todo.js';
import { sourceOf, writeOptions, type TodoServiceState } from './todo-service-state.js';

/** A todo from a person or an agent; a new one's wake is announced after its commit. */
export async function create(
  state: TodoServiceState,
  actor: Actor,
  input: Omit<NewTodo, 'source'>,
): Promise<CreatedTodo> {
  const { wakeId, ...created } = await createTodo(
    state.sql,
    actor,
    { ...input, source: sourceOf(actor) },
    writeOptions(state),
  );
  if (created.created && wakeId) state.hooks.announce?.([created.todo], wakeId);
  return created;
}
