import type postgres from 'postgres';
import { backgroundLoop } from '../../platform/background-loop.js';
import type { WakeHub } from '../../wakes/wake-hub.js';
import type { Wake } from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import { missedApprovals, queueApprovalMessage, queueMessageUpdates } from './slack-messages.js';

export interface SlackNotifier {
  stop(): Promise<void>;
}

/** Events API deliveries are remembered this long: Slack's retries of one come within the hour. */
const EVENTS_KEPT = '1 day';

/**
 * Slack's side of every approval, on every process: a new approval's wake queues its message
 * (the process whose row lands), a verdict's wake — from any surface — queues its update, and a
 * sweep every `sweepMs` catches what no wake announces (an expiry, a cancel) or a wake missed
 * while not listening. The outbox sends them; this only queues and kicks it.
 */
export function createSlackNotifier(options: {
  sql: postgres.Sql;
  hub: WakeHub;
  log: Logger;
  kick: () => void;
  sweepMs?: number;
}): SlackNotifier {
  const { sql, hub, log, kick } = options;
  let stopped = false;
  const inFlight = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const tracked = work.catch((error: unknown) => {
      if (!stopped) log.warn({ err: error }, 'a Slack step failed; the next sweep tries again');
    });
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  };

  const onWake = (wake: Wake) => {
    if (stopped) return;
    if (wake.event === 'approval') {
      track(queueApprovalMessage(sql, wake.todo_id).then((queued) => queued && kick()));
    } else if (wake.event === 'verdict') {
      track(queueMessageUpdates(sql, [wake.todo_id]).then((ids) => ids.length > 0 && kick()));
    }
  };

  const sweep = async () => {
    let queued = (await queueMessageUpdates(sql, null)).length > 0;
    for (const id of await missedApprovals(sql))
      queued = (await queueApprovalMessage(sql, id)) || queued;
    if (queued) kick();
    await sql`delete from slack_events where received_at < now() - ${EVENTS_KEPT}::interval`;
  };

  // The sweep is a background loop of its own: passes never overlap, and a (re)connection to the
  // wakes brings one forward for what was missed meanwhile.
  const loop = backgroundLoop({
    everyMs: options.sweepMs ?? 5000,
    pass: sweep,
    onError: (error) => log.warn({ err: error }, 'a Slack sweep failed; the next one tries again'),
  });
  const unsubscribe = hub.subscribe(onWake);
  const unlisten = hub.onListen(() => loop.kick());
  loop.start();

  return {
    async stop() {
      stopped = true;
      unsubscribe();
      unlisten();
      await Promise.allSettled([loop.stop(), ...inFlight]);
    },
  };
}
