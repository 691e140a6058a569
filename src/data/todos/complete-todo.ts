import type postgres from 'postgres';
import { excerpt } from '../../contract/neutralise-text.js';
import type { Db } from '../../platform/db/open-database.js';
import { visibleTo, type Actor } from '../actor.js';
import { batched, inTransaction, isTransaction } from '../batched.js';
import { assertLeaseToken, updateLeasedTodo } from './lease.js';
import { todoColumns, type Todo } from './todo.js';
import type { TodoSource } from '../../contract/todo.js';
import { wakeHeldBack } from './wake-held-back.js';
import { assertStorable } from '../validate.js';

export interface Completion {
  summary?: string | null | undefined;
  /** Any JSON value the worker wants to leave behind. */
  result?: unknown;
}

/**
 * Work that must commit with the completion or not at all (e.g. queueing a write-back), for the
 * todos from `sources` only: a todo from anywhere else is completed in one statement of its own,
 * with no transaction around it.
 */
export interface AfterComplete {
  sources: readonly TodoSource[];
  run(tx: postgres.TransactionSql, todo: Todo): Promise<void>;
}

interface CompletionRequest {
  actor: Actor;
  id: number;
  leaseToken: string;
  summary: string | null;
  result: unknown;
  after: AfterComplete | undefined;
}

/**
 * Marks a claimed todo done, if `leaseToken` is still its lease. Concurrent completions by one
 * actor share a statement — each row fenced by its own token and lease end, each with its own
 * history row. A completion the shared statement did not take — its lease lost, the batch failed,
 * or its todo is from one of `after`'s sources — is done alone, in a transaction with `after`
 * when there is one, which also says why a refused one was refused.
 */
export async function completeTodo(
  db: Db,
  actor: Actor,
  id: number,
  leaseToken: string,
  completion: Completion = {},
  after?: AfterComplete,
): Promise<Todo> {
  const summary = completion.summary ?? null;
  const result = completion.result ?? null;
  assertStorable({ summary, result });
  assertLeaseToken(leaseToken);
  const request = { actor, id, leaseToken, summary, result, after };
  const key = JSON.stringify([actor.kind, actor.name, actor.via, after?.sources ?? []]);
  return (await completeBatched(db, key, request)) ?? completeAlone(db, request);
}

const completeBatched = batched(
  async (db: Db, _key: string, requests: CompletionRequest[]): Promise<(Todo | null)[]> => {
    const { actor, after } = requests[0]!;
    const rows = requests.map((request, ord) => ({
      ord,
      id: request.id,
      token: request.leaseToken,
      summary: request.summary,
      result: request.result,
      excerpt: request.summary === null ? null : excerpt(request.summary),
    }));
    // The batch's todos are looked up by key: `t.id = any(…)` as well as the join, and the lease
    // check written so that it is no index condition (`available_at - now()`, not
    // `available_at > now()`). Otherwise PostgreSQL, which guesses a hundred rows from
    // jsonb_to_recordset, took the claimable index's range of running leases — which statistics
    // from before a fleet got to work say is almost empty: a completion read every in-flight
    // todo (0.8 ms → 40 ms with 100,000 in flight); and with the ids only, it walked that range
    // once per id (0.22 → 0.35 ms a completion in `npm run bench:claim`).
    const complete = (tx: Db) => tx<(Todo & { ord: number })[]>`
      with v as (
        select * from jsonb_to_recordset(${tx.json(rows as never)}::jsonb)
          as v(ord int, id bigint, token uuid, summary text, result jsonb, excerpt text)
      ), t as (
        update todos t set state = 'done', available_at = null, lease_token = null,
                           summary = v.summary, result = nullif(v.result, 'null'::jsonb), updated_at = now()
        from v
        where t.id = v.id and t.id = any(${rows.map((row) => row.id)}::bigint[])
          and t.state = 'claimed' and t.lease_token = v.token
          and t.available_at - now() > interval '0' and ${visibleTo(tx, actor)}
          ${after ? tx`and t.source <> all(${after.sources as string[]}::text[])` : tx``}
        returning t.*, v.ord, v.excerpt as summary_excerpt
      ), e as (
        insert into todo_events (todo_id, actor_kind, actor, via, action, data)
        select t.id, ${actor.kind}, ${actor.name}, ${actor.via}, 'completed',
               case when t.summary_excerpt is not null then jsonb_build_object('summary', t.summary_excerpt) end
        from t
      ), freed as (${wakeHeldBack(tx)})
      select ${todoColumns(tx)}, t.ord from t where (select count(*) from freed) >= 0`;
    try {
      const done = await complete(db);
      const byOrd = new Map(done.map(({ ord, ...todo }) => [ord, todo]));
      return requests.map((_, ord) => byOrd.get(ord) ?? null);
    } catch (error) {
      // Alone, each completion meets its own fate (and its own error) rather than its batch's.
      if (isTransaction(db) || requests.length === 1) throw error;
      return requests.map(() => null);
    }
  },
);

/** One completion in a statement of its own: done, or refused with the reason. */
async function completeAlone(db: Db, request: CompletionRequest): Promise<Todo> {
  const { actor, id, leaseToken, summary, result, after } = request;
  const update = (tx: Db) =>
    updateLeasedTodo(tx, actor, id, leaseToken, {
      set: tx`state = 'done', available_at = null, lease_token = null,
              summary = ${summary}, result = ${result === null ? null : tx.json(result as never)}`,
      action: 'completed',
      data: summary === null ? null : { summary: excerpt(summary) },
      freesSlot: true,
    });
  if (!after) return update(db);
  return inTransaction(db, async (tx) => {
    const todo = await update(tx);
    await after.run(tx, todo);
    return todo;
  });
}
