import type postgres from 'postgres';
import { readQueues } from '../data/index.js';
import {
  holdRingBack,
  pickRingTarget,
  takeRingAlone,
  takeRingAtOnce,
  type Ring,
  type RingRequest,
} from '../data/wakes/take-ring.js';

export {
  DISPATCHER,
  SESSION_RANKS,
  type Ring,
  type RingedTodo,
  type RingRequest,
  type RingTarget,
  type SessionPath,
} from '../data/wakes/take-ring.js';

/**
 * Takes the next ring of a claimable todo and picks whom it goes to (takeRingAtOnce). Every wake
 * of every todo comes through here, and it is the wake's path to a consumer, so it is one
 * statement. When the pick must wait (every session of the best rank is being rung for another
 * todo this instant) or the todo's queue has limits, that statement takes nothing, and the ring
 * is taken in a transaction with the pick instead (takeRingWithPick): a ring is never left taken
 * by a pick that failed, or the wake would be heard by nobody until its re-ring.
 */
export async function takeRing(sql: postgres.Sql, request: RingRequest): Promise<Ring | null> {
  const ring = await takeRingAtOnce(sql, request);
  return ring === 'pick_apart' ? takeRingWithPick(sql, request) : ring;
}

/**
 * The ring taken in one transaction with its pick, for a todo whose queue has limits (read first)
 * or whose best sessions are all busy (waited for): if the pick fails, the ring is not taken.
 */
function takeRingWithPick(sql: postgres.Sql, request: RingRequest): Promise<Ring | null> {
  return sql.begin(async (tx) => {
    const taken = await takeRingAlone(tx, request);
    if (!taken) return null;
    const { todo, rings, assignee, limited } = taken;
    if (limited) {
      // Its queue's limits hold it back: a consumer rung now would only be told to come back.
      // It is rung when it may be claimed — or sooner, when a slot frees (wake-held-back.ts).
      const [limits] = await readQueues(tx, [todo.queue], { countWaiting: false });
      if (limits?.held_back) {
        await holdRingBack(tx, todo.id, limits.held_back.next_at);
        return { todo, rings, target: null };
      }
    }
    const ring = { todo, rings, assignee, sessionTtlMs: request.sessionTtlMs };
    let picked = await pickRingTarget(tx, ring, false);
    // Every session of the best rank is being rung for another todo this instant: wait for one,
    // rather than fall to a lower rank or store a wake that a consumer was there to hear.
    if (picked === 'busy') picked = await pickRingTarget(tx, ring, true);
    return { todo, rings, target: picked === 'busy' ? null : picked };
  });
}
