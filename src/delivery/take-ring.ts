import type postgres from 'postgres';
import { eventInsert, readQueues, systemActor } from '../ledger/index.js';

export type SessionPath = 'channel' | 'mcp_log' | 'sse';

/** Who rings, notifies and stores wakes, in a todo's history. */
export const DISPATCHER = systemActor('dispatcher', 'delivery');

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
  /**
   * Null: nobody who may claim it is attached or reachable, or its queue's limits hold it back;
   * the todo waits to be pulled, or rung again.
   */
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
 * Takes the next ring of a claimable todo and picks whom it goes to. Of all processes that hear
 * a wake, the one whose upsert of the ring row matches rings; the others get null. The target
 * is, among the live sessions meant to work the todo (an agent of its queue, or its assignee), of
 * the best rank on the ladder (SESSION_RANKS), the least recently rung, preferring one other than
 * the last rung; with none, the least recently rung webhook; with none either, nobody (the wake
 * is stored).
 *
 * Every wake of every todo comes through here, so it is one transaction of two statements (a
 * third only when every session of the best rank is busy): take the ring, then pick and mark the
 * target, or store the wake, in one. The rows only steer the doorbell, so the commit does not
 * wait for the disk unless it records a stored wake in the history.
 */
export async function takeRing(sql: postgres.Sql, request: RingRequest): Promise<Ring | null> {
  const { todoId, reason, schedule, sessionTtlMs } = request;
  const wakeId = typeof reason === 'object' ? reason.wake : null;
  return sql.begin(async (tx) => {
    const nextRings = wakeId === null ? tx`r.rings + 1` : tx`1`;
    const [taken] = await tx<
      (RingedTodo & {
        assignee: string | null;
        rings: number;
        last_session: string | null;
        limited: boolean;
      })[]
    >`
      with todo as (
        select t.id, t.queue, t.kind, t.title, t.url, t.assignee,
               exists (select from queue_limits l where l.queue = t.queue) as limited
        from todos t
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
    const { assignee, rings, last_session, limited, ...todo } = taken;
    if (limited) {
      // Its queue's limits hold it back: a consumer rung now would only be told to come back.
      // It is rung when it may be claimed — or sooner, when a slot frees (wake-held-back.ts).
      const [queue] = await readQueues(tx, [todo.queue], { countWaiting: false });
      if (queue?.held_back) {
        await tx`update todo_rings set next_ring_at = ${queue.held_back.next_at} where todo_id = ${todo.id}`;
        return { todo, rings, target: null };
      }
    }
    const ring = { todo, rings, assignee, lastSession: last_session, sessionTtlMs };
    const picked = await pickTarget(tx, ring, false);
    if (picked !== 'busy') return { todo, rings, target: picked };
    // Every session of the best rank is being rung for another todo this instant: wait for one,
    // rather than fall to a lower rank or store a wake that a consumer was there to hear.
    const waited = await pickTarget(tx, ring, true);
    return { todo, rings, target: waited === 'busy' ? null : waited };
  });
}

interface RingToPick {
  todo: RingedTodo;
  rings: number;
  assignee: string | null;
  lastSession: string | null;
  sessionTtlMs: number;
}

/**
 * One statement: the ladder (DESIGN §6) for one ring. Of the live sessions meant to work the
 * todo, only those of the best rank are candidates — a Claude Code channel puts the doorbell in
 * front of the model, an event stream is a program that acts on it, an MCP log notification may
 * only be logged — and among them the least recently rung, preferring one other than the last
 * rung; the chosen one is marked. A session being rung for another todo this instant is passed
 * over for a free one of the same rank, and when all of them are, the answer is `busy` (with
 * `waitForBusy`, it waits for one instead). With no eligible session at all, the least recently
 * rung webhook; with none, the wake is stored in the history (once per wake, not on re-rings).
 */
async function pickTarget(
  sql: postgres.TransactionSql,
  ring: RingToPick,
  waitForBusy: boolean,
): Promise<RingTarget | 'busy' | null> {
  const { todo, rings, assignee, lastSession, sessionTtlMs } = ring;
  const [row] = await sql<
    {
      kind: 'session' | 'webhook' | 'busy';
      session_id: string;
      process_id: string;
      path: SessionPath;
      principal: string;
      url: string;
      secret: string;
    }[]
  >`
    with eligible as (
      select s.id, array_position(${SESSION_RANKS as string[]}::text[], s.path) as rank
      from consumer_sessions s
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
      order by s.id is not distinct from ${lastSession}::uuid, s.last_rung_at nulls first, s.connected_at
      limit 1
      for update of s ${waitForBusy ? sql`` : sql`skip locked`}
    ), marked as (
      update consumer_sessions s set last_rung_at = now() from chosen where s.id = chosen.id
    ), rung as (
      update todo_rings set last_session = chosen.id from chosen where todo_id = ${todo.id}
    ), hook as (
      select w.principal, w.url, w.secret from consumer_webhooks w
      join principals p on p.name = w.principal and p.revoked_at is null
      where not exists (select 1 from eligible)
        and (${todo.queue} = any(p.queues) or p.name = ${assignee})
        and (${assignee}::text is null or p.name = ${assignee})
      order by w.last_rung_at nulls first
      limit 1
      for update of w skip locked
    ), hook_marked as (
      update consumer_webhooks w set last_rung_at = now() from hook where w.principal = hook.principal
    ), stored as (
      -- Nobody to ring: the todo waits, is offered in the digest of the next consumer to attach,
      -- and is rung again on schedule.
      ${eventInsert(
        sql,
        {
          todoId: todo.id,
          actor: DISPATCHER,
          action: 'wake_stored',
          data: { reason: 'no consumer attached' },
        },
        sql`${rings} = 1 and not exists (select 1 from eligible) and not exists (select 1 from hook)`,
      )}
    )
    select 'session' as kind, id as session_id, process_id, path, principal,
           null as url, null as secret, set_config('synchronous_commit', 'off', true) as steering_only
    from chosen
    union all
    select 'webhook', null, null, null, principal, url, secret, set_config('synchronous_commit', 'off', true)
    from hook
    union all
    select 'busy', null, null, null, null, null, null, null
    where exists (select 1 from eligible) and not exists (select 1 from chosen)`;
  if (!row) return null;
  if (row.kind === 'busy') return 'busy';
  const { kind, principal } = row;
  return kind === 'session'
    ? { kind, session_id: row.session_id, process_id: row.process_id, path: row.path, principal }
    : { kind, principal, url: row.url, secret: row.secret };
}
