import type postgres from 'postgres';

/**
 * Where the walk over finished todos stopped: the history of every finished todo before it has
 * been pruned already, so the next pass starts there instead of walking them all again. `at` is
 * PostgreSQL's text of the timestamp, microseconds and all (a JavaScript Date keeps milliseconds).
 */
export interface HistoryCursor {
  at: string;
  id: number;
}

/**
 * The history of todos that finished (done, canceled, failed for good) before the cutoff, but for
 * each one's last event, walked in the order they finished (todos_finished_idx) from the cursor.
 * A todo's events are its own rows: deleting them locks no todo and waits for no writer.
 */
export async function pruneFinishedHistories(
  sql: postgres.Sql,
  cutoff: Date,
  batch: number,
  options: {
    /** Where the last pass stopped (kept by the caller; updated in place). */
    cursor?: { history: HistoryCursor | null } | undefined;
    /** Stops between two statements. */
    signal?: AbortSignal | undefined;
  },
): Promise<number> {
  const todosPerBatch = Math.max(1, Math.floor(batch / 10));
  const cursor = options.cursor ?? { history: null };
  let deleted = 0;
  while (!options.signal?.aborted) {
    const from = cursor.history;
    const [result] = await sql<[{ events: number; todos: number; at: string | null; id: string }]>`
      with finished as (
        select t.id, t.updated_at from todos t
        where (t.state in ('done', 'canceled') or (t.state = 'failed' and t.available_at is null))
          and t.updated_at < ${cutoff}
          -- Sent as text: a parameter typed timestamptz goes through a JavaScript Date, which
          -- drops the microseconds, and the walk would take the cursor's own todo again.
          and ${from ? sql`(t.updated_at, t.id) > (${from.at}::text::timestamptz, ${from.id})` : sql`true`}
        order by t.updated_at, t.id
        limit ${todosPerBatch}
      ), gone as (
        delete from todo_events e using finished f
        where e.todo_id = f.id
          and (e.at, e.id) < (select l.at, l.id from todo_events l where l.todo_id = f.id
                              order by l.at desc, l.id desc limit 1)
        returning 1
      ), last as (
        select updated_at, id from finished order by updated_at desc, id desc limit 1
      )
      select (select count(*) from gone)::int as events,
             (select count(*) from finished)::int as todos,
             (select updated_at::text from last) as at,
             (select id from last) as id`;
    deleted += result.events;
    if (result.todos === 0 || result.at === null) return deleted;
    cursor.history = { at: result.at, id: Number(result.id) };
    if (result.todos < todosPerBatch) return deleted;
  }
  return deleted;
}
