import type postgres from 'postgres';

/**
 * Makes the database give up on the rest of the caller's transaction after `ms`, rather than hold
 * a lock for a caller long gone. Sent at once (a query runs in the order it is executed), so that
 * it goes out ahead of the statements the caller makes next, in the same write.
 */
export function limitStatementTime(tx: postgres.TransactionSql, ms: number): Promise<unknown> {
  return tx`select set_config('statement_timeout', ${String(ms)}, true)`.execute();
}
