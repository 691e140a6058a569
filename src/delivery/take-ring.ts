import type postgres from 'postgres';

export type SessionPath = 'channel' | 'mcp_log' | 'sse';

/**
 * The rungs of the delivery ladder, best first, by what a session can do with a doorbell: a
 * Claude Code channel puts it in front of the model; an event stream (worker, `todo claim
 * --wait`, a web page) is a program that acts on it; an MCP log notification may only be logged.
 */
export const SESSION_RANKS: readonly SessionPath[] = ['channel', 'sse', 'mcp_log'];

/** Who a ring goes to: a live session on some server process, or a principal's webhook. */
export type RingTarget =
  | {
      kind: 'session';
      session_id: string;
      process_id: string;
      path: SessionPath;
      principal: string;
    }
  | { kind: 'webhook'; principal: string; url: string; secret: string };

export interface RingedTodo {
  id: number;
  queue: string;
  kind: string;
  title: string;
  url: string | null;
}

export interface Ring {
  todo: RingedTodo;
  /** How many times this todo has been rung, this one included. */
  rings: number;
  /** Null: nobody who may claim it is attached or reachable; the todo waits to be pulled. */
  target: RingTarget | null;
}

export interface RingRequest {
  todoId: number;
  /**
   * `wake`: a new wake (a transaction id) rings at once, once however many processes hear it.
   * `due`: a re-ring, only if its time has come. `retry`: the last target failed; ring again now.
   */
  reason: { wake: string } | 'due' | 'retry';
  /** Delays before each re-ring, in ms; the last repeats. */
  schedule: number[];
  /** Sessions not refreshed for this long belong to a dead process. */
  sessionTtlMs: number;
}

/**
 * Takes the next ring of a claimable todo and picks whom it goes to, in one transaction: of all
 * processes that hear a wake, the one whose upsert matches rings; the others get null. The target
 * is, among the live sessions meant to work the todo (an agent of its queue, or its assignee), of
 * the best rank on the ladder (SESSION_RANKS), the least recently rung, preferring one other than
 * the last rung; with none, the least recently rung webhook.
 */
export async function takeRing(sql: postgres.Sql, request: RingRequest): Promise<Ring | null> {
  const { todoId, reason, schedule, sessionTtlMs } = request;
  const wakeId = typeof reason === 'object' ? reason.wake : null;
  return sql.begin(async (tx) => {
    const nextRings = wakeId === null ? tx`r.rings + 1` : tx`1`;
    const [taken] = await tx<
      (RingedTodo & { assignee: string | null; rings: number; last_session: string | null })[]
    >`
      with todo as (
        select t.id, t.queue, t.kind, t.title, t.url, t.assignee from todos t
        where t.id = ${todoId} and t.state = 'pending' and t.available_at <= now() and t.kind <> 'approval'
      ), taken as (
        insert into todo_rings as r (todo_id, rings, next_ring_at, wake_id)
        select id, 1, now() + make_interval(secs => ${schedule[0]! / 1000}), ${wakeId} from todo
        on conflict (todo_id) do update set
          -- a new wake starts the schedule over; a re-ring or a failover moves along it
          rings = ${nextRings},
          next_ring_at = now() + make_interval(secs => (${schedule}::float8[])[least(${nextRings}, ${schedule.length})] / 1000),
          wake_id = coalesce(excluded.wake_id, r.wake_id)
        where ${
          reason === 'retry'
            ? tx`true`
            : reason === 'due'
              ? tx`r.next_ring_at <= now()`
              : tx`r.wake_id is distinct from excluded.wake_id`
        }
        returning r.rings, r.last_session
      )
      select todo.*, taken.rings, taken.last_session from todo, taken`;
    if (!taken) return null;
    const { assignee, rings, last_session, ...todo } = taken;

    // The ladder (DESIGN §6): of the live sessions meant to work the todo, only those of the
    // best rank are candidates — a Claude Code channel puts the doorbell in front of the model,
    // an event stream is a program that acts on it, an MCP log notification may only be logged.
    // Within that rank, the least recently rung, preferring one other than the last rung.
    // A session being rung for another todo this instant is passed over for a free one of the
    // same rank; only when every one of them is busy does the ring wait for one, rather than fall
    // to a lower rank or find "nobody" and store a wake that a consumer was there to hear.
    const pickSession = (waitForBusy: boolean) => tx<(RingTarget & { kind: 'session' })[]>`
      with eligible as (
        select s.id, array_position(${SESSION_RANKS as string[]}::text[], s.path) as rank from consumer_sessions s
        join principals p on p.name = s.principal and p.revoked_at is null
        join consumer_processes pr on pr.id = s.process_id
        where pr.seen_at > now() - make_interval(secs => ${sessionTtlMs / 1000})
          -- an agent is rung for its queues; a human only for work assigned to them, or on a
          -- stream that asked for a queue (an idle human session must not take agents' rings)
          and (${todo.queue} = any(p.queues) or p.name = ${assignee} or (p.kind = 'human' and s.queues is not null))
          and (${assignee}::text is null or p.name = ${assignee})
          and (s.queues is null or ${todo.queue} = any(s.queues))
      ), chosen as (
        select s.id, s.process_id, s.path, s.principal from consumer_sessions s
        join eligible e on e.id = s.id
        where e.rank = (select min(rank) from eligible)
        order by s.id is not distinct from ${last_session}::uuid, s.last_rung_at nulls first, s.connected_at
        limit 1
        for update of s ${waitForBusy ? tx`` : tx`skip locked`}
      ), marked as (
        update consumer_sessions s set last_rung_at = now() from chosen where s.id = chosen.id
      ), ring as (
        update todo_rings set last_session = chosen.id from chosen where todo_id = ${todo.id}
      )
      select 'session' as kind, id as session_id, process_id, path, principal from chosen`;
    let [session] = await pickSession(false);
    if (!session) [session] = await pickSession(true);
    // The ring row and last_rung_at only steer who is rung next; if a crash loses them, the todo
    // is simply rung again (catch-up, re-ring). So this commit need not wait for the disk, and
    // the push it leads to does not wait behind a second flush.
    if (session) {
      await tx`set local synchronous_commit = off`;
      return { todo, rings, target: session };
    }

    const [webhook] = await tx<(RingTarget & { kind: 'webhook' })[]>`
      with chosen as (
        select w.principal, w.url, w.secret from consumer_webhooks w
        join principals p on p.name = w.principal and p.revoked_at is null
        where (${todo.queue} = any(p.queues) or p.name = ${assignee})
          and (${assignee}::text is null or p.name = ${assignee})
        order by w.last_rung_at nulls first
        limit 1
        for update of w skip locked
      ), marked as (
        update consumer_webhooks w set last_rung_at = now() from chosen where w.principal = chosen.principal
      )
      select 'webhook' as kind, principal, url, secret from chosen`;
    if (webhook) {
      await tx`set local synchronous_commit = off`;
      return { todo, rings, target: webhook };
    }
    // Nobody to ring: the todo waits, is offered in the digest of the next consumer to attach, and
    // is rung again on schedule. Recorded once per wake, not on every re-ring.
    if (rings === 1) {
      await tx`
        insert into todo_events (todo_id, actor_kind, actor, via, action, data)
        values (${todo.id}, 'system', 'dispatcher', 'delivery', 'wake_stored', ${tx.json({ reason: 'no consumer attached' })})`;
    }
    return { todo, rings, target: null };
  });
}
