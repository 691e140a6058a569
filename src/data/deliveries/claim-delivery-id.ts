import type postgres from 'postgres';
import type { Delivery, Disposition } from '../../contract/deliveries.js';
import { todoColumns, type PreparedTodo, type Todo } from '../index.js';
import { writeBacksInsert, type QueuedWriteBack } from '../outbox/enqueue-write-back.js';

/** A delivery's row, as recorded on arrival: what the API lists of it, with its facts and hash. */
export type ArrivalRow = Pick<
  Delivery,
  | 'source'
  | 'kind'
  | 'delivery_id'
  | 'event'
  | 'action'
  | 'subject'
  | 'actor'
  | 'installation_id'
  | 'note'
> & { facts: unknown; body_sha256: Buffer; disposition: Disposition };

/** The todo a delivery makes, checked (prepareTodo), with the write-backs that go with it. */
export interface ArrivingTodo {
  todo: PreparedTodo;
  writeBacks: Omit<QueuedWriteBack, 'todoId'>[];
}

export type Arrival =
  /**
   * The delivery's row, under its disposition: the id was free, and the body is new. With an
   * arriving todo, `todo` is the todo made with it, and null when its key was live (nothing
   * made: the caller finds the live one and links it).
   */
  | { id: number; outcome: 'claimed'; todo: Todo | null }
  /** Recorded as a `duplicate` of the delivery that body was first recorded under. */
  | { id: number; outcome: 'replay'; note: string }
  /** Nothing recorded: a delivery under this id was recorded (or is being) already. */
  | { id: null; outcome: 'taken' }
  /**
   * The id was claimed by a delivery that committed while this statement ran, after the todo
   * had been inserted: the transaction must be rolled back (the todo with it) and run again.
   */
  | { id: null; outcome: 'raced' };

/**
 * Records a delivery's arrival in one round trip: the lock on its body's hash and one statement
 * that looks for an earlier copy and inserts the row — and, with `arriving`, its todo, the todo's
 * first history row and its write-backs, the row pointing at the todo — sent together (postgres.js
 * pipelines a transaction's statements; PostgreSQL runs them one after the other, the second in
 * a snapshot taken once the lock is held).
 *
 * The replay defence every provider shares: a provider's delivery id is a header its signature
 * does not cover (GitHub, Gitea, Forgejo, GitLab's token), or one its sender changes on a manual
 * resend (Gitea's "Replay" sends a new id), so the same signed body under another id, within
 * `replayWindowMs` (0: off), is the same event again and is recorded as a `duplicate`. A delivery
 * recorded `unreadable` was never understood, so it holds nothing against a corrected one (nor
 * does its id: migrations 0021 and 0030). The lock makes two copies of one body arriving at once
 * be weighed one after the other: the second sees the first once it committed, whatever ids they
 * carry. Otherwise the row claims its id; a redelivery under a taken id waits for the first to
 * commit and is told `taken`. The todo is made only for a new body under an id not taken when the
 * statement began; a claim committed while it ran comes back `raced`.
 */
export async function claimDeliveryId(
  tx: postgres.TransactionSql,
  row: ArrivalRow,
  replayWindowMs: number,
  arriving?: ArrivingTodo,
): Promise<Arrival> {
  const recorded = tx`source = ${row.source} and disposition not in ('duplicate', 'unreadable')`;
  const earlier =
    replayWindowMs > 0
      ? tx`${recorded} and body_sha256 = ${row.body_sha256}
           and received_at > now() - make_interval(secs => ${replayWindowMs / 1000})
           and delivery_id <> ${row.delivery_id}`
      : tx`false`;
  const todoId = tx`(select id from t)`;
  const todo = arriving && {
    ctes: tx`, ${arriving.todo.insert(
      tx`not exists (select from earlier)
         and not exists (select from deliveries where ${recorded} and delivery_id = ${row.delivery_id})`,
    )}${
      arriving.writeBacks.length > 0
        ? tx`, w as (${writeBacksInsert(
            tx,
            arriving.writeBacks.map((writeBack) => ({
              ...writeBack,
              todoId,
            })),
            tx`exists (select from t)`,
          )})`
        : tx``
    }`,
    id: todoId,
    columns: tx`, ${todoColumns(tx)}`,
    join: tx`left join t on true`,
  };
  const [, [arrived]] = await Promise.all([
    replayWindowMs > 0
      ? tx`select pg_advisory_xact_lock(hashtextextended(${`switchboard.body:${row.body_sha256.toString('hex')}`}, 0))`
      : [],
    tx<(ArrivedRow & Partial<Todo>)[]>`
      with earlier as (
        select delivery_id from deliveries where ${earlier} order by id limit 1
      )${todo?.ctes ?? tx``}, arrived as (
        insert into deliveries (source, kind, delivery_id, event, action, subject, actor,
                                installation_id, facts, body_sha256, disposition, note, todo_id)
        select ${row.source}, ${row.kind}, ${row.delivery_id}, ${row.event}, ${row.action}::text,
               ${row.subject}::text, ${row.actor}::text, ${row.installation_id}::bigint,
               ${tx.json(row.facts as never)}, ${row.body_sha256},
               case when earlier.delivery_id is null then ${row.disposition}::delivery_disposition
                    else 'duplicate' end,
               case when earlier.delivery_id is null then ${row.note}::text
                    else 'a replay of delivery ' || earlier.delivery_id
                         || ' (the same signed body under another delivery id)' end,
               ${todo?.id ?? null}::bigint
        from (select) arriving left join earlier on true
        on conflict (source, delivery_id) where disposition not in ('duplicate', 'unreadable')
        do nothing
        returning id, note
      )
      select arrived.id as arrival_id, arrived.note as arrival_note,
             (select delivery_id from earlier) as replay_of${todo?.columns ?? tx``}
      from (select) one left join arrived on true ${todo?.join ?? tx``}`,
  ]);
  const { arrival_id: id, arrival_note: note, replay_of: replayOf, ...made } = arrived!;
  const todoMade = made.id == null ? null : (made as Todo);
  if (id === null) return todoMade ? { id, outcome: 'raced' } : { id, outcome: 'taken' };
  return replayOf === null
    ? { id, outcome: 'claimed', todo: todoMade }
    : { id, outcome: 'replay', note: note! };
}

interface ArrivedRow {
  arrival_id: number | null;
  arrival_note: string | null;
  replay_of: string | null;
}
