import { backgroundLoop, type BackgroundLoop } from '../platform/background-loop.js';
import type { Logger } from '../platform/logger.js';

/** start, kick (look at the outbox now: a delivery just queued something) and stop. */
export type OutboxDrainer = BackgroundLoop;

/**
 * Works the outbox one row at a time (every provider's write-backs alike): a pass claims and
 * attempts due rows until none is left, on start, on a kick, and every `pollIntervalMs`
 * otherwise. A kick during a pass makes it look once more before it rests, so a row queued
 * meanwhile is not left for the next poll; a stop lets the attempt in flight finish.
 */
export function drainOutbox<Row>(options: {
  /** The next due row, leased to this pass; undefined when none is due. */
  claim: () => Promise<Row | undefined>;
  /** Sends it and records the outcome; a failure is recorded, not thrown. */
  attempt: (row: Row) => Promise<void>;
  pollIntervalMs: number;
  log: Logger;
  /** The outbox, for the log line of a pass that failed. */
  name: string;
}): OutboxDrainer {
  const { claim, attempt, log } = options;
  let stopping = false;
  const loop = backgroundLoop({
    everyMs: options.pollIntervalMs,
    async pass() {
      while (!stopping) {
        const row = await claim();
        if (!row) return;
        await attempt(row);
      }
    },
    onError: (error) => log.warn({ err: error }, `${options.name} check failed; will try again`),
  });
  return {
    start() {
      stopping = false;
      loop.start();
    },
    kick: () => loop.kick(),
    async stop() {
      stopping = true;
      await loop.stop();
    },
  };
}
