import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';
import webpush, { WebPushError } from 'web-push';
import { backgroundLoop } from '../../platform/background-loop.js';
import type { WakeHub } from '../../wakes/wake-hub.js';
import { allowsNotice, recordEvent, systemActor, type Wake } from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import {
  failureOf,
  isOutboundRefused,
  type Outbound,
} from '../../platform/egress/create-egress.js';

export interface PushTuning {
  /** How often ended approvals are closed and approvals whose wake was missed are sent (ms). */
  sweepMs?: number;
  /** Waits between tries of a push the service put off (429, 5xx, no answer); the last repeats. */
  retryDelaysMs?: number[];
  /** How long one request to a push service may take (ms). */
  timeoutMs?: number;
}

export interface PushSender {
  /** Stops sending: retries end, timers stop; resolves once what is in flight has finished. */
  stop(): Promise<void>;
}

/** The message a browser's service worker receives (src/surfaces/console/assets/sw.js): nothing else. */
export type PushMessage =
  | { type: 'approval'; id: number; title: string }
  | { type: 'closed'; id: number; title: string; outcome: string };

interface Target {
  todo_id: number;
  title: string;
  assignee: string;
  expires_at: Date;
  subscription_id: number;
  endpoint: string;
  p256dh: string;
  auth: string;
}

const ACTOR = systemActor('web-push', 'delivery');
const DEFAULTS = {
  sweepMs: 10_000,
  retryDelaysMs: [2000, 10_000, 30_000, 60_000],
  timeoutMs: 10_000,
};
/** A closing push waits this long at the push service for a browser that is offline… */
const CLOSE_TTL_SECONDS = 86_400;
/** …and is retried for at most this long when the service puts it off. */
const CLOSE_RETRY_FOR_MS = 15 * 60_000;

/**
 * Web Push for the console's humans: every process hears the ledger's wakes; for an approval,
 * the process whose notice row lands pushes it to each of the assignee's browsers (with the
 * approval's remaining life as TTL, urgency high, topic `approval-<id>`); when it ends (a verdict
 * at once, an expiry or a cancel at the next sweep), the process whose delete lands sends the
 * closing push with the same topic and tag. Gone subscriptions (404, 410) are removed; a push
 * that was put off is tried again within the approval's life. Each push to each browser is one
 * `notified` event in the approval's history (path `web_push`), naming the push service's origin,
 * never the endpoint. Nothing is added to any write path: this only reads and writes its own rows.
 */
export function createPushSender({
  sql,
  hub,
  keys,
  subject,
  log,
  outbound,
  tuning = {},
}: {
  sql: postgres.Sql;
  hub: WakeHub;
  /** The server's VAPID key pair (the console keeps it: src/integrations/web-push/push-keys.ts). */
  keys: { publicKey: string; privateKey: string };
  /** The VAPID contact the push services see: an https URL or a mailto: address. */
  subject: string;
  log: Logger;
  /** How pushes are sent: through src/platform/egress's agent (no address inside, no redirect). */
  outbound: Outbound;
  tuning?: PushTuning;
}): PushSender {
  const { sweepMs, retryDelaysMs, timeoutMs } = { ...DEFAULTS, ...tuning };
  const vapidDetails = { subject, publicKey: keys.publicKey, privateKey: keys.privateKey };
  const stopping = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const tracked = work.catch((error: unknown) => {
      if (!stopping.signal.aborted)
        log.warn({ err: error }, 'a web push step failed; the next sweep tries again');
    });
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  };

  /** The browsers of an approval's assignee, through live sessions of a live human. */
  const targets = (todos: postgres.Fragment, since?: postgres.Fragment) => sql`
    select t.id as todo_id, t.title, t.assignee, t.expires_at,
           s.id as subscription_id, s.endpoint, s.p256dh, s.auth
    from ${todos} t
    join principals p on p.name = t.assignee and p.revoked_at is null
      and ${allowsNotice(sql, 'web_push')}
    join web_push_subscriptions s on s.principal_id = p.id ${since ?? sql``}
    join web_sessions ws on ws.id = s.session_id and ws.expires_at > now()`;

  /** An approval waits: the process whose notice lands pushes it to the assignee's browsers. */
  const open = async (todoId: number) => {
    const sent = await sql<Target[]>`
      with waiting as (
        select t.* from todos t
        where t.id = ${todoId} and t.kind = 'approval' and t.state = 'pending' and t.expires_at > now()
      ), browsers as (${targets(sql`waiting`)}), notice as (
        insert into web_push_notices (todo_id)
        select id from waiting where exists (select 1 from browsers)
        on conflict (todo_id) do nothing
        returning todo_id
      )
      select b.* from browsers b join notice n on n.todo_id = b.todo_id`;
    if (sent.length === 0) return;
    const deadline = sent[0]!.expires_at.getTime();
    const notified = async () =>
      (await sql`select 1 from web_push_notices where todo_id = ${todoId}`).length > 0;
    await Promise.all(
      sent.map((target) =>
        deliver(target, { type: 'approval', id: todoId, title: target.title }, deadline, notified),
      ),
    );
    // Ended while this was being sent: its closing push may have gone out before this one, and
    // the topic replaces only what the service still holds. The closing push goes again, after.
    if (!(await notified())) await sendClosing(sent);
  };

  /** Approvals that ended (all such, when `ids` is null): one process sends each closing push. */
  const close = async (ids: number[] | null) => {
    const ended = await sql<Target[]>`
      with closed as (
        delete from web_push_notices n using todos t
        where n.todo_id = t.id and (t.state <> 'pending' or t.expires_at <= now())
          and (${ids}::bigint[] is null or n.todo_id = any(${ids}::bigint[]))
        returning n.todo_id, n.opened_at
      ), ended as (
        select t.*, closed.opened_at from closed join todos t on t.id = closed.todo_id
      )
      ${targets(sql`ended`, sql`and s.created_at <= t.opened_at`)}`;
    await sendClosing(ended);
  };

  const sendClosing = async (ended: Target[]) => {
    if (ended.length === 0) return;
    const outcomes = new Map(
      (
        await sql<{ id: number; outcome: string }[]>`
          select id, case
            when verdict = 'allow' then 'allowed by ' || decided_by
            when verdict = 'deny' then 'denied by ' || decided_by
            when state = 'pending' or summary = 'expired without a verdict' then 'expired'
            else 'canceled' end as outcome
          from todos where id = any(${[...new Set(ended.map((t) => t.todo_id))]}::bigint[])`
      ).map((row) => [row.id, row.outcome]),
    );
    const deadline = Date.now() + CLOSE_RETRY_FOR_MS;
    await Promise.all(
      ended.map((target) =>
        deliver(
          target,
          {
            type: 'closed',
            id: target.todo_id,
            title: target.title,
            outcome: outcomes.get(target.todo_id) ?? 'ended',
          },
          deadline,
          () => Promise.resolve(true),
        ),
      ),
    );
  };

  /**
   * One push to one browser, tried again while the service puts it off and `still()` holds,
   * until `deadline`; then recorded in the approval's history.
   */
  const deliver = async (
    target: Target,
    message: PushMessage,
    deadline: number,
    still: () => Promise<boolean>,
  ) => {
    const service = new URL(target.endpoint).origin;
    let tries = 0;
    let outcome: string;
    for (;;) {
      tries += 1;
      const ttl =
        message.type === 'approval'
          ? Math.floor((deadline - Date.now()) / 1000)
          : CLOSE_TTL_SECONDS;
      if (ttl < 1) {
        outcome = 'not sent (the approval expired first)';
        break;
      }
      const attempt = await send(target, message, ttl);
      if (attempt.ok) {
        outcome = 'delivered';
        break;
      }
      if (attempt.gone) {
        await sql`delete from web_push_subscriptions where id = ${target.subscription_id}`;
        outcome = `failed (${attempt.detail}: the subscription is gone, so it was removed)`;
        break;
      }
      const wait =
        attempt.retryAfterMs ?? retryDelaysMs[Math.min(tries, retryDelaysMs.length) - 1]!;
      if (!attempt.retry || Date.now() + wait >= deadline) {
        outcome = `failed (${attempt.detail}${tries > 1 ? `, after ${tries} tries` : ''})`;
        break;
      }
      try {
        await sleep(wait, undefined, { signal: stopping.signal });
      } catch {
        outcome = `failed (${attempt.detail}; the server stopped before another try)`;
        break;
      }
      if (!(await still())) {
        outcome = `not sent (the approval ended first; ${attempt.detail} before)`;
        break;
      }
    }
    if (outcome !== 'delivered')
      log.warn({ todo_id: target.todo_id, service, outcome }, 'a web push was not delivered');
    await recordEvent(sql, {
      todoId: target.todo_id,
      actor: ACTOR,
      action: 'notified',
      data: {
        principal: target.assignee,
        path: 'web_push',
        push: message.type,
        subscription: target.subscription_id,
        service,
        outcome,
        tries,
      },
    });
  };

  const send = async (target: Target, message: PushMessage, ttl: number): Promise<Attempt> => {
    try {
      await webpush.sendNotification(
        { endpoint: target.endpoint, keys: { p256dh: target.p256dh, auth: target.auth } },
        JSON.stringify(message),
        {
          vapidDetails,
          TTL: ttl,
          // An approval waits on a human: high. Its end may wait for the device's next wake.
          urgency: message.type === 'approval' ? 'high' : 'normal',
          topic: `approval-${message.id}`,
          timeout: timeoutMs,
          agent: outbound.httpsAgent,
        },
      );
      return { ok: true };
    } catch (error) {
      if (isOutboundRefused(error))
        log.warn(
          { err: error, todo_id: target.todo_id },
          'a web push was not sent: its address is refused',
        );
      return attemptFailed(error);
    }
  };

  const onWake = (wake: Wake) => {
    if (stopping.signal.aborted) return;
    if (wake.event === 'approval') track(open(wake.todo_id));
    else if (wake.event === 'verdict') track(close([wake.todo_id]));
  };

  /** What no wake announces (an expiry, a cancel) or a wake missed while not listening. */
  const sweep = async () => {
    await close(null);
    const missed = await sql<{ id: number }[]>`
      select t.id from todos t
      where t.kind = 'approval' and t.state = 'pending' and t.expires_at > now()
        and not exists (select 1 from web_push_notices n where n.todo_id = t.id)
        -- only browsers that were already subscribed when it was asked: subscribing does not
        -- bring a burst of everything that waits
        and exists (
          select 1 from web_push_subscriptions s join principals p on p.id = s.principal_id
          where p.name = t.assignee and s.created_at < t.created_at)
      order by t.id limit 100`;
    for (const { id } of missed) await open(id);
  };

  const sweeping = backgroundLoop({
    everyMs: sweepMs,
    delayFirst: true,
    pass: sweep,
    onError: (error) => log.warn({ err: error }, 'a web push sweep failed; the next tries again'),
  });
  const unsubscribe = hub.subscribe(onWake);
  const unlisten = hub.onListen(() => sweeping.kick());
  sweeping.start();

  return {
    async stop() {
      stopping.abort();
      unsubscribe();
      unlisten();
      await sweeping.stop();
      await Promise.allSettled([...inFlight]);
    },
  };
}

type Attempt =
  | { ok: true; gone?: never; retry?: never; detail?: never; retryAfterMs?: never }
  | { ok: false; gone: boolean; retry: boolean; detail: string; retryAfterMs?: number };

/** What a failed push means: gone for good (404, 410), worth another try (429, 5xx, no answer), or neither. */
function attemptFailed(error: unknown): Attempt {
  if (error instanceof WebPushError) {
    const status = error.statusCode;
    return {
      ok: false,
      gone: status === 404 || status === 410,
      retry: status === 429 || status >= 500,
      detail: `${status} from the push service`,
      retryAfterMs: retryAfter(error.headers['retry-after']),
    };
  }
  const raw = (error as { code?: unknown }).code;
  const network =
    (typeof raw === 'string' && /^E[A-Z_]+$/.test(raw)) ||
    (error as Error).message === 'Socket timeout' ||
    isOutboundRefused(error);
  // No code, no reason: a refused address reads as any unreachable one (see failureOf).
  const why = (error as Error).message === 'Socket timeout' ? 'timeout' : failureOf(error);
  return {
    ok: false,
    gone: false,
    retry: network && !isOutboundRefused(error),
    detail: network ? `no answer from the push service: ${why}` : 'not sendable',
  };
}

/** `Retry-After`: seconds, or an HTTP date. */
function retryAfter(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.max(0, ms) : undefined;
}
