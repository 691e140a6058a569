import type { Db } from '../../platform/db/open-database.js';
import type { Actor } from '../actor.js';

export * from '../../contract/todo.js';

/** A claim's lease unless the claimer asks for another, and the longest it may ask for. */
export const LEASE_DEFAULT_SECONDS = 300;
export const LEASE_MAX_SECONDS = 86_400;

/**
 * The public columns of a row of `todos` aliased `t`. `available_at` is one column inside; to
 * users it is the lease expiry of a claimed todo or the retry time of a failed one.
 */
export function todoColumns(db: Db) {
  return db`
    t.id, t.queue, t.kind, t.title, t.body, t.state, t.source, t.url, t.attributed_to, t.assignee,
    t.idempotency_key, t.claimed_by,
    case when t.state = 'claimed' then t.available_at end as lease_expires_at,
    case when t.state = 'failed' then t.available_at end as retry_at,
    t.attempt, t.max_attempts, t.result, t.summary, t.requested_by, t.request_id, t.about_todo_id,
    t.expires_at, t.verdict, t.decided_by, t.decided_at, t.meta, t.created_at, t.updated_at`;
}

/**
 * The event row for the todo(s) produced by the CTE named `t`, so that a change and its trail
 * are written by the same statement.
 */
export function insertEvent(
  db: Db,
  actor: Actor,
  action: string,
  data: Record<string, unknown> | null = null,
) {
  return db`
    insert into todo_events (todo_id, actor_kind, actor, via, action, data)
    select t.id, ${actor.kind}, ${actor.name}, ${actor.via}, ${action}, ${data === null ? null : db.json(data as never)}
    from t`;
}
