import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import { allowsNotice, recordEvent, systemActor, verdictVia } from '../../data/index.js';
import type { ApprovalShown } from './approval-message.js';

/**
 * Queues the approval's message, once however many processes hear its wake: for a pending
 * approval whose assignee linked a Slack user (before it was asked) in the workspace of an
 * installed app whose token Slack has not refused, and keeps Slack on. The message row and the
 * outbox row that posts it are one statement; the outbox renders the message when it sends it.
 */
export async function queueApprovalMessage(db: Db, todoId: number): Promise<boolean> {
  const rows = await db`
    with message as (
      insert into slack_messages (todo_id, slack_user_id)
      select t.id, l.slack_user_id from todos t
      join principals p on p.name = t.assignee and p.kind = 'human' and p.revoked_at is null
      join slack_links l on l.principal_id = p.id and l.linked_at < t.created_at
      join slack_apps a on a.team_id = l.team_id and a.bot_token is not null and a.token_refused_at is null
      where t.id = ${todoId} and t.kind = 'approval' and t.state = 'pending' and t.expires_at > now()
        and ${allowsNotice(db, 'slack')}
      on conflict (todo_id) do nothing
      returning todo_id
    )
    insert into outbox (todo_id, source, kind, write_back, target, body)
    select todo_id, 'slack', 'slack', 'message', jsonb_build_object('todo_id', todo_id),
           'approval #' || todo_id
    from message
    returning id`;
  return rows.length > 0;
}

/**
 * The approvals among `ids` (all, when null) whose message was queued and that have ended — a
 * verdict, an expiry, a cancel — are closed, and the update that shows it is queued: once, by the
 * process whose update lands.
 */
export async function queueMessageUpdates(db: Db, ids: number[] | null): Promise<number[]> {
  const rows = await db<{ todo_id: number }[]>`
    with closed as (
      update slack_messages m set closed_at = now()
      from todos t
      where t.id = m.todo_id and m.closed_at is null
        and (t.state <> 'pending' or t.expires_at <= now())
        and (${ids}::bigint[] is null or m.todo_id = any(${ids}::bigint[]))
      returning m.todo_id
    )
    insert into outbox (todo_id, source, kind, write_back, target, body)
    select todo_id, 'slack', 'slack', 'message_update', jsonb_build_object('todo_id', todo_id),
           'approval #' || todo_id || ' ended'
    from closed
    returning todo_id`;
  return rows.map((row) => row.todo_id);
}

/** Queues an update of the approval's message whether or not one was queued before. */
export async function queueMessageUpdate(db: Db, todoId: number): Promise<void> {
  await db`
    with closed as (
      update slack_messages set closed_at = coalesce(closed_at, now())
      where todo_id = ${todoId} returning todo_id
    )
    insert into outbox (todo_id, source, kind, write_back, target, body)
    select todo_id, 'slack', 'slack', 'message_update', jsonb_build_object('todo_id', todo_id),
           'approval #' || todo_id || ' ended'
    from closed`;
}

/** Pending approvals whose message was never queued: wakes missed while not listening. */
export async function missedApprovals(sql: postgres.Sql): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`
    select t.id from todos t
    join principals p on p.name = t.assignee and p.kind = 'human' and p.revoked_at is null
    join slack_links l on l.principal_id = p.id and l.linked_at < t.created_at
    where t.kind = 'approval' and t.state = 'pending' and t.expires_at > now()
      and not exists (select 1 from slack_messages m where m.todo_id = t.id)
    order by t.id limit 100`;
  return rows.map((row) => row.id);
}

export interface MessageRecord {
  slack_user_id: string;
  channel_id: string | null;
  ts: string | null;
  /** Where the human chose to get approvals, as their link says now (null: a direct message). */
  chosen_channel: string | null;
}

export async function messageOf(db: Db, todoId: number): Promise<MessageRecord | null> {
  const [row] = await db<MessageRecord[]>`
    select m.slack_user_id, m.channel_id, m.ts, l.channel_id as chosen_channel
    from slack_messages m
    left join slack_links l on l.slack_user_id = m.slack_user_id
    where m.todo_id = ${todoId}`;
  return row ?? null;
}

export async function recordPosted(
  db: Db,
  todoId: number,
  channel: string,
  ts: string,
): Promise<void> {
  await db`
    update slack_messages set channel_id = ${channel}, ts = ${ts}, posted_at = now()
    where todo_id = ${todoId}`;
}

/** The approval as its message shows it, with where its verdict came from. */
export async function approvalShown(db: Db, todoId: number): Promise<ApprovalShown | null> {
  const [row] = await db<ApprovalShown[]>`
    select t.id, t.title, t.body, t.requested_by, t.assignee, t.state::text as state, t.expires_at,
           t.verdict::text as verdict, t.decided_by, t.decided_at, t.summary,
           ${verdictVia(db, db`t.id`)} as decided_via
    from todos t where t.id = ${todoId} and t.kind = 'approval'`;
  return row ?? null;
}

const NOTICES = systemActor('slack', 'delivery');

/** One line of the approval's history: what the bot sent, and how it went (as Web Push records its pushes). */
export async function recordNotice(
  db: Db,
  todoId: number,
  data: { principal: string | null; outcome: string; channel?: string | null },
): Promise<void> {
  await recordEvent(db, {
    todoId,
    actor: NOTICES,
    action: 'notified',
    data: {
      principal: data.principal,
      path: 'slack',
      channel: data.channel ?? null,
      outcome: data.outcome,
    },
  });
}
