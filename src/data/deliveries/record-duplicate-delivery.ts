import type postgres from 'postgres';
import type { ArrivalRow } from './claim-delivery-id.js';

/**
 * Records a delivery as a `duplicate` receipt that makes nothing (its id was taken, or the same
 * body came under another id: `note` says which); returns its row's id.
 */
export async function recordDuplicateDelivery(
  tx: postgres.TransactionSql,
  row: Omit<ArrivalRow, 'disposition' | 'note'>,
  note: string | null,
): Promise<number> {
  const [{ id }] = await tx<[{ id: number }]>`
    insert into deliveries ${tx({ ...row, facts: tx.json(row.facts as never), disposition: 'duplicate', note })}
    returning id`;
  return id;
}
