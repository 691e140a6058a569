import type postgres from 'postgres';
import type { Disposition } from '../../contract/deliveries.js';

/** A delivery that carried a verdict: whether it was carried out, and why. */
export async function settleDeliveryVerdict(
  tx: postgres.TransactionSql,
  id: number,
  disposition: Extract<Disposition, 'verdict' | 'verdict_refused'>,
  note: string | null,
): Promise<void> {
  await tx`update deliveries set disposition = ${disposition}, note = ${note} where id = ${id}`;
}

/** A delivery whose todo was found by its key (or made after its row): the row points at it. */
export async function linkDeliveryTodo(
  tx: postgres.TransactionSql,
  id: number,
  todoId: number,
  note: string | null,
): Promise<void> {
  await tx`update deliveries set todo_id = ${todoId}, note = ${note} where id = ${id}`;
}
