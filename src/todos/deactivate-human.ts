import type { Actor } from '../data/actor.js';
import {
  deactivateHuman as deactivate,
  type Deactivation,
} from '../data/principals/deactivate-human.js';
import type { TodoServiceState } from './todo-service-state.js';

/**
 * Deactivates a human (src/data/principals/deactivate-human.ts): their credentials are forgotten
 * by this process at once, and the approvals that went to their backup are announced to the
 * backup after the commit, as new ones are.
 */
export async function deactivateHuman(
  state: TodoServiceState,
  actor: Actor,
  name: string,
): Promise<Deactivation> {
  const { wakeId, ...deactivation } = await deactivate(state.sql, actor, name);
  state.hooks.revoked?.();
  const reassigned = deactivation.approvals.filter((approval) => approval.assignee !== null);
  if (reassigned.length > 0) state.hooks.announce?.(reassigned, wakeId);
  return deactivation;
}
