import type { HeldBack } from '../../contract/queue.js';
import type { Db } from '../../platform/db/open-database.js';
import { visibleTo, type Actor } from '../actor.js';
import { notFound } from '../ledger-error.js';
import { readQueues } from '../queues/read-queues.js';
import { displayId, todoColumns, type Todo, type TodoEvent } from './todo.js';

export async function getTodo(db: Db, actor: Actor, id: number): Promise<Todo> {
  const [todo] = await db<Todo[]>`
    select ${todoColumns(db)} from todos t where t.id = ${id} and ${visibleTo(db, actor)}`;
  if (!todo) throw notFound(`todo ${displayId(id)} not found`);
  return todo;
}

/**
 * The todo and its history in time order: by when each event was written (`at`, migration 0009),
 * then by id for events written at the same instant. `held_back`: why a todo that could be
 * claimed now waits all the same (its queue is at a limit), and until when; else null.
 */
export async function getTodoWithHistory(
  db: Db,
  actor: Actor,
  id: number,
): Promise<{ todo: Todo; history: TodoEvent[]; held_back: HeldBack | null }> {
  // Read together, not one after the other: if the todo is not the actor's to see, the other two
  // reads are dropped with the refusal.
  const [todo, history, held_back] = await Promise.all([
    getTodo(db, actor, id),
    db<TodoEvent[]>`
      select id, at, actor_kind, actor, via, action, data from todo_events where todo_id = ${id} order by at, id`,
    heldBack(db, id),
  ]);
  return { todo, history, held_back };
}

/** Null unless the todo is claimable but for its queue's limits. */
async function heldBack(db: Db, id: number): Promise<HeldBack | null> {
  const [limited] = await db<{ queue: string }[]>`
    select t.queue from todos t
    where t.id = ${id} and t.available_at <= now() and t.attempt < t.max_attempts
      and t.kind <> 'approval' and t.state <> 'quarantined'
      and exists (select from queue_limits l where l.queue = t.queue)`;
  if (!limited) return null;
  const [queue] = await readQueues(db, [limited.queue], { countWaiting: false });
  return queue!.held_back;
}
