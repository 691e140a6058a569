import type { Db } from '../../platform/db/open-database.js';
import type { Todo } from './todo.js';

/** What an approval is about, as a verdict given where that work came from is checked against. */
export interface ApprovalSubject {
  /** The todo the approval is about: where it came from. */
  source: Todo['source'];
  meta: Record<string, unknown>;
  /** The approval's own assignee: who decides it (or an admin). */
  assignee: string | null;
}

/** The approval `approvalId` and the todo it is about, or undefined when either is missing. */
export async function approvalSubject(
  db: Db,
  approvalId: number,
): Promise<ApprovalSubject | undefined> {
  const [subject] = await db<ApprovalSubject[]>`
    select t.source, t.meta, a.assignee from todos a join todos t on t.id = a.about_todo_id
    where a.id = ${approvalId} and a.kind = 'approval'`;
  return subject;
}
