import type { Credentials } from './api-client.js';
import { ApiError } from './client-errors.js';
import { followEventStream } from './follow-event-stream.js';
import { isServerOutage } from './is-server-outage.js';

/**
 * The server's wakes for one queue (or for all the caller's, without one), read from
 * `GET /api/v1/events`, as a doorbell: it counts rings (the stream said `ready` after a connect
 * or reconnect, or a wake arrived) and lets a claimer wait for the next one. The correct use — wait for `ready`, claim, and on every ring
 * claim again — cannot miss a todo: one committed before `ready` is found by the claim, one
 * committed after it rings.
 *
 * A server without the stream (404) makes every wait a poll with backoff instead.
 */
export interface WakeStream {
  /**
   * The stream is listening (or the server has none). Rejects when the first connect fails —
   * with `onWaiting`, only when it is refused (401, 403, …): a server that is down is waited for.
   */
  ready: Promise<void>;
  /** True once `ready`; false at `deadline` or on `signal`, still waiting for the server. */
  waitReady(options: WaitOptions): Promise<boolean>;
  /** Why the stream is not listening yet, while it waits for the server. */
  readonly problem: Error | undefined;
  /** How many times it rang so far: read it before claiming, then wait past it. */
  readonly rings: number;
  /** Whether the server has no event stream, so that waits are polls. */
  readonly polling: boolean;
  /**
   * True once it rang more than `seen` times (without a stream: once the next poll is due,
   * later for a higher `attempt`); false at `deadline` (ms since the epoch) or on `signal`.
   */
  waitPast(seen: number, options: WaitOptions): Promise<boolean>;
  close(): void;
}

export interface WaitOptions {
  deadline: number;
  /** How many waits in a row found nothing: a poll backs off from 250 ms to 5 s. */
  attempt?: number;
  signal?: AbortSignal | undefined;
}

export interface WakeStreamOptions {
  /**
   * Also ring whenever the ledger may have changed (`?changes=1`): for a view of what waits
   * (`inbox --watch`), which must show a verdict or a claim made elsewhere. Such a stream is
   * rung for no claimable todo: it watches, it never claims.
   */
  changes?: boolean;
  /**
   * Wait for a server that cannot be reached (or fails, 5xx) at the first connect, rather than
   * fail `ready`: under a supervisor, a worker may well start before its server. Called once,
   * with why, when the waiting starts.
   */
  onWaiting?: (problem: Error) => void;
}

const POLL_MIN_MS = 250;
const POLL_MAX_MS = 5000;

export function openWakeStream(
  credentials: Credentials,
  queue?: string,
  options: WakeStreamOptions = {},
): WakeStream {
  const closed = new AbortController();
  const waiters = new Set<(rang: boolean) => void>();
  let rings = 0;
  let polling = false;
  const ring = () => {
    rings++;
    for (const wake of [...waiters]) wake(true);
  };

  let markReady!: () => void;
  let failReady!: (error: unknown) => void;
  let isReady = false;
  let problem: Error | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = () => {
      isReady = true;
      resolve();
    };
    failReady = reject;
  });
  // Whoever waits on `ready` sees the failure; nobody waiting is no crash.
  ready.catch(() => {});

  // Rings on `ready` (after a connect or a reconnect) and on every wake or change.
  const listen = () =>
    followEventStream({
      credentials,
      query: { queue, changes: options.changes ? '1' : undefined },
      client: 'cli',
      signal: closed.signal,
      onEvent(event) {
        if (event === 'ready') {
          problem = undefined;
          markReady();
          ring();
        } else if (event === 'wake' || event === 'change') {
          ring();
        }
      },
      onLost(error) {
        if (isReady) return true; // it had worked: connect again, and ring on the next `ready`
        if (error instanceof ApiError && error.status === 404) {
          // A server without the stream: every wait is a poll.
          polling = true;
          markReady();
          return false;
        }
        if (!options.onWaiting || !isServerOutage(error)) {
          failReady(error);
          return false;
        }
        if (!problem) options.onWaiting(error);
        problem = error;
        return true;
      },
    });
  void listen();

  return {
    ready,
    get rings() {
      return rings;
    },
    get polling() {
      return polling;
    },
    get problem() {
      return problem;
    },
    waitReady({ deadline, signal }) {
      if (isReady) return Promise.resolve(true);
      return new Promise<boolean>((resolve, reject) => {
        const finish = (outcome: boolean | Error) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        };
        const onAbort = () => finish(false);
        const left = deadline - Date.now();
        const timer = Number.isFinite(left)
          ? setTimeout(() => finish(false), Math.max(0, left))
          : undefined;
        if (signal?.aborted) return finish(false);
        signal?.addEventListener('abort', onAbort, { once: true });
        ready.then(
          () => finish(true),
          (error: unknown) => finish(error instanceof Error ? error : new Error(String(error))),
        );
      });
    },
    async waitPast(seen, { deadline, attempt = 0, signal }) {
      if (!polling && rings > seen) return true;
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted) return false;
      const pollMs = Math.min(POLL_MAX_MS, POLL_MIN_MS * 2 ** attempt);
      return new Promise<boolean>((resolve) => {
        const finish = (rang: boolean) => {
          waiters.delete(finish);
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(rang);
        };
        const onAbort = () => finish(false);
        // A deadline of Infinity (the worker) must not reach setTimeout, which would fire at once.
        const timer =
          polling || Number.isFinite(left)
            ? setTimeout(
                () => finish(polling && pollMs < left),
                polling ? Math.min(pollMs, left) : left,
              )
            : undefined;
        if (!polling) waiters.add(finish);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    close() {
      closed.abort();
      for (const wake of [...waiters]) wake(false);
    },
  };
}
