import type { ApiClient, ClaimedTodo, HeldBack } from './api-client.js';
import type { WakeStream } from './open-wake-stream.js';

export interface ClaimWaitingOptions {
  leaseSeconds?: number | undefined;
  /** When to give up, in ms since the epoch; Infinity waits for as long as it takes. */
  deadline: number;
  /** Stops waiting (a claim already sent still completes and is returned). */
  signal?: AbortSignal | undefined;
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
 */
export async function claimNextWaiting(
  client: ApiClient,
  wakes: WakeStream,
  queue: string,
  { leaseSeconds, deadline, signal, onHeldBack }: ClaimWaitingOptions,
): Promise<ClaimedTodo | null> {
  await wakes.ready;
  for (let attempt = 0; !signal?.aborted; attempt++) {
    const seen = wakes.rings;
    const { todo, held_back } = await client.claimNext(queue, leaseSeconds);
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
