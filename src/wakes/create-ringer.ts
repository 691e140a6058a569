import type postgres from 'postgres';
import { wakeContent, type Doorbell } from '../contract/doorbell.js';
import { recordEvent } from '../data/index.js';
import { dueRings } from '../data/wakes/due-rings.js';
import { forgetFinishedRings } from '../data/wakes/forget-finished-rings.js';
import { lostRings } from '../data/wakes/lost-rings.js';
import { neverRungTodos } from '../data/wakes/never-rung-todos.js';
import { listenForRings, sendRing } from '../data/wakes/ring-channel.js';
import type { Logger } from '../platform/logger.js';
import type { Outbound } from '../platform/egress/create-egress.js';
import type { LocalSessions } from './local-sessions.js';
import { sendWebhook } from '../integrations/webhooks/send-webhook.js';
import { DISPATCHER, takeRing, type Ring, type RingTarget } from './take-ring.js';

/** Rings of one wake that may fail over to another target before it waits for its re-ring. */
const MAX_FAILOVERS = 3;

export interface RingTiming {
  /** Delays before each re-ring of an unclaimed todo; the last repeats. */
  rerings: number[];
  /** Sessions not refreshed for this long belong to a dead process. */
  sessionTtlMs: number;
  /** Webhook retries within one ring. */
  webhookRetriesMs: number[];
}

export interface Ringer {
  /** Rings a claimable todo now: for a new wake, a due re-ring, or after a failed target. */
  ring(
    todoId: number,
    reason: { wake: string } | 'due' | 'retry',
    failovers?: number,
  ): Promise<void>;
  /** Rings due re-rings, and forgets the rings of todos no longer pending. */
  scan(): Promise<void>;
  /** Rings every claimable todo that has never been rung: wakes lost while nobody listened. */
  catchUp(): Promise<void>;
  /** Listens for rings other processes took for this one's sessions. */
  listen(): Promise<{ unlisten(): Promise<void> }>;
}

/**
 * The ring loop of one process: takes each ring (takeRing decides in the database, so no two
 * processes ring the same wake), delivers it to a session of this process, to another process
 * (NOTIFY on the schema's ring channel), or to a webhook, records the attempt in the todo's
 * history, and on failure rings someone else.
 */
export function createRinger({
  sql,
  direct,
  schema,
  processId,
  sessions,
  outbound,
  timing,
  log,
  track,
}: {
  sql: postgres.Sql;
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql;
  schema: string;
  processId: string;
  sessions: LocalSessions;
  outbound: Outbound;
  timing: RingTiming;
  log: Logger;
  /** Work started by a NOTIFY, which the dispatcher waits for on close. */
  track: (work: Promise<unknown>) => void;
}): Ringer {
  /** Delivers one ring to its target and records the attempt; on failure, rings someone else. */
  const deliver = async (ring: Ring, failovers: number): Promise<void> => {
    const { target, todo } = ring;
    if (!target) return; // stored: takeRing said so in the todo's history
    if (target.kind === 'session' && target.process_id !== processId) {
      await sendRing(sql, schema, JSON.stringify({ ring, failovers }));
      return;
    }
    const outcome = await attempt(target, ring);
    await recordEvent(sql, {
      todoId: todo.id,
      actor: DISPATCHER,
      action: 'rung',
      data: {
        ...describe(target),
        ring: ring.rings,
        outcome: outcome.ok ? 'delivered' : outcome.detail,
      },
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
    const consumer = sessions.get(target.session_id);
    if (!consumer) {
      // The session left this process after the ring was taken.
      await sessions.removeGone(target.session_id);
      return { ok: false, detail: 'session gone' };
    }
    return { ok: await sessions.push(consumer, wakeDoorbell(ring)), detail: 'session gone' };
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
    const ids = sessions.ids();
    if (ids.length === 0) return;
    for (const todoId of await lostRings(sql, ids)) await ringNow(todoId, 'retry');
  };

  return {
    ring: ringNow,
    async scan() {
      // Rings of todos that were claimed (or finished) are done with.
      await forgetFinishedRings(sql);
      for (const todoId of await dueRings(sql)) await ringNow(todoId, 'due');
    },
    async catchUp() {
      for (const id of await neverRungTodos(sql)) await ringNow(id, { wake: 'catch-up' });
    },
    listen: () => listenForRings(direct, schema, onRemoteRing, () => track(recoverLostRings())),
  };
}

function wakeDoorbell(ring: Ring): Doorbell {
  return {
    type: 'wake',
    event: 'claimable',
    todo_id: ring.todo.id,
    queue: ring.todo.queue,
    kind: ring.todo.kind,
    title: ring.todo.title,
    url: ring.todo.url,
    content: wakeContent(ring.todo),
  };
}

function describe(target: RingTarget): Record<string, unknown> {
  return target.kind === 'webhook'
    ? { principal: target.principal, path: 'webhook' }
    : { principal: target.principal, session: target.session_id, path: target.path };
}
