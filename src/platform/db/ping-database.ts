import type postgres from 'postgres';

/** Resolves once the database answers a statement; rejects when it cannot. */
export async function pingDatabase(sql: postgres.Sql): Promise<void> {
  await sql`select 1`;
}
