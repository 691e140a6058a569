import type postgres from 'postgres';
import type {
  Delivery as WireDelivery,
  DeliveryRecord as WireDeliveryRecord,
} from '../../contract/deliveries.js';

/** A delivery as listed here: as the API shows it, but for its time, a Date until sent. */
export type DeliveryRow = Omit<WireDelivery, 'received_at'> & { received_at: Date };

/** A delivery in full: with its facts and the body's SHA-256. */
export type DeliveryRecord = Omit<WireDeliveryRecord, 'received_at'> & { received_at: Date };

/**
 * Every provider's deliveries, newest first (one id space: GitHub's and every source's), one
 * page at a time: what `GET /api/v1/deliveries` lists and the console's Deliveries page shows.
 * `repository` and `sender` are the subject and actor under the names GitHub's always had.
 */
export async function listDeliveries(
  sql: postgres.Sql,
  options: { limit: number; before?: number | undefined; source?: string | undefined },
): Promise<(DeliveryRow & { repository: string | null; sender: string | null })[]> {
  const { limit, before, source } = options;
  return sql<(DeliveryRow & { repository: string | null; sender: string | null })[]>`
    select id, source, kind, delivery_id, event, action, subject, actor,
           subject as repository, actor as sender, installation_id, disposition::text, todo_id,
           note, received_at
    from deliveries
    where ${before ? sql`id < ${before}` : sql`true`}
      and ${source ? sql`source = ${source}` : sql`true`}
    order by id desc
    limit ${limit}`;
}

/** The record of delivery `id`, whichever provider sent it; null if there is none. */
export async function readDelivery(sql: postgres.Sql, id: number): Promise<DeliveryRecord | null> {
  const [row] = await sql<DeliveryRecord[]>`
    select id, source, kind, delivery_id, event, action, subject, actor, installation_id,
           disposition::text, todo_id, note, facts, encode(body_sha256, 'hex') as body_sha256,
           received_at
    from deliveries where id = ${id}`;
  return row ?? null;
}

/**
 * Why each of these todos was quarantined, by the delivery that made it (its note: the sender
 * and what was not trusted), whichever provider sent it. Todos no delivery made are left out.
 */
export async function quarantineReasons(
  sql: postgres.Sql,
  todoIds: number[],
): Promise<Map<number, string | null>> {
  // The first: a later delivery that found the todo by its key says only that it existed.
  const rows = await sql<{ todo_id: number; note: string | null }[]>`
    select distinct on (todo_id) todo_id, note from deliveries
    where todo_id = any(${todoIds}::bigint[]) and disposition = 'quarantined'
    order by todo_id, id`;
  return new Map(rows.map((row) => [row.todo_id, row.note]));
}

/** A delivery as a rules dry run replays it: what it was, with the facts the rules read. */
export type ReplayedDelivery = Pick<
  DeliveryRow,
  'id' | 'delivery_id' | 'event' | 'action' | 'disposition' | 'todo_id' | 'received_at'
> & { facts: unknown };

/** A source's latest deliveries but for duplicates, newest first: a rules dry run's input. */
export async function recentSourceDeliveries(
  sql: postgres.Sql,
  source: string,
  limit: number,
): Promise<ReplayedDelivery[]> {
  return sql<ReplayedDelivery[]>`
    select id, delivery_id, event, action, disposition::text, todo_id, facts, received_at
    from deliveries
    where source = ${source} and disposition <> 'duplicate'
    order by id desc limit ${limit}`;
}
