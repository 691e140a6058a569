import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import { backgroundLoop } from '../platform/background-loop.js';
import type { Doorbell } from '../contract/doorbell.js';
import type { Wake } from '../data/index.js';
import type { Logger } from '../platform/logger.js';
import type { Outbound } from '../platform/egress/create-egress.js';
import { broadcastNotice } from './broadcast-notice.js';
import { createRinger, type RingTiming } from './create-ringer.js';
import { localSessions, type ConsumerSpec } from './local-sessions.js';
import { notifyUnattended } from './notify-unattended.js';
import { waitingDigest } from './waiting-digest.js';
import type { WakeHub } from './wake-hub.js';

export type { ConsumerSpec } from './local-sessions.js';

export interface AttachedConsumer {
  id: string;
  detach(): Promise<void>;
}

export interface DispatcherTiming extends RingTiming {
  /** How often this process refreshes its sessions' liveness. */
  heartbeatMs: number;
  /** How often due re-rings are looked for. */
  scanMs: number;
  /** How often todos that were never rung (a wake lost while not listening) are looked for. */
  catchUpMs: number;
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
  /** Server processes alive at the last heartbeat, this one included (see LocalSessions). */
  liveProcesses(): number;
  attach(consumer: ConsumerSpec): Promise<AttachedConsumer>;
  close(): Promise<void>;
}

/**
 * The doorbell of every server process. It hears the ledger's wakes (one LISTEN, via the hub),
 * rings one consumer per claimable todo (round-robin across every process's sessions, decided
 * in the database so that no two processes ring the same wake), rings again with backoff while
 * the todo stays unclaimed (create-ringer.ts), tells humans of approvals and agents of verdicts
 * (broadcast-notice.ts, notify-unattended.ts), and greets each new consumer with one digest of
 * what waits (waiting-digest.ts). Its sessions are local-sessions.ts. Every attempt is written to
 * the todo's history.
 */
export async function createDispatcher({
  sql,
  direct,
  schema,
  hub,
  log,
  outbound,
  cancelSessionApprovals,
  timing = DEFAULT_TIMING,
}: {
  sql: postgres.Sql;
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql;
  schema: string;
  hub: WakeHub;
  log: Logger;
  /** How webhooks are sent (src/platform/egress: no address inside, no redirect). */
  outbound: Outbound;
  /** The todo service's: what channel sessions that went away asked is canceled. */
  cancelSessionApprovals: (sessionIds: string[]) => Promise<unknown>;
  timing?: DispatcherTiming;
}): Promise<Dispatcher> {
  const processId = randomUUID();
  let closed = false;
  const failed = (error: unknown) => {
    if (!closed) log.warn({ err: error }, 'delivery step failed; the todo will be rung again');
  };
  const inFlight = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const tracked = work.catch(failed);
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  };

  const sessions = localSessions({
    sql,
    processId,
    sessionTtlMs: timing.sessionTtlMs,
    cancelSessionApprovals,
  });
  const ringer = createRinger({
    sql,
    direct,
    schema,
    processId,
    sessions,
    outbound,
    timing,
    log,
    track,
  });
  const notice = {
    sql,
    sessions,
    sessionTtlMs: timing.sessionTtlMs,
    unattended: (wake: Wake, principal: string, doorbell: Doorbell) =>
      notifyUnattended(
        { sql, schema, outbound, webhookRetriesMs: timing.webhookRetriesMs, log },
        wake,
        principal,
        doorbell,
      ),
  };

  const onWake = (wake: Wake) => {
    if (closed) return;
    if (wake.event === 'claimable') track(ringer.ring(wake.todo_id, { wake: wake.wake_id }));
    else track(broadcastNotice(notice, wake));
  };

  await sessions.beat();
  const loop = (everyMs: number, pass: () => Promise<unknown>, delayFirst = true) =>
    backgroundLoop({ everyMs, pass, delayFirst, onError: failed });
  const catchingUp = loop(timing.catchUpMs, () => ringer.catchUp(), false);
  const loops = [
    loop(timing.scanMs, () => ringer.scan()),
    loop(timing.heartbeatMs, () => sessions.heartbeat()),
    catchingUp,
  ];
  const unsubscribeWakes = hub.subscribe(onWake);
  const unsubscribeListen = hub.onListen(() => catchingUp.kick());
  const rings = await ringer.listen();
  for (const each of loops) each.start();

  return {
    processId,
    liveProcesses: () => sessions.liveProcesses(),
    async attach(spec) {
      const consumer = await sessions.attach(spec);
      const digest = await waitingDigest(sql, spec);
      if (digest) await sessions.push(consumer, digest);
      return { id: consumer.id, detach: () => sessions.forget(consumer) };
    },
    async close() {
      closed = true;
      unsubscribeWakes();
      unsubscribeListen();
      await Promise.all(loops.map((each) => each.stop()));
      await Promise.allSettled([...inFlight]);
      await rings.unlisten().catch(() => {});
      await sessions.close();
    },
  };
}
