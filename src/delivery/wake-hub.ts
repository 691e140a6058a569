import type postgres from 'postgres';
import { isAgent, wakeChannel, type Actor, type Wake } from '../ledger/index.js';
import type { Logger } from '../logger.js';

export type WakeListener = (wake: Wake) => void;

export interface WakeHub {
  /** Resolves once this process is LISTENing, so a subscriber that waits for it misses nothing committed afterwards. */
  ready: Promise<void>;
  subscribe(listener: WakeListener): () => void;
  close(): Promise<void>;
}

/**
 * One LISTEN per process on the ledger's wake channel, fanned out in memory to every attached
 * consumer. postgres.js re-listens by itself after a lost connection.
 */
export async function createWakeHub(
  sql: postgres.Sql,
  schema: string,
  log: Logger,
): Promise<WakeHub> {
  const listeners = new Set<WakeListener>();
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const subscription = await sql.listen(
    wakeChannel(schema),
    (payload) => {
      let wake: Wake;
      try {
        wake = JSON.parse(payload) as Wake;
      } catch {
        log.warn({}, 'ignored a wake that is not JSON');
        return;
      }
      for (const listener of listeners) listener(wake);
    },
    () => markReady(),
  );
  return {
    ready,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
      await subscription.unlisten();
    },
  };
}

/**
 * Whether a wake concerns an actor: a claimable todo it may claim (its queue, not assigned to
 * someone else), an approval it must decide, or the verdict on an approval it asked for.
 */
export function wakeConcerns(actor: Actor, wake: Wake): boolean {
  switch (wake.event) {
    case 'claimable':
      if (wake.assignee !== null && wake.assignee !== actor.name) return false;
      return !isAgent(actor) || (actor.principal.queues ?? []).includes(wake.queue);
    case 'approval':
      return wake.assignee === actor.name;
    case 'verdict':
      return wake.requested_by === actor.name;
    default:
      return false;
  }
}
