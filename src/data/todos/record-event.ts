import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import type { Actor } from '../actor.js';

/** One line of a todo's history, by someone other than the todo's own state change. */
export interface TodoEventInput {
  todoId: number;
  actor: Actor;
  action: string;
  data?: Record<string, unknown> | null;
}

/**
 * The statement that appends one history row, as a fragment: for a caller whose row must be
 * written by a larger statement (one round trip, one transaction, one commit), inside a CTE.
 * `when` decides in that statement whether the row is written at all.
 */
export function eventInsert(
  db: Db,
  { todoId, actor, action, data = null }: TodoEventInput,
  when: postgres.Fragment = db`true`,
) {
  return db`
    insert into todo_events (todo_id, actor_kind, actor, via, action, data)
    select ${todoId}, ${actor.kind}, ${actor.name}, ${actor.via}, ${action},
           ${data === null ? null : db.json(data as never)}
    where ${when}`;
}

/**
 * Appends one row to a todo's history: what the delivery paths did about it (rung, notified,
 * stored), which changes nothing in the todo itself.
 */
export async function recordEvent(db: Db, event: TodoEventInput): Promise<void> {
  await db`${eventInsert(db, event)}`;
}

/**
 * Whether a todo's history has a row of one of `actions` whose `data[key]` is `equals`, as an
 * SQL boolean: `todo` and `equals` may be columns of the caller's statement.
 */
export function eventRecorded(
  db: Db,
  {
    todo,
    actions,
    key,
    equals,
  }: {
    todo: number | postgres.Fragment;
    actions: string[];
    key: string;
    equals: string | postgres.Fragment;
  },
) {
  return db`exists (
    select 1 from todo_events e
    where e.todo_id = ${todo} and e.action = any(${actions}::text[]) and e.data ->> ${key} = ${equals})`;
}

/**
 * Where an approval's verdict came from (`slack`, `cli`, `web`, `github`, …) as an SQL value,
 * read from its history: `todo` may be a column of the caller's statement.
 */
export function verdictVia(db: Db, todo: number | postgres.Fragment) {
  return db`(
    select e.via from todo_events e
    where e.todo_id = ${todo} and e.action in ('approved', 'denied')
    order by e.id desc limit 1)`;
}
