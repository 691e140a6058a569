import type { Db } from '../../platform/db/open-database.js';
import { visibleTo, type Actor } from '../actor.js';
import { conflict, forbidden, notFound } from '../ledger-error.js';
import { displayId, insertEvent, todoColumns, type Todo, type Verdict } from './todo.js';
import { assertStorable } from '../validate.js';
import { excerpt } from '../../contract/neutralise-text.js';
import { secretsInsert, withheldData, withholderFor, type SecretOptions } from './todo-secrets.js';

/**
 * Records a human's verdict on an approval. Only a human decides — the approval's assignee or an
 * admin — and the first verdict wins: the update matches only a pending, unexpired approval, so
 * of two concurrent deciders exactly one succeeds and the other is told who decided.
 */
export async function decideApproval(
  db: Db,
  actor: Actor,
  id: number,
  verdict: Verdict,
  given?: string | null,
  options: SecretOptions = {},
): Promise<Todo> {
  if (actor.kind !== 'human')
    throw forbidden('only a human may approve or deny; agents never decide');
  assertStorable({ note: given });
  // The note reaches the agent that asked, and may come from a GitHub comment: withheld there too.
  const withholder = withholderFor(options);
  const note = given == null ? given : withholder.withhold(given);
  const data = { ...(note ? { note: excerpt(note) } : {}), ...withheldData(withholder) };
  const mayDecide = actor.principal.is_admin ? db`true` : db`t.assignee = ${actor.name}`;
  const [todo] = await db<Todo[]>`
    with t as (
      update todos t set state = 'done', verdict = ${verdict}, decided_by = ${actor.name}, decided_at = now(),
                         summary = ${note ?? null}, updated_at = now()
      where t.id = ${id} and t.kind = 'approval' and t.state = 'pending' and t.expires_at > now()
        and ${mayDecide} and ${visibleTo(db, actor)}
      returning t.*
    ), e as (${insertEvent(db, actor, verdict === 'allow' ? 'approved' : 'denied', Object.keys(data).length ? data : null)})${secretsInsert(db, withholder, options)}
    select ${todoColumns(db)} from t`;
  if (todo) return todo;

  const [current] = await db<
    Pick<
      Todo,
      | 'kind'
      | 'state'
      | 'assignee'
      | 'verdict'
      | 'decided_by'
      | 'decided_at'
      | 'expires_at'
      | 'summary'
    >[]
  >`
    select kind, state, assignee, verdict, decided_by, decided_at, expires_at, summary
    from todos t where t.id = ${id} and ${visibleTo(db, actor)}`;
  const ref = `todo ${displayId(id)}`;
  if (!current) throw notFound(`${ref} not found`);
  if (current.kind !== 'approval') throw conflict(`${ref} is not an approval`);
  // Another human's approval is not theirs to see, let alone decide: as if it did not exist.
  if (current.assignee !== actor.name && !actor.principal.is_admin)
    throw notFound(`${ref} not found`);
  if (current.verdict) {
    throw conflict(
      `${ref} was already decided: ${current.verdict} by ${current.decided_by} at ${current.decided_at?.toISOString()}`,
    );
  }
  // Canceled: by a human, by the sweeper once it expired, or because the session that asked went
  // away (its summary says which) — not necessarily expired.
  if (current.state === 'canceled') {
    throw conflict(
      `${ref} was canceled${current.summary ? ` (${current.summary})` : ''}; it takes no verdict now`,
    );
  }
  throw conflict(`${ref} expired without a verdict`);
}
