import type { Db } from '../../platform/db/open-database.js';
import { visibleTo, type Actor } from '../actor.js';
import { invalid, notFound } from '../ledger-error.js';
import { displayId, todoColumns, type Todo } from './todo.js';
import { assertStorable } from '../validate.js';

export const REPLY_MAX = 16_384;

/**
 * Records a reply on a todo's history (a message from whoever works it, e.g. to the human who
 * asked). The todo itself does not change; provider adapters may carry the reply further.
 */
export async function replyToTodo(
  db: Db,
  actor: Actor,
  id: number,
  text: string,
): Promise<{ todo: Todo; text: string }> {
  // Stored exactly as written (it is the worker's own text, shown back byte for byte); only what
  // PostgreSQL cannot store, and emptiness, are refused.
  assertStorable({ text });
  if (text.trim() === '') throw invalid('text is empty');
  if (text.length > REPLY_MAX) throw invalid(`text is too long (at most ${REPLY_MAX} characters)`);
  const reply = text;
  const [todo] = await db<Todo[]>`
    with t as (select * from todos t where t.id = ${id} and ${visibleTo(db, actor)}),
    e as (
      insert into todo_events (todo_id, actor_kind, actor, via, action, data)
      select t.id, ${actor.kind}, ${actor.name}, ${actor.via}, 'replied', ${db.json({ text: reply })} from t
    )
    select ${todoColumns(db)} from t`;
  if (!todo) throw notFound(`todo ${displayId(id)} not found`);
  return { todo, text: reply };
}
