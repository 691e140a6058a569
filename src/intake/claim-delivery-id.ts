import type postgres from 'postgres';
import type { Delivery } from '../contract/deliveries.js';
import type { Disposition } from '../providers/decide-delivery.js';

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

export type Arrival =
  /** The delivery's row, under its disposition: the id was free, and the body is new. */
  | { id: number; outcome: 'claimed' }
  /** Recorded as a `duplicate` of the delivery that body was first recorded under. */
  | { id: number; outcome: 'replay'; note: string }
  /** Nothing recorded: a delivery under this id was recorded (or is being) already. */
  | { id: null; outcome: 'taken' };

/**
 * Records a delivery's arrival in one round trip: the lock on its body's hash and one statement
 * that looks for an earlier copy and inserts the row, sent together (postgres.js pipelines a
 * transaction's statements; PostgreSQL runs them one after the other, the second in a snapshot
 * taken once the lock is held).
 *
 * The replay defence every provider shares: a provider's delivery id is a header its signature
 * does not cover (GitHub, Gitea, Forgejo, GitLab's token), or one its sender changes on a manual
 * resend (Gitea's "Replay" sends a new id), so the same signed body under another id, within
 * `replayWindowMs` (0: off), is the same event again and is recorded as a `duplicate`. A delivery
 * recorded `unreadable` was never understood, so it holds nothing against a corrected one (nor
 * does its id: migrations 0021 and 0030). The lock makes two copies of one body arriving at once
 * be weighed one after the other: the second sees the first once it committed, whatever ids they
 * carry. Otherwise the row claims its id; a redelivery under a taken id waits for the first to
 * commit and is told `taken`.
 */
export async function claimDeliveryId(
  tx: postgres.TransactionSql,
  row: ArrivalRow,
  replayWindowMs: number,
): Promise<Arrival> {
  const earlier =
    replayWindowMs > 0
      ? tx`source = ${row.source} and body_sha256 = ${row.body_sha256}
           and received_at > now() - make_interval(secs => ${replayWindowMs / 1000})
           and disposition not in ('duplicate', 'unreadable')
           and delivery_id <> ${row.delivery_id}`
      : tx`false`;
  const [, [arrived]] = await Promise.all([
    replayWindowMs > 0
      ? tx`select pg_advisory_xact_lock(hashtextextended(${`switchboard.body:${row.body_sha256.toString('hex')}`}, 0))`
      : [],
    tx<{ id: number; replay_of: string | null; note: string | null }[]>`
      with earlier as (
        select delivery_id from deliveries where ${earlier} order by id limit 1
      )
      insert into deliveries (source, kind, delivery_id, event, action, subject, actor,
                              installation_id, facts, body_sha256, disposition, note)
      select ${row.source}, ${row.kind}, ${row.delivery_id}, ${row.event}, ${row.action}::text,
             ${row.subject}::text, ${row.actor}::text, ${row.installation_id}::bigint,
             ${tx.json(row.facts as never)}, ${row.body_sha256},
             case when earlier.delivery_id is null then ${row.disposition}::delivery_disposition
                  else 'duplicate' end,
             case when earlier.delivery_id is null then ${row.note}::text
                  else 'a replay of delivery ' || earlier.delivery_id
                       || ' (the same signed body under another delivery id)' end
      from (select) arriving left join earlier on true
      on conflict (source, delivery_id) where disposition not in ('duplicate', 'unreadable')
      do nothing
      returning id, (select delivery_id from earlier) as replay_of, note`,
  ]);
  if (!arrived) return { id: null, outcome: 'taken' };
  return arrived.replay_of === null
    ? { id: arrived.id, outcome: 'claimed' }
    : { id: arrived.id, outcome: 'replay', note: arrived.note! };
}
