import type { Db } from '../../platform/db/open-database.js';

export type { Wake } from '../../contract/wake.js';

/** The NOTIFY channel the todos triggers send wakes on (see migrations/0002_create_todos.sql). */
export const wakeChannel = (schema: string) => `${schema}.wakes`;

/**
 * The id of the transaction `tx` writes in, which names the wakes of what it writes
 * (src/contract/wake.ts): for a writer that announces them after its commit.
 */
export async function writingTransactionId(tx: Db): Promise<string> {
  const [{ id }] = await tx<[{ id: string }]>`select pg_current_xact_id()::text as id`;
  return id;
}
