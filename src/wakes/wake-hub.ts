import type postgres from 'postgres';
import type { Wake } from '../data/index.js';
import { listenForWakes } from '../data/wakes/listen-for-wakes.js';
import type { Logger } from '../platform/logger.js';

export type WakeListener = (wake: Wake) => void;

export interface WakeHub {
  /** Resolves once this process is LISTENing, so a subscriber that waits for it misses nothing committed afterwards. */
  ready: Promise<void>;
  subscribe(listener: WakeListener): () => void;
  /** Runs `callback` after every (re)LISTEN: whatever was committed while not listening must be read. */
  onListen(callback: () => void): () => void;
  close(): Promise<void>;
}

/**
 * One LISTEN per process on the ledger's wake channel, fanned out in memory to every attached
 * consumer. postgres.js re-listens by itself after a lost connection.
 */
export async function createWakeHub(
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql,
  schema: string,
  log: Logger,
): Promise<WakeHub> {
  const listeners = new Set<WakeListener>();
  const listenCallbacks = new Set<() => void>();
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const subscription = await listenForWakes(
    direct,
    schema,
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
    () => {
      markReady();
      for (const callback of listenCallbacks) callback();
    },
  );
  return {
    ready,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onListen(callback) {
      listenCallbacks.add(callback);
      return () => listenCallbacks.delete(callback);
    },
    async close() {
      listeners.clear();
      listenCallbacks.clear();
      // PostgreSQL may have ended the connection first (Ctrl-C reaches it too): nothing is
      // listened to any more either way, and the rest of the server's close must still run.
      await subscription.unlisten().catch((error: unknown) => {
        log.debug({ err: error }, 'could not stop listening for wakes');
      });
    },
  };
}
