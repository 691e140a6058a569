import type { ApiClient, ClaimedTodo, HeldBack } from './api-client.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, ConnectionError } from './client-errors.js';
import { isServerOutage } from './is-server-outage.js';
import type { WakeStream } from './open-wake-stream.js';
import { retryDelay } from './retry-delay.js';

export interface ClaimWaitingOptions {
  leaseSeconds?: number | undefined;
  /** When to give up, in ms since the epoch; Infinity waits for as long as it takes. */
  deadline: number;
  /** Stops waiting (a claim already sent still completes and is returned). */
  signal?: AbortSignal | undefined;
  /**
   * A claim the server could not answer (down, restarting, 5xx): it is tried again once the
   * server is back, until the deadline. Called when such an outage starts, with why.
   */
  onOutage?: (problem: Error) => void;
  /** Told each time the queue's limits hold its todos back (the last one stands at the deadline). */
  onHeldBack?: ((heldBack: HeldBack) => void) | undefined;
}

/** A clock behind the server's must not turn a wait until `next_at` into a spin. */
const HELD_BACK_MIN_WAIT_MS = 1000;

/**
 * Claims the oldest claimable todo on `queue`, waiting for one to arrive until the deadline:
 * claim once the stream listens, then again each time it rings. A queue whose limits hold its
 * todos back is claimed again at the time it names (or on a ring before it), not sooner. Null
 * when none came in time.
 *
 * A server that is down (at the start, with a stream that waits for it, or later) is waited for
 * within the same deadline. If it never answered by then, that is the error, not "none came":
 * an empty queue and an unreachable server are different news.
 */
export async function claimNextWaiting(
  client: ApiClient,
  wakes: WakeStream,
  queue: string,
  { leaseSeconds, deadline, signal, onOutage, onHeldBack }: ClaimWaitingOptions,
): Promise<ClaimedTodo | null> {
  if (!(await wakes.waitReady({ deadline, signal }))) {
    if (signal?.aborted) return null;
    throw wakes.problem ?? new ConnectionError(`${client.url} did not answer in time`);
  }
  let failures = 0;
  for (let attempt = 0; !signal?.aborted; attempt++) {
    const seen = wakes.rings;
    let answer: Awaited<ReturnType<ApiClient['claimNext']>>;
    try {
      answer = await client.claimNext(queue, leaseSeconds);
      failures = 0;
    } catch (error) {
      if (!isServerOutage(error) || Date.now() >= deadline) throw error;
      if (failures === 0) onOutage?.(error as Error);
      const pause = retryDelay(failures++, undefined, error);
      if (error instanceof ApiError && error.retryAfterMs !== undefined) {
        // The server said when: not sooner, whatever rings meanwhile.
        await sleep(Math.min(pause, deadline - Date.now()), undefined, { signal }).catch(() => {});
        continue;
      }
      // The stream rings when it has reconnected; a server whose stream stayed up (its
      // database was away) is asked again after a pause.
      await wakes.waitPast(seen, { deadline: Math.min(deadline, Date.now() + pause), signal });
      continue;
    }
    const { todo, held_back } = answer;
    if (todo) return todo;
    let until = deadline;
    if (held_back) {
      onHeldBack?.(held_back);
      const nextAt = Math.max(Date.parse(held_back.next_at), Date.now() + HELD_BACK_MIN_WAIT_MS);
      until = Math.min(deadline, nextAt);
    }
    const rang = await wakes.waitPast(seen, { deadline: until, attempt, signal });
    if (!rang && until === deadline) return null;
  }
  return null;
}
