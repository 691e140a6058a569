import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import {
  allowsNotice,
  cancelSessionApprovals,
  slackTells,
  systemActor,
  type Principal,
  type Wake,
} from '../ledger/index.js';
import type { Logger } from '../logger.js';
import type { Outbound } from '../outbound/create-outbound.js';
import { digestContent, oneLine, wakeContent, type Doorbell } from '../contract/doorbell.js';
import { sendWebhook } from './send-webhook.js';
import { takeRing, type Ring, type RingTarget, type SessionPath } from './take-ring.js';
import type { WakeHub } from './wake-hub.js';

/** A consumer attached to this process: it says how to push to it; false means it could not. */
export interface ConsumerSpec {
  principal: Principal;
  path: SessionPath;
  /** Only these queues (null: every queue the principal may work). */
  queues?: string[] | null;
  push(doorbell: Doorbell): Promise<boolean> | boolean;
}

export interface AttachedConsumer {
  id: string;
  detach(): Promise<void>;
}

export interface DispatcherTiming {
  /** Delays before each re-ring of an unclaimed todo; the last repeats. */
  rerings: number[];
  /** How often this process refreshes its sessions' liveness. */
  heartbeatMs: number;
  /** Sessions not refreshed for this long belong to a dead process. */
  sessionTtlMs: number;
  /** How often due re-rings are looked for. */
  scanMs: number;
  /** How often todos that were never rung (a wake lost while not listening) are looked for. */
  catchUpMs: number;
  /** Webhook retries within one ring. */
  webhookRetriesMs: number[];
}

export const DEFAULT_TIMING: DispatcherTiming = {
  rerings: [30_000, 120_000, 600_000, 3_600_000],
  heartbeatMs: 10_000,
  sessionTtlMs: 30_000,
  scanMs: 1000,
  catchUpMs: 30_000,
  webhookRetriesMs: [1000, 5000],
};

export interface Dispatcher {
  processId: string;
  attach(consumer: ConsumerSpec): Promise<AttachedConsumer>;
  close(): Promise<void>;
}

interface LocalConsumer extends ConsumerSpec {
  id: string;
}

const DISPATCHER = systemActor('dispatcher', 'delivery');
const DIGEST_SIZE = 10;
/** Rings of one wake that may fail over to another target before it waits for its re-ring. */
const MAX_FAILOVERS = 3;

/**
 * The doorbell of every server process. It hears the ledger's wakes (one LISTEN, via the hub),
 * rings one consumer per claimable todo (round-robin across every process's sessions, decided
 * in the database so that no two processes ring the same wake), rings again with backoff while
 * the todo stays unclaimed, tells humans of approvals and agents of verdicts, and greets each new
 * consumer with one digest of what waits. Every attempt is written to the todo's history.
 */
export async function createDispatcher({
  sql,
  schema,
  hub,
  log,
  outbound,
  timing = DEFAULT_TIMING,
}: {
  sql: postgres.Sql;
  schema: string;
  hub: WakeHub;
  log: Logger;
  /** How webhooks are sent (src/outbound: no address inside, no redirect). */
  outbound: Outbound;
  timing?: DispatcherTiming;
}): Promise<Dispatcher> {
  const processId = randomUUID();
  const local = new Map<string, LocalConsumer>();
  const ringChannel = `${schema}.rings`;
  let closed = false;
  const inFlight = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const tracked = work.catch((error: unknown) => {
      if (!closed) log.warn({ err: error }, 'delivery step failed; the todo will be rung again');
    });
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  };

  const record = (todoId: number, action: string, data: Record<string, unknown>) =>
    sql`insert into todo_events (todo_id, actor_kind, actor, via, action, data)
        values (${todoId}, 'system', ${DISPATCHER.name}, ${DISPATCHER.via}, ${action}, ${sql.json(data as never)})`;

  /** A consumer left (or cannot be reached): it is no longer rung, and what it asked is moot. */
  const forget = async (consumer: LocalConsumer) => {
    local.delete(consumer.id);
    await sql`delete from consumer_sessions where id = ${consumer.id}`;
    if (consumer.path === 'channel') await cancelSessionApprovals(sql, [consumer.id]);
  };

  /** Pushes to a local consumer; a consumer that cannot take it is gone. */
  const pushTo = async (consumer: LocalConsumer, doorbell: Doorbell): Promise<boolean> => {
    let delivered: boolean;
    try {
      delivered = await consumer.push(doorbell);
    } catch {
      delivered = false;
    }
    if (!delivered) await forget(consumer);
    return delivered;
  };

  const wakeDoorbell = (ring: Ring): Doorbell => ({
    type: 'wake',
    event: 'claimable',
    todo_id: ring.todo.id,
    queue: ring.todo.queue,
    kind: ring.todo.kind,
    title: ring.todo.title,
    url: ring.todo.url,
    content: wakeContent(ring.todo),
  });

  /** Delivers one ring to its target and records the attempt; on failure, rings someone else. */
  const deliver = async (ring: Ring, failovers: number): Promise<void> => {
    const { target, todo } = ring;
    if (!target) return; // stored: takeRing said so in the todo's history
    if (target.kind === 'session' && target.process_id !== processId) {
      await sql.notify(ringChannel, JSON.stringify({ ring, failovers }));
      return;
    }
    const outcome = await attempt(target, ring);
    await record(todo.id, 'rung', {
      ...describe(target),
      ring: ring.rings,
      outcome: outcome.ok ? 'delivered' : outcome.detail,
    });
    if (!outcome.ok && failovers < MAX_FAILOVERS) await ringNow(todo.id, 'retry', failovers + 1);
  };

  const attempt = async (
    target: RingTarget,
    ring: Ring,
  ): Promise<{ ok: boolean; detail: string }> => {
    if (target.kind === 'webhook') {
      const result = await sendWebhook(
        outbound,
        target,
        `ring_${ring.todo.id}_${ring.rings}`,
        wakeDoorbell(ring),
        { retryDelaysMs: timing.webhookRetriesMs, log },
      );
      return { ok: result.ok, detail: `failed (${result.detail})` };
    }
    const consumer = local.get(target.session_id);
    if (!consumer) {
      // The session left this process after the ring was taken.
      await sql`delete from consumer_sessions where id = ${target.session_id}`;
      return { ok: false, detail: 'session gone' };
    }
    return { ok: await pushTo(consumer, wakeDoorbell(ring)), detail: 'session gone' };
  };

  const ringNow = async (
    todoId: number,
    reason: { wake: string } | 'due' | 'retry',
    failovers = 0,
  ) => {
    const ring = await takeRing(sql, {
      todoId,
      reason,
      schedule: timing.rerings,
      sessionTtlMs: timing.sessionTtlMs,
    });
    if (ring) await deliver(ring, failovers);
  };

  /**
   * Approvals and verdicts go to every live session of one principal; each process covers its
   * own. Where the principal has none anywhere, the ladder goes on: its webhook, else the wake is
   * recorded as stored (the digest offers it when a session next attaches).
   */
  const broadcast = async (wake: Wake) => {
    const principal = wake.event === 'approval' ? wake.assignee : wake.requested_by;
    if (!principal) return;
    const consumers = [...local.values()].filter((c) => c.principal.name === principal);
    const elsewhere =
      consumers.length === 0 &&
      (
        await sql`
        select 1 from consumer_sessions s
        join consumer_processes pr on pr.id = s.process_id
        where s.principal = ${principal}
          and pr.seen_at > now() - make_interval(secs => ${timing.sessionTtlMs / 1000})
        limit 1`
      ).length > 0;
    if (elsewhere) return;
    const [todo] = await sql<
      {
        id: number;
        queue: string;
        title: string;
        requested_by: string | null;
        request_id: string | null;
        about_todo_id: number | null;
        verdict: 'allow' | 'deny' | null;
        decided_by: string | null;
        summary: string | null;
      }[]
    >`select id, queue, title, requested_by, request_id, about_todo_id, verdict, decided_by, summary
      from todos where id = ${wake.todo_id}`;
    if (!todo) return;
    const doorbell: Doorbell =
      wake.event === 'approval'
        ? {
            type: 'approval',
            event: 'approval',
            todo_id: todo.id,
            queue: todo.queue,
            kind: 'approval',
            title: todo.title,
            requested_by: todo.requested_by,
            request_id: todo.request_id,
            content: oneLine(`switchboard: approval #${todo.id} waits for you — ${todo.title}`),
          }
        : {
            type: 'verdict',
            event: 'verdict',
            todo_id: todo.id,
            queue: todo.queue,
            kind: 'approval',
            verdict: todo.verdict!,
            decided_by: todo.decided_by!,
            note: todo.summary,
            request_id: todo.request_id,
            about_todo_id: todo.about_todo_id,
            content: oneLine(
              `switchboard: approval #${todo.id} ${todo.verdict === 'allow' ? 'allowed' : 'denied'} by ${todo.decided_by}` +
                (todo.summary ? ` — ${todo.summary}` : ''),
            ),
          };
    if (consumers.length === 0) return notifyUnattended(wake, principal, doorbell);
    for (const consumer of consumers) {
      const delivered = await pushTo(consumer, doorbell);
      await record(todo.id, 'notified', {
        principal: consumer.principal.name,
        session: consumer.id,
        path: consumer.path,
        outcome: delivered ? 'delivered' : 'session gone',
      });
    }
  };

  /**
   * An approval or verdict for a principal with no live session: its webhook is rung, or the
   * history says that nobody was told (unless Web Push tells the human's browsers of it). Every process hears the wake; under a lock on the todo,
   * the first to find no record of this wake acts, and the others find its record.
   */
  const notifyUnattended = (wake: Wake, principal: string, doorbell: Doorbell) =>
    sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`${schema}.notice.${wake.todo_id}`}, 0))`;
      const [handled] = await tx`
        select 1 from todo_events
        where todo_id = ${wake.todo_id} and action in ('notified', 'wake_stored')
          and data ->> 'wake' = ${wake.wake_id}`;
      if (handled) return;
      const event = (action: string, data: Record<string, unknown>) =>
        tx`insert into todo_events (todo_id, actor_kind, actor, via, action, data)
           values (${wake.todo_id}, 'system', ${DISPATCHER.name}, ${DISPATCHER.via}, ${action},
                   ${tx.json({ ...data, wake: wake.wake_id })})`;
      // A human may have turned their webhook, Web Push or Slack off (notification preferences).
      const [registered] = await tx<{ url: string; secret: string; allowed: boolean }[]>`
        select w.url, w.secret, ${allowsNotice(tx, 'webhook')} as allowed from consumer_webhooks w
        join principals p on p.name = w.principal and p.revoked_at is null
        where w.principal = ${principal}`;
      const webhook = registered?.allowed ? registered : undefined;
      if (webhook) {
        const sent = await sendWebhook(
          outbound,
          webhook,
          `${doorbell.type}_${wake.todo_id}_${wake.wake_id}`,
          doorbell,
          { retryDelaysMs: timing.webhookRetriesMs, log },
        );
        await event('notified', {
          principal,
          path: 'webhook',
          outcome: sent.ok ? 'delivered' : `failed (${sent.detail})`,
        });
        if (sent.ok) return;
      }
      const why = `${principal} has no session attached and ${webhook ? 'its webhook failed' : registered ? 'its webhook turned off' : 'no webhook'}`;
      // A human's browsers that said yes to Web Push are told of an approval by the console's
      // push sender (src/web/push-sender.ts), and a linked Slack user by the bot
      // (src/slack/slack-notifier.ts), each recording what it sent: somebody is told then.
      const [{ browsers, slack }] = await tx<[{ browsers: number; slack: boolean }]>`
        select count(*)::int as browsers,
               ${doorbell.type === 'approval'} and ${slackTells(tx, principal)} as slack
        from web_push_subscriptions s
        join principals p on p.id = s.principal_id and p.revoked_at is null
        join web_sessions ws on ws.id = s.session_id and ws.expires_at > now()
        where p.name = ${principal} and ${doorbell.type === 'approval'} and ${allowsNotice(tx, 'web_push')}`;
      const told = [
        browsers > 0 &&
          `Web Push tells ${browsers === 1 ? 'its browser' : `its ${browsers} browsers`}`,
        slack && 'Slack tells them',
      ].filter(Boolean);
      await event('wake_stored', {
        principal,
        reason: told.length > 0 ? `${why}; ${told.join('; ')}` : `nobody was told: ${why}`,
      });
    });

  const onWake = (wake: Wake) => {
    if (closed) return;
    if (wake.event === 'claimable') track(ringNow(wake.todo_id, { wake: wake.wake_id }));
    else track(broadcast(wake));
  };

  const onRemoteRing = (payload: string) => {
    const { ring, failovers } = JSON.parse(payload) as { ring: Ring; failovers: number };
    if (ring.target?.kind === 'session' && ring.target.process_id === processId)
      track(deliver(ring, failovers));
  };

  /**
   * Rings another process took for this process's sessions while it was not listening (its
   * connection lost, LISTEN being renewed): their NOTIFY went nowhere, so no `rung` was ever
   * recorded for them. Rung again now rather than at the next re-ring, minutes away.
   */
  const recoverLostRings = async () => {
    const sessions = [...local.keys()];
    if (sessions.length === 0) return;
    const lost = await sql<{ todo_id: number }[]>`
      select r.todo_id from todo_rings r
      join todos t on t.id = r.todo_id and t.state = 'pending'
      where r.last_session = any(${sessions}::uuid[])
        and not exists (
          select 1 from todo_events e
          where e.todo_id = r.todo_id and e.action = 'rung' and e.data ->> 'ring' = r.rings::text)`;
    for (const { todo_id } of lost) await ringNow(todo_id, 'retry');
  };

  /** Rings every claimable todo that has never been rung: wakes lost while nobody listened. */
  const catchUp = async () => {
    const missed = await sql<{ id: number }[]>`
      select t.id from todos t
      where t.state = 'pending' and t.available_at <= now() and t.kind <> 'approval'
        and not exists (select 1 from todo_rings r where r.todo_id = t.id)
      order by t.available_at limit 500`;
    for (const { id } of missed) await ringNow(id, { wake: 'catch-up' });
  };

  const scan = async () => {
    const due = await sql<{ todo_id: number }[]>`
      select todo_id from todo_rings where next_ring_at <= now() order by next_ring_at limit 100`;
    for (const { todo_id } of due) await ringNow(todo_id, 'due');
    // Rings of todos that were claimed (or finished) are done with.
    await sql`delete from todo_rings r using todos t where t.id = r.todo_id and t.state <> 'pending'`;
  };

  /** This process is alive; so are its sessions. A process that stops beating is dead. */
  const beat = () => sql`
    insert into consumer_processes (id) values (${processId})
    on conflict (id) do update set seen_at = now()`;

  const heartbeat = async () => {
    await beat();
    // Sessions of processes that died: gone, with the approvals their channels were waiting on.
    const dead = await sql<{ id: string; path: string }[]>`
      with dead as (
        delete from consumer_processes
        where seen_at < now() - make_interval(secs => ${(timing.sessionTtlMs * 2) / 1000})
      )
      delete from consumer_sessions s
      where not exists (
        select 1 from consumer_processes p
        where p.id = s.process_id
          and p.seen_at >= now() - make_interval(secs => ${(timing.sessionTtlMs * 2) / 1000}))
      returning s.id, s.path`;
    await cancelSessionApprovals(
      sql,
      dead.filter((row) => row.path === 'channel').map((row) => row.id),
    );
  };

  await beat();
  const unsubscribeWakes = hub.subscribe(onWake);
  const unsubscribeListen = hub.onListen(() => track(catchUp()));
  const rings = await sql.listen(ringChannel, onRemoteRing, () => track(recoverLostRings()));
  const timers = [
    setInterval(() => track(scan()), timing.scanMs),
    setInterval(() => track(heartbeat()), timing.heartbeatMs),
    setInterval(() => track(catchUp()), timing.catchUpMs),
  ];
  for (const timer of timers) timer.unref();
  track(catchUp());

  return {
    processId,
    async attach(spec) {
      const consumer: LocalConsumer = { ...spec, id: randomUUID() };
      await sql`
        insert into consumer_sessions (id, principal, process_id, path, queues)
        values (${consumer.id}, ${spec.principal.name}, ${processId}, ${spec.path}, ${spec.queues ?? null}::text[])`;
      local.set(consumer.id, consumer);
      await sendDigest(consumer);
      return {
        id: consumer.id,
        detach: async () => {
          if (local.has(consumer.id)) await forget(consumer);
        },
      };
    },
    async close() {
      closed = true;
      for (const timer of timers) clearInterval(timer);
      unsubscribeWakes();
      unsubscribeListen();
      await Promise.allSettled([...inFlight]);
      await rings.unlisten().catch(() => {});
      await sql`delete from consumer_sessions where process_id = ${processId}`.catch(() => {});
      await sql`delete from consumer_processes where id = ${processId}`.catch(() => {});
      local.clear();
    },
  };

  /** One message listing what already waits for a consumer, instead of a burst of rings. */
  async function sendDigest(consumer: LocalConsumer): Promise<void> {
    const { principal } = consumer;
    const waiting = await sql<
      { todo_id: number; queue: string; kind: string; title: string; total: number }[]
    >`
      select t.id as todo_id, t.queue, t.kind, t.title, count(*) over () as total
      from todos t
      where (
          t.state = 'pending' and t.available_at <= now() and t.kind <> 'approval'
          -- the same rule as ringing (take-ring.ts): an agent's queues, a human's own work, or
          -- the queues a consumer asked for
          and (t.queue = any(${principal.queues ?? []}::text[]) or t.assignee = ${principal.name}
               or ${principal.kind === 'human' && consumer.queues != null})
          and (t.assignee is null or t.assignee = ${principal.name})
          and (${consumer.queues ?? null}::text[] is null or t.queue = any(${consumer.queues ?? null}::text[]))
        ) or (t.kind = 'approval' and t.state = 'pending' and t.assignee = ${principal.name})
      order by t.id
      limit ${DIGEST_SIZE}`;
    if (waiting.length === 0) return;
    const todos = waiting.map(({ todo_id, queue, kind, title }) => ({
      todo_id,
      queue,
      kind,
      title,
    }));
    const more = waiting[0]!.total - todos.length;
    await pushTo(consumer, { type: 'digest', todos, more, content: digestContent(todos, more) });
  }
}

function describe(target: RingTarget): Record<string, unknown> {
  return target.kind === 'webhook'
    ? { principal: target.principal, path: 'webhook' }
    : { principal: target.principal, session: target.session_id, path: target.path };
}
