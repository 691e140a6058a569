import type postgres from 'postgres';

/**
 * The statement that deletes, at most `batch` at a time, the Slack messages of approvals that
 * ended (a verdict, an expiry, a cancel) before `cutoff`, as their history goes; a message whose
 * posting or closing update is still owed stays until it is sent. For retention, which runs it
 * until a batch comes back short.
 */
export function pruneSlackMessages(sql: postgres.Sql, cutoff: Date, batch: number) {
  return sql`
    delete from slack_messages where todo_id in (
      select m.todo_id from slack_messages m join todos t on t.id = m.todo_id
      where t.state in ('done', 'canceled') and t.updated_at < ${cutoff}
        and not exists (select 1 from outbox o
                        where o.todo_id = m.todo_id and o.kind = 'slack' and o.state = 'pending')
      order by m.todo_id limit ${batch} for update of m skip locked)`;
}
