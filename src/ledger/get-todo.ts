import type { Db } from '../db/open-database.js';
import { visibleTo, type Actor } from './actor.js';
import { notFound } from './ledger-error.js';
import { displayId, todoColumns, type Todo, type TodoEvent } from './todo.js';

export async function getTodo(db: Db, actor: Actor, id: number): Promise<Todo> {
  const [todo] = await db<Todo[]>`
    select ${todoColumns(db)} from todos t where t.id = ${id} and ${visibleTo(db, actor)}`;
  if (!todo) throw notFound(`todo ${displayId(id)} not found`);
  return todo;
}

/**
 * The todo and its history in time order: by when each event was written (`at`, migration 0009),
 * then by id for events written at the same instant.
 */
export async function getTodoWithHistory(
  db: Db,
  actor: Actor,
  id: number,
): Promise<{ todo: Todo; history: TodoEvent[] }> {
  const todo = await getTodo(db, actor, id);
  const history = await db<TodoEvent[]>`
    select id, at, actor_kind, actor, via, action, data from todo_events where todo_id = ${id} order by at, id`;
  return { todo, history };
}
