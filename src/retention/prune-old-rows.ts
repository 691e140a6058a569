import type postgres from 'postgres';

/** How many rows of each table one pass deleted. */
export interface Pruned {
  deliveries: number;
  outbox: number;
  github_redeliveries: number;
  todo_events: number;
}

/**
 * Where the walk over finished todos stopped: the history of every finished todo before it has
 * been pruned already, so the next pass starts there instead of walking them all again. `at` is
 * PostgreSQL's text of the timestamp, microseconds and all (a JavaScript Date keeps milliseconds).
 */
export interface HistoryCursor {
  at: string;
  id: number;
}

export interface PruneOptions {
  retentionDays: number;
  /** Rows per statement (1000); finished todos per statement is a tenth of it. */
  batchSize?: number;
  /** Where the last pass over finished todos stopped (kept by the caller; updated in place). */
  cursor?: { history: HistoryCursor | null };
  /** Stops between two statements. */
  signal?: AbortSignal;
}

/**
 * One pass of retention: everything older than `retentionDays` that nobody needs any more, in
 * small batches. Each batch is one statement on its own (its own short transaction): it takes
 * at most `batchSize` rows that no one holds (`for update skip locked`, so a writer holding one
 * of them is neither waited for nor blocked), deletes them, and commits. Kept, whatever their age:
 * the todos themselves (the durable, attributed record), each finished todo's last event (who
 * finished it, how), pending write-backs, and the history of todos still open.
 */
export async function pruneOldRows(sql: postgres.Sql, options: PruneOptions): Promise<Pruned> {
  const batch = options.batchSize ?? 1000;
  const [{ cutoff }] = await sql<[{ cutoff: Date }]>`
    select now() - make_interval(days => ${options.retentionDays}) as cutoff`;
  const pruned: Pruned = {
    deliveries: 0,
    outbox: 0,
    github_redeliveries: 0,
    todo_events: 0,
  };
  /**
   * Rows of `table` older than the cutoff by `age`, but for those `keep` holds back, a batch at a
   * time until a batch comes back short.
   */
  const prune = async (table: keyof Pruned, key: string, age: string, keep = sql``) => {
    while (!options.signal?.aborted) {
      const { count } = await sql`
        delete from ${sql(table)} where ${sql(key)} in (
          select ${sql(key)} from ${sql(table)} where ${sql(age)} < ${cutoff} ${keep}
          order by ${sql(age)} limit ${batch} for update skip locked)`;
      pruned[table] += count;
      // Fewer than a batch: nothing older is left, but for rows someone holds right now (the
      // next pass takes them).
      if (count < batch) return;
    }
  };
  await prune('deliveries', 'id', 'received_at');
  // Sent or given up: a pending write-back is still owed, however old.
  await prune('outbox', 'id', 'created_at', sql`and state <> 'pending'`);
  await prune('github_redeliveries', 'guid', 'requested_at');
  pruned.todo_events = await pruneFinishedHistories(sql, cutoff, batch, options);
  return pruned;
}

/**
 * The history of todos that finished (done, canceled, failed for good) before the cutoff, but for
 * each one's last event, walked in the order they finished (todos_finished_idx) from the cursor.
 * A todo's events are its own rows: deleting them locks no todo and waits for no writer.
 */
async function pruneFinishedHistories(
  sql: postgres.Sql,
  cutoff: Date,
  batch: number,
  options: PruneOptions,
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
