import type postgres from 'postgres';
import { oneLine, type Doorbell } from '../contract/doorbell.js';
import { recordEvent, type Wake } from '../data/index.js';
import type { LocalSessions } from './local-sessions.js';
import { DISPATCHER } from './take-ring.js';

/**
 * An approval (to its assignee) or a verdict (to whoever asked) goes to every live session of
 * that principal; each process covers its own, recording each push. Where the principal has none
 * anywhere, `unattended` goes on down the ladder (its webhook, else the wake is stored).
 */
export async function broadcastNotice(
  {
    sql,
    sessions,
    sessionTtlMs,
    unattended,
  }: {
    sql: postgres.Sql;
    sessions: LocalSessions;
    sessionTtlMs: number;
    unattended: (wake: Wake, principal: string, doorbell: Doorbell) => Promise<void>;
  },
  wake: Wake,
): Promise<void> {
  const principal = wake.event === 'approval' ? wake.assignee : wake.requested_by;
  if (!principal) return;
  const consumers = sessions.of(principal);
  const elsewhere =
    consumers.length === 0 &&
    (
      await sql`
        select 1 from consumer_sessions s
        join consumer_processes pr on pr.id = s.process_id
        where s.principal = ${principal}
          and pr.seen_at > now() - make_interval(secs => ${sessionTtlMs / 1000})
        limit 1`
    ).length > 0;
  if (elsewhere) return;
  const [todo] = await sql<NoticeTodo[]>`
    select id, queue, title, requested_by, request_id, about_todo_id, verdict, decided_by, summary
    from todos where id = ${wake.todo_id}`;
  if (!todo) return;
  const doorbell = noticeDoorbell(wake, todo);
  if (consumers.length === 0) return unattended(wake, principal, doorbell);
  for (const consumer of consumers) {
    const delivered = await sessions.push(consumer, doorbell);
    await recordEvent(sql, {
      todoId: todo.id,
      actor: DISPATCHER,
      action: 'notified',
      data: {
        principal: consumer.principal.name,
        session: consumer.id,
        path: consumer.path,
        outcome: delivered ? 'delivered' : 'session gone',
      },
    });
  }
}

interface NoticeTodo {
  id: number;
  queue: string;
  title: string;
  requested_by: string | null;
  request_id: string | null;
  about_todo_id: number | null;
  verdict: 'allow' | 'deny' | null;
  decided_by: string | null;
  summary: string | null;
}

function noticeDoorbell(wake: Wake, todo: NoticeTodo): Doorbell {
  return wake.event === 'approval'
    ? {
        type: 'approval',
        event: 'approval',
        todo_id: todo.id,
        queue: todo.queue,
        kind: 'approval',
        title: todo.title,
        requested_by: todo.requested_by,
        request_id: todo.request_id,
        content: oneLine(`switchboard: approval #${todo.id} waits for you — ${todo.title}`),
      }
    : {
        type: 'verdict',
        event: 'verdict',
        todo_id: todo.id,
        queue: todo.queue,
        kind: 'approval',
        verdict: todo.verdict!,
        decided_by: todo.decided_by!,
        note: todo.summary,
        request_id: todo.request_id,
        about_todo_id: todo.about_todo_id,
        content: oneLine(
          `switchboard: approval #${todo.id} ${todo.verdict === 'allow' ? 'allowed' : 'denied'} by ${todo.decided_by}` +
            (todo.summary ? ` — ${todo.summary}` : ''),
        ),
      };
}
