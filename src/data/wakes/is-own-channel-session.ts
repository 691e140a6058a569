import type postgres from 'postgres';

/** Whether `sessionId` is a channel consumer attached right now by `principal`. */
export async function isOwnChannelSession(
  sql: postgres.Sql,
  sessionId: string,
  principal: string,
): Promise<boolean> {
  const [row] = await sql`
    select 1 from consumer_sessions where id = ${sessionId} and principal = ${principal} and path = 'channel'`;
  return row !== undefined;
}
