import type postgres from 'postgres';

export interface ReplayQuery {
  /** Only this source's deliveries count (`github`, or a source's name). */
  source: string;
  deliveryId: string;
  bodySha256: Buffer;
  /** 0: the check is off. */
  windowMs: number;
}

/**
 * The replay defence every provider shares. A provider's delivery id is a header its signature
 * does not cover (GitHub, Gitea, Forgejo, GitLab's token), or one its sender changes on a manual
 * resend (Gitea's "Replay" sends a new id): the same signed body under another id is the same
 * event again. Returns the delivery id that body was first recorded under, within the window,
 * or null. A delivery recorded `unreadable` was never understood, so it holds nothing against a
 * corrected one (nor does its id: migrations 0021 and 0030).
 *
 * Called first in the recording transaction, it takes a transaction-scoped lock on the body's
 * hash, so two copies of one body arriving at once are weighed one after the other: the second
 * sees the first once it committed, whatever ids they carry.
 */
export async function findReplay(
  tx: postgres.TransactionSql,
  query: ReplayQuery,
): Promise<string | null> {
  if (query.windowMs <= 0) return null;
  const hex = query.bodySha256.toString('hex');
  const since = tx`now() - make_interval(secs => ${query.windowMs / 1000})`;
  // Sent together (postgres.js pipelines a transaction's statements), run one after the other:
  // the look runs once the lock is held, in a snapshot of its own that sees what committed first.
  const [, [earlier]] = await Promise.all([
    tx`select pg_advisory_xact_lock(hashtextextended(${`switchboard.body:${hex}`}, 0))`,
    tx<{ delivery_id: string }[]>`
      select delivery_id from deliveries
      where source = ${query.source} and body_sha256 = ${query.bodySha256}
        and received_at > ${since}
        and disposition not in ('duplicate', 'unreadable')
        and delivery_id <> ${query.deliveryId}
      order by id limit 1`,
  ]);
  return earlier?.delivery_id ?? null;
}
