import type { ApiClient, Todo, TodoEvent } from './api-client.js';
import type { WakeStream } from './open-wake-stream.js';

export type ApprovalOutcome =
  /** A human decided: `todo.verdict` says how. */
  | { outcome: 'decided'; todo: Todo }
  /** A human (or the asking session going away) canceled it: `todo.summary` says why. */
  | { outcome: 'canceled'; todo: Todo }
  /** It expired without a verdict. */
  | { outcome: 'expired'; todo: Todo }
  /** Still open when the deadline came (or the wait was stopped). */
  | { outcome: 'waiting'; todo: Todo };

/**
 * A cancel rings nobody (only verdicts ring the asker), so the approval is also read again this
 * often: a canceled approval ends the wait within seconds rather than at the deadline.
 */
const RECHECK_MS = 5000;

/**
 * Waits for the verdict on approval `id` until `deadline` (ms since the epoch), reading it once
 * the stream listens and again on every ring: a verdict recorded before `ready` is found by the
 * first read, one recorded after it rings (verdicts ring the asker's sessions). An approval
 * that passes its expiry takes no verdict any more, so the wait ends there too. An aborted
 * `signal` ends it as the deadline would, once the approval has been read a last time.
 */
export async function waitForVerdict(
  client: ApiClient,
  wakes: WakeStream,
  id: number,
  deadline: number,
  signal?: AbortSignal,
): Promise<ApprovalOutcome> {
  await wakes.ready;
  for (let attempt = 0; ; attempt++) {
    const seen = wakes.rings;
    const { todo, history } = await client.getTodo(id);
    if (todo.state === 'done') return { outcome: 'decided', todo };
    if (todo.state === 'canceled') {
      return { outcome: expiredIn(history) ? 'expired' : 'canceled', todo };
    }
    const expiresAt = todo.expires_at ? Date.parse(todo.expires_at) : Infinity;
    if (expiresAt <= Date.now()) return { outcome: 'expired', todo };
    if (Date.now() >= deadline || signal?.aborted) return { outcome: 'waiting', todo };
    // Wake at the expiry too: nothing rings when an approval runs out.
    await wakes.waitPast(seen, {
      deadline: Math.min(deadline, expiresAt, Date.now() + RECHECK_MS),
      attempt,
      signal,
    });
  }
}

/** The sweeper (or a departed session) ends an approval with an `expired` event. */
function expiredIn(history: TodoEvent[]): boolean {
  return history.at(-1)?.action === 'expired';
}
