import type postgres from 'postgres';
import { digestContent, type Doorbell } from '../contract/doorbell.js';
import type { ConsumerSpec } from './local-sessions.js';

const DIGEST_SIZE = 10;

/**
 * One message listing what already waits for a consumer that just attached, instead of a burst
 * of rings; undefined when nothing waits.
 */
export async function waitingDigest(
  sql: postgres.Sql,
  { principal, queues }: Pick<ConsumerSpec, 'principal' | 'queues'>,
): Promise<Doorbell | undefined> {
  const waiting = await sql<
    { todo_id: number; queue: string; kind: string; title: string; total: number }[]
  >`
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
    limit ${DIGEST_SIZE}`;
  if (waiting.length === 0) return undefined;
  const todos = waiting.map(({ todo_id, queue, kind, title }) => ({ todo_id, queue, kind, title }));
  const more = waiting[0]!.total - todos.length;
  return { type: 'digest', todos, more, content: digestContent(todos, more) };
}
