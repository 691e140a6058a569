import type postgres from 'postgres';
import { wakeChannel } from '../index.js';

/**
 * NOTIFYs the wake channel with every payload, in one statement whose commit does not wait for
 * the disk (a doorbell needs no durability).
 */
export async function sendWakes(
  sql: postgres.Sql,
  schema: string,
  payloads: string[],
): Promise<void> {
  await sql`
    select pg_notify(${wakeChannel(schema)}, payload)
    from (select set_config('synchronous_commit', 'off', true)) quick,
         unnest(${payloads}::text[]) payload`;
}
