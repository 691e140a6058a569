import type { Logger } from '../logger.js';

export interface OutboxDrainer {
  start(): void;
  /** Look at the outbox now (a delivery just queued something). */
  kick(): void;
  /** Stops looking; an attempt in flight finishes first. */
  stop(): Promise<void>;
}

/**
 * Works the outbox one row at a time (every provider's write-backs alike): a pass claims and
 * attempts due rows until none is left, on start, on a kick, and every `pollIntervalMs`
 * otherwise. A kick during a pass makes it look once more before it rests, so a row queued
 * meanwhile is not left for the next poll.
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
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;

  async function drain(): Promise<void> {
    while (!stopped) {
      again = false;
      const row = await claim();
      if (row) await attempt(row);
      else if (!again) return;
    }
  }

  function run(): void {
    clearTimeout(timer);
    timer = undefined;
    running = drain()
      .catch((error: unknown) =>
        log.warn({ err: error }, `${options.name} check failed; will try again`),
      )
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(run, options.pollIntervalMs).unref();
      });
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      run();
    },
    kick() {
      if (stopped) return;
      if (running) again = true;
      else run();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
