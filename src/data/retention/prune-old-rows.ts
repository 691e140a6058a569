import type postgres from 'postgres';
import { pruneFinishedHistories, pruneFinishedSecrets, type HistoryCursor } from '../index.js';
import { pruneSlackMessages } from '../slack/prune-slack-messages.js';

/** How many rows of each table one pass deleted. */
export interface Pruned {
  deliveries: number;
  outbox: number;
  github_redeliveries: number;
  todo_events: number;
  todo_secrets: number;
  slack_messages: number;
  auth_failures: number;
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
 * finished it, how), pending write-backs, and the history and withheld credentials of todos still
 * open. An approval's Slack message (where it was posted, to update it) goes with its approval's
 * history, once the update that closed it is no longer owed.
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
    todo_secrets: 0,
    slack_messages: 0,
    auth_failures: 0,
  };
  /**
   * Rows of `table` older than the cutoff by `age`, but for those `keep` holds back, a batch at a
   * time until a batch comes back short.
   */
  const prune = async (table: keyof Pruned, key: string, age: string, keep = sql``) =>
    inBatches(
      table,
      () => sql`
        delete from ${sql(table)} where ${sql(key)} in (
          select ${sql(key)} from ${sql(table)} where ${sql(age)} < ${cutoff} ${keep}
          order by ${sql(age)} limit ${batch} for update skip locked)`,
    );
  /** A statement deleting at most a batch, again until a batch comes back short. */
  const inBatches = async (
    table: keyof Pruned,
    statement: () => postgres.PendingQuery<postgres.Row[]>,
  ) => {
    while (!options.signal?.aborted) {
      const { count } = await statement();
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
  pruned.todo_secrets = await pruneFinishedSecrets(sql, cutoff, batch, options.signal);
  // Approvals that ended before the cutoff: Slack's store says which of its messages go.
  await inBatches('slack_messages', () => pruneSlackMessages(sql, cutoff, batch));
  // Counts of failed authentications whose window ended: the next failure starts afresh anyway.
  await inBatches(
    'auth_failures',
    () => sql`
    delete from auth_failures where (limiter, key) in (
      select limiter, key from auth_failures where window_ends_at < now()
      order by window_ends_at limit ${batch} for update skip locked)`,
  );
  return pruned;
}
