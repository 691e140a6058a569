import type postgres from 'postgres';

/**
 * Whether a delivery under this id from `source` is recorded already (a duplicate or an
 * unreadable one holds nothing against it).
 */
export async function isDeliveryRecorded(
  sql: postgres.Sql,
  source: string,
  deliveryId: string,
): Promise<boolean> {
  const rows = await sql`
    select 1 from deliveries
    where source = ${source} and delivery_id = ${deliveryId}
      and disposition not in ('duplicate', 'unreadable')`;
  return rows.length > 0;
}
