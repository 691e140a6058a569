import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import { systemActor } from '../actor.js';
import { eventInsert } from '../index.js';

type Fragment = postgres.PendingQuery<postgres.Row[]>;

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
 * Takes the next ring of a claimable todo and picks whom it goes to, in one statement with no
 * transaction around it: read the todo, pick the target, take the ring (which records the target
 * as its last), and mark the target or store the wake, together. Of all processes that hear a
 * wake, the one whose upsert of the ring row matches rings; the others get null. The target is,
 * among the live sessions meant to work the todo (an agent of its queue, or its assignee), of the
 * best rank on the ladder (SESSION_RANKS), the least recently rung, preferring one other than the
 * last rung; with none, the least recently rung webhook; with none either, nobody (the wake is
 * stored). When the pick must wait (every session of the best rank is being rung for another todo
 * this instant) or the todo's queue has limits, it takes nothing and says `pick_apart`: the ring
 * is then taken in a transaction with the pick (takeRingAlone, pickRingTarget). The rows only
 * steer the doorbell, so the commit does not wait for the disk unless it records a stored wake.
 */
export async function takeRingAtOnce(
  sql: postgres.Sql,
  request: RingRequest,
): Promise<Ring | 'pick_apart' | null> {
  const { todoId, sessionTtlMs } = request;
  const [row] = await sql<
    (RingedTodo & PickedRow & { assignee: string | null; rings: number | null; limited: boolean })[]
  >`
    with todo as (${claimableTodo(sql, todoId)} and ${ringersTurn(sql, request)}), prior as (
      select last_session from todo_rings where todo_id = ${todoId}
    ), ${ladder(sql, { sessionTtlMs, waitForBusy: false })},
    taken as (
      ${ringUpsert(sql, request, {
        lastSession: sql`(select id from chosen)`,
        only: sql`not todo.limited
          and (exists (select 1 from chosen) or not exists (select 1 from eligible))`,
      })}
    ), ${marks(sql, todoId)}
    select todo.*, taken.rings, target.*
    from todo left join taken on true left join (${target(sql)}) target on true`;
  if (!row) return null;
  const { id, queue, kind, title, url, rings, limited } = row;
  // Not taken: another process rang this wake, or the pick must wait or read limits first.
  if (rings === null) return limited || row.target_kind === 'busy' ? 'pick_apart' : null;
  const picked = readTarget(row);
  return {
    todo: { id, queue, kind, title, url },
    rings,
    target: picked === 'busy' ? null : picked,
  };
}

/**
 * The ring taken without a pick, in the caller's transaction, for the pick that follows in it
 * (pickRingTarget): null when the todo may not be rung now.
 */
export async function takeRingAlone(
  tx: postgres.TransactionSql,
  request: RingRequest,
): Promise<{ todo: RingedTodo; rings: number; assignee: string | null; limited: boolean } | null> {
  const [taken] = await tx<
    (RingedTodo & { assignee: string | null; rings: number; limited: boolean })[]
  >`
    with todo as (${claimableTodo(tx, request.todoId)}),
    taken as (${ringUpsert(tx, request, { lastSession: tx`null::uuid`, only: tx`true` })})
    select todo.*, taken.rings from todo join taken on true`;
  if (!taken) return null;
  const { id, queue, kind, title, url, assignee, rings, limited } = taken;
  return { todo: { id, queue, kind, title, url }, rings, assignee, limited };
}

/** A ring held back by its queue's limits is rung again at `until`, when it may be claimed. */
export async function holdRingBack(
  tx: postgres.TransactionSql,
  todoId: number,
  until: Date,
): Promise<void> {
  await tx`update todo_rings set next_ring_at = ${until} where todo_id = ${todoId}`;
}

export interface RingToPick {
  todo: RingedTodo;
  rings: number;
  assignee: string | null;
  sessionTtlMs: number;
}

/** A pick on its own, for a ring already taken: its queue's limits allow it, or it waits for a busy session. */
export async function pickRingTarget(
  sql: postgres.TransactionSql,
  { todo, rings, assignee, sessionTtlMs }: RingToPick,
  waitForBusy: boolean,
): Promise<RingTarget | 'busy' | null> {
  const [row] = await sql<PickedRow[]>`
    with todo as (
      select ${todo.id}::bigint as id, ${todo.queue}::text as queue, ${assignee}::text as assignee,
             false as limited
    ), prior as (
      select last_session from todo_rings where todo_id = ${todo.id}
    ), ${ladder(sql, { sessionTtlMs, waitForBusy })},
    taken as (
      update todo_rings set last_session = coalesce((select id from chosen), last_session)
      where todo_id = ${todo.id}
      returning ${rings}::int as rings
    ), ${marks(sql, todo.id)}
    select target.* from taken join (${target(sql)}) target on true`;
  return row ? readTarget(row) : null;
}

/** The todo, if a wake may ring it now: pending, available, not an approval. */
function claimableTodo(sql: Db, todoId: number) {
  return sql`
    select t.id, t.queue, t.kind, t.title, t.url, t.assignee,
           exists (select from queue_limits l where l.queue = t.queue) as limited
    from todos t
    where t.id = ${todoId} and t.state = 'pending' and t.available_at <= now() and t.kind <> 'approval'`;
}

/**
 * Whether this statement is the one to ring, a condition on its `todo`. Every process hears every
 * wake (and every process's ringer finds a due re-ring), and a statement that goes on to pick
 * locks the session it would ring until it learns, at the ring's upsert, that another process
 * took the ring: held while it waited for that process's commit, the session was passed over for
 * another by every ring meanwhile, and the round-robin was lost. So the statements of one wake
 * queue on its transaction lock before they pick, holding nothing, and each goes on only if the
 * ring was not taken as of its start: once the first has committed, the rest stop at its ring (a
 * statement that began before that commit still picks, and holds its pick only until its upsert
 * finds the ring taken, waiting for nothing). Should the first fail or its process die before its
 * commit, the next one rings. A retry is one process's own.
 */
function ringersTurn(sql: Db, { todoId, reason }: Pick<RingRequest, 'todoId' | 'reason'>) {
  if (reason === 'retry') return sql`true`;
  const wake = typeof reason === 'object' ? reason.wake : null;
  return sql`
    (select true from pg_advisory_xact_lock(
      hashtextextended(current_schema() || '.ring.' || ${todoId} || '.' || ${wake ?? 'due'}, 0)
    ))
    and not exists (
      select from todo_rings r where r.todo_id = ${todoId}
        and ${wake === null ? sql`r.next_ring_at > now()` : sql`r.wake_id = ${wake}`}
    )`;
}

/**
 * The ring's upsert over the statement's `todo`, returning its `rings`: it matches for a new wake,
 * a due re-ring or a retry (RingRequest.reason), and only where `only` holds.
 */
function ringUpsert(
  sql: Db,
  { reason, schedule }: Pick<RingRequest, 'reason' | 'schedule'>,
  { lastSession, only }: { lastSession: Fragment; only: Fragment },
) {
  const wakeId = typeof reason === 'object' ? reason.wake : null;
  const nextRings = wakeId === null ? sql`r.rings + 1` : sql`1`;
  return sql`
    insert into todo_rings as r (todo_id, rings, next_ring_at, wake_id, last_session)
    select id, 1, now() + make_interval(secs => ${schedule[0]! / 1000}), ${wakeId}, ${lastSession}
    from todo where ${only}
    on conflict (todo_id) do update set
      -- a new wake starts the schedule over; a re-ring or a failover moves along it
      rings = ${nextRings},
      next_ring_at = now() + make_interval(secs => (${schedule}::float8[])[least(${nextRings}, ${schedule.length})] / 1000),
      wake_id = coalesce(excluded.wake_id, r.wake_id),
      last_session = coalesce(excluded.last_session, r.last_session)
    where ${
      reason === 'retry'
        ? sql`true`
        : reason === 'due'
          ? sql`r.next_ring_at <= now()`
          : sql`r.wake_id is distinct from excluded.wake_id`
    }
    returning r.rings`;
}

interface PickedRow {
  target_kind: 'session' | 'webhook' | 'busy' | null;
  session_id: string;
  process_id: string;
  path: SessionPath;
  principal: string;
  hook_url: string;
  hook_secret: string;
}

function readTarget(row: PickedRow): RingTarget | 'busy' | null {
  const { target_kind: kind, principal } = row;
  if (kind === null) return null;
  if (kind === 'busy') return 'busy';
  return kind === 'session'
    ? { kind, session_id: row.session_id, process_id: row.process_id, path: row.path, principal }
    : { kind, principal, url: row.hook_url, secret: row.hook_secret };
}

/**
 * The ladder (DESIGN §6) for one ring, as the CTEs `eligible` and `chosen`, over the statement's
 * `todo` (id, queue, assignee, limited) and `prior` (the ring's last session). Of the live
 * sessions meant to work the todo, only those of the best rank are candidates — a Claude Code
 * channel puts the doorbell in front of the model, an event stream is a program that acts on it,
 * an MCP log notification may only be logged — and among them the least recently rung,
 * preferring one other than the last rung. A session being rung for another todo this instant
 * is passed over for a free one of the same rank (with `waitForBusy`, it is waited for instead).
 * A todo whose queue has limits picks nobody here: its limits are read first.
 */
function ladder(
  sql: Db,
  { sessionTtlMs, waitForBusy }: { sessionTtlMs: number; waitForBusy: boolean },
) {
  return sql`
    eligible as (
      select s.id, array_position(${SESSION_RANKS as string[]}::text[], s.path) as rank
      from todo
      join consumer_sessions s on true
      join principals p on p.name = s.principal and p.revoked_at is null
      join consumer_processes pr on pr.id = s.process_id
      where not todo.limited
        and pr.seen_at > now() - make_interval(secs => ${sessionTtlMs / 1000})
        -- an agent is rung for its queues; a human only for work assigned to them, or on a
        -- stream that asked for a queue (an idle human session must not take agents' rings)
        and (todo.queue = any(p.queues) or p.name = todo.assignee or (p.kind = 'human' and s.queues is not null))
        and (todo.assignee is null or p.name = todo.assignee)
        and (s.queues is null or todo.queue = any(s.queues))
    ), chosen as (
      select s.id, s.process_id, s.path, s.principal from consumer_sessions s
      join eligible e on e.id = s.id
      where e.rank = (select min(rank) from eligible)
      order by s.id is not distinct from (select last_session from prior), s.last_rung_at nulls first, s.connected_at
      limit 1
      for update of s ${waitForBusy ? sql`` : sql`skip locked`}
    )`;
}

/**
 * Once the statement's `taken` (the ring, with its `rings`) is there: the chosen session is
 * marked rung; with no eligible session, the least recently rung webhook is picked and marked;
 * with neither, the wake is stored in the history (once per wake, not on re-rings) — the todo
 * waits, is offered in the digest of the next consumer to attach, and is rung again on schedule.
 */
function marks(sql: Db, todoId: number) {
  return sql`
    marked as (
      update consumer_sessions s set last_rung_at = now()
      from chosen, taken where s.id = chosen.id
    ), hook as (
      select w.principal, w.url, w.secret from todo, taken, consumer_webhooks w
      join principals p on p.name = w.principal and p.revoked_at is null
      where not todo.limited and not exists (select 1 from eligible)
        and (todo.queue = any(p.queues) or p.name = todo.assignee)
        and (todo.assignee is null or p.name = todo.assignee)
      order by w.last_rung_at nulls first
      limit 1
      for update of w skip locked
    ), hook_marked as (
      update consumer_webhooks w set last_rung_at = now() from hook where w.principal = hook.principal
    ), stored as (
      ${eventInsert(
        sql,
        {
          todoId,
          actor: DISPATCHER,
          action: 'wake_stored',
          data: { reason: 'no consumer attached' },
        },
        sql`(select rings from taken) = 1 and not (select limited from todo)
            and not exists (select 1 from eligible) and not exists (select 1 from hook)`,
      )}
    )`;
}

/**
 * The picked target as one row (none: nobody), the commit made quick when it stores nothing; its
 * columns are named apart from the todo's, beside which it is read.
 */
function target(sql: Db) {
  return sql`
    select 'session' as target_kind, id as session_id, process_id, path, principal,
           null as hook_url, null as hook_secret, set_config('synchronous_commit', 'off', true) as steering_only
    from chosen
    union all
    select 'webhook', null, null, null, principal, url, secret, set_config('synchronous_commit', 'off', true)
    from hook
    union all
    select 'busy', null, null, null, null, null, null, null
    where exists (select 1 from eligible) and not exists (select 1 from chosen)`;
}
