import type { Db } from '../db/open-database.js';
import type { Actor } from './actor.js';

export const TODO_STATES = [
  'pending',
  'claimed',
  'done',
  'failed',
  'canceled',
  'quarantined',
] as const;
export type TodoState = (typeof TODO_STATES)[number];

export const TODO_SOURCES = ['github', 'cli', 'mcp', 'channel', 'api'] as const;
export type TodoSource = (typeof TODO_SOURCES)[number];

export type Verdict = 'allow' | 'deny';

/** The todo as users see it (DESIGN §4): snake_case keys, exactly what JSON outputs carry. */
export interface Todo {
  id: number;
  queue: string;
  kind: string;
  title: string;
  body: string | null;
  state: TodoState;
  source: TodoSource;
  url: string | null;
  attributed_to: string;
  assignee: string | null;
  idempotency_key: string | null;
  claimed_by: string | null;
  lease_expires_at: Date | null;
  /** Failed todos with attempts left: when the next attempt may start. */
  retry_at: Date | null;
  attempt: number;
  max_attempts: number;
  result: unknown;
  summary: string | null;
  requested_by: string | null;
  request_id: string | null;
  about_todo_id: number | null;
  expires_at: Date | null;
  verdict: Verdict | null;
  decided_by: string | null;
  decided_at: Date | null;
  meta: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

/** A todo just claimed, with the lease token its holder must present from now on. */
export interface ClaimedTodo extends Todo {
  lease_token: string;
}

/** One entry of a todo's history. */
export interface TodoEvent {
  id: number;
  at: Date;
  actor_kind: 'human' | 'agent' | 'system';
  actor: string;
  via: string;
  action: string;
  data: Record<string, unknown> | null;
}

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

export const displayId = (id: number) => `#${id}`;
