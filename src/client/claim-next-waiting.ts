import type { ApiClient, ClaimedTodo } from './api-client.js';
import { ConnectionError } from './client-errors.js';
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
}

/**
 * Claims the oldest claimable todo on `queue`, waiting for one to arrive until the deadline:
 * claim once the stream listens, then again each time it rings. Null when none came in time.
 *
 * A server that is down (at the start, with a stream that waits for it, or later) is waited for
 * within the same deadline. If it never answered by then, that is the error, not "none came":
 * an empty queue and an unreachable server are different news.
 */
export async function claimNextWaiting(
  client: ApiClient,
  wakes: WakeStream,
  queue: string,
  { leaseSeconds, deadline, signal, onOutage }: ClaimWaitingOptions,
): Promise<ClaimedTodo | null> {
  if (!(await wakes.waitReady({ deadline, signal }))) {
    if (signal?.aborted) return null;
    throw wakes.problem ?? new ConnectionError(`${client.url} did not answer in time`);
  }
  let failures = 0;
  for (let attempt = 0; !signal?.aborted; attempt++) {
    const seen = wakes.rings;
    try {
      const { todo } = await client.claimNext(queue, leaseSeconds);
      if (todo) return todo;
      failures = 0;
    } catch (error) {
      if (!isServerOutage(error) || Date.now() >= deadline) throw error;
      if (failures === 0) onOutage?.(error as Error);
      // The stream rings when it has reconnected; a server whose stream stayed up (its
      // database was away) is asked again after a pause.
      await wakes.waitPast(seen, {
        deadline: Math.min(deadline, Date.now() + retryDelay(failures++)),
        signal,
      });
      continue;
    }
    if (!(await wakes.waitPast(seen, { deadline, attempt, signal }))) return null;
  }
  return null;
}
