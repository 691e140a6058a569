import { z } from 'zod';
import type { Todo } from './todo.js';

/** What a wake says: a todo is claimable, an approval waits for its human, or one was decided. */
export const WAKE_EVENTS = ['claimable', 'approval', 'verdict'] as const;
export type WakeEvent = (typeof WAKE_EVENTS)[number];

/**
 * The payload of a wake, a NOTIFY on `<schema>.wakes`: which todo, and who may act on it, so that
 * a listener routes it without reading the todo. Two writers send it, as the same JSON: the
 * todos' trigger, inside the commit of a change (`todo_wake` in migrations/0047), and the wake
 * notifier, after the commit of a new todo (src/wakes/wake-notifier.ts, with `wakeOf`).
 */
export const Wake = z.strictObject({
  todo_id: z.number().int().positive(),
  queue: z.string(),
  /** Only this principal may claim (or, for an approval, decide) the todo. */
  assignee: z.string().nullable(),
  /** Approvals: the principal that asked, who hears the verdict. */
  requested_by: z.string().nullable(),
  /**
   * The id of the transaction that wrote the change (`pg_current_xact_id()`): with todo_id, it
   * names this wake however many processes hear it, whichever writer sent it.
   */
  wake_id: z.string().regex(/^[1-9][0-9]*$/),
  event: z.enum(WAKE_EVENTS),
});
export type Wake = z.infer<typeof Wake>;

/** The wake of `todo` as written by the transaction `wakeId`, field for field as the trigger's. */
export function wakeOf(
  todo: Pick<Todo, 'id' | 'queue' | 'kind' | 'assignee' | 'requested_by' | 'verdict'>,
  wakeId: string,
): Wake {
  return {
    todo_id: todo.id,
    queue: todo.queue,
    assignee: todo.assignee,
    requested_by: todo.requested_by,
    wake_id: wakeId,
    event: todo.verdict !== null ? 'verdict' : todo.kind === 'approval' ? 'approval' : 'claimable',
  };
}
