import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';

/**
 * Takes the first start's lock, held until the caller's transaction ends: several processes
 * starting at once wait their turn, and create one admin.
 */
export async function lockBootstrap(tx: postgres.TransactionSql): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended('switchboard.bootstrap', 0))`;
}

/** Whether the database has any human, revoked or not. */
export async function anyHuman(db: Db): Promise<boolean> {
  const [{ any }] = await db<
    [{ any: boolean }]
  >`select exists (select 1 from principals where kind = 'human') as any`;
  return any;
}
