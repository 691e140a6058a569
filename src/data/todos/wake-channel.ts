/** The NOTIFY channel the todos triggers send wakes on (see migrations/0002_create_todos.sql). */
export const wakeChannel = (schema: string) => `${schema}.wakes`;

/** The payload of a wake: which todo, and who may act on it. */
export interface Wake {
  todo_id: number;
  queue: string;
  /** Only this principal may claim (or, for an approval, decide) the todo. */
  assignee: string | null;
  /** Approvals: the principal that asked, who hears the verdict. */
  requested_by: string | null;
  /** The writing transaction: with todo_id, it names this wake however many processes hear it. */
  wake_id: string;
  event: 'claimable' | 'approval' | 'verdict';
}
