export interface BackgroundLoop {
  /** Starts the passes (again, after a stop); a loop already started is left as it is. */
  start(): void;
  /** A pass as soon as may be: now, or once more right after the one running. */
  kick(): void;
  /** No pass starts any more; resolves once the one running has ended. */
  stop(): Promise<void>;
}

export interface BackgroundLoopOptions {
  /** The rest between the end of one pass and the start of the next. */
  everyMs: number;
  /** One pass of the work. */
  pass: () => Promise<unknown> | void;
  /** A pass failed; the next one tries again. Not called once the loop is stopping. */
  onError: (error: unknown) => void;
  /** The first pass waits `everyMs` too, rather than run at once. */
  delayFirst?: boolean;
}

/**
 * Work done in the background of a server process, a pass at a time: passes never overlap (a
 * slow one delays the next rather than run beside it), a failed pass is reported and the next
 * tries again, a kick brings the next pass forward, and a stop waits for the pass in flight.
 * Its timers never keep the process alive.
 */
export function backgroundLoop(options: BackgroundLoopOptions): BackgroundLoop {
  const { everyMs, pass, onError } = options;
  let started = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;

  const schedule = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(run, ms).unref();
  };

  function run(): void {
    clearTimeout(timer);
    timer = undefined;
    again = false;
    running = Promise.resolve()
      .then(pass)
      .then(
        () => {},
        (error: unknown) => {
          if (started) onError(error);
        },
      )
      .finally(() => {
        running = undefined;
        if (started) schedule(again ? 0 : everyMs);
      });
  }

  return {
    start() {
      if (started) return;
      started = true;
      // A pass still running from before a stop schedules the next itself when it ends.
      if (!running) schedule(options.delayFirst ? everyMs : 0);
    },
    kick() {
      if (!started) return;
      if (running) again = true;
      else schedule(0);
    },
    async stop() {
      started = false;
      clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
