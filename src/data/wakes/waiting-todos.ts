import type postgres from 'postgres';
import type { Principal } from '../actor.js';

/**
 * What already waits for a consumer of `principal` (on `queues`, or every queue it may work):
 * the todos it may claim, and the approvals assigned to it, the oldest first, at most `limit`,
 * each with the count of all of them.
 */
export async function waitingTodos(
  sql: postgres.Sql,
  { principal, queues }: { principal: Principal; queues?: string[] | null | undefined },
  limit: number,
): Promise<{ todo_id: number; queue: string; kind: string; title: string; total: number }[]> {
  return sql<{ todo_id: number; queue: string; kind: string; title: string; total: number }[]>`
    select t.id as todo_id, t.queue, t.kind, t.title, count(*) over () as total
    from todos t
    where (
        t.state = 'pending' and t.available_at <= now() and t.kind <> 'approval'
        -- the same rule as ringing (take-ring.ts): an agent's queues, a human's own work, or
        -- the queues a consumer asked for
        and (t.queue = any(${principal.queues ?? []}::text[]) or t.assignee = ${principal.name}
             or ${principal.kind === 'human' && queues != null})
        and (t.assignee is null or t.assignee = ${principal.name})
        and (${queues ?? null}::text[] is null or t.queue = any(${queues ?? null}::text[]))
      ) or (t.kind = 'approval' and t.state = 'pending' and t.assignee = ${principal.name})
    order by t.id
    limit ${limit}`;
}
