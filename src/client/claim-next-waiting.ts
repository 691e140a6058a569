import type { ApiClient, ClaimedTodo } from './api-client.js';
import type { WakeStream } from './open-wake-stream.js';

export interface ClaimWaitingOptions {
  leaseSeconds?: number | undefined;
  /** When to give up, in ms since the epoch; Infinity waits for as long as it takes. */
  deadline: number;
  /** Stops waiting (a claim already sent still completes and is returned). */
  signal?: AbortSignal | undefined;
}

/**
 * Claims the oldest claimable todo on `queue`, waiting for one to arrive until the deadline:
 * claim once the stream listens, then again each time it rings. Null when none came in time.
 */
export async function claimNextWaiting(
  client: ApiClient,
  wakes: WakeStream,
  queue: string,
  { leaseSeconds, deadline, signal }: ClaimWaitingOptions,
): Promise<ClaimedTodo | null> {
  await wakes.ready;
  for (let attempt = 0; !signal?.aborted; attempt++) {
    const seen = wakes.rings;
    const { todo } = await client.claimNext(queue, leaseSeconds);
    if (todo) return todo;
    if (!(await wakes.waitPast(seen, { deadline, attempt, signal }))) return null;
  }
  return null;
}
