import type postgres from 'postgres';
import type { SessionPath } from './take-ring.js';

/** A consumer attached to a process: a session that rings, from any process, may pick. */
export async function addConsumerSession(
  sql: postgres.Sql,
  session: {
    id: string;
    principal: string;
    processId: string;
    path: SessionPath;
    /** Only these queues (null: every queue the principal may work). */
    queues: string[] | null;
  },
): Promise<void> {
  await sql`
    insert into consumer_sessions (id, principal, process_id, path, queues)
    values (${session.id}, ${session.principal}, ${session.processId}, ${session.path}, ${session.queues}::text[])`;
}

/** A session left: no ring picks it any more. */
export async function removeConsumerSession(sql: postgres.Sql, id: string): Promise<void> {
  await sql`delete from consumer_sessions where id = ${id}`;
}

/** Every session of one process, which is closing. */
export async function removeProcessSessions(sql: postgres.Sql, processId: string): Promise<void> {
  await sql`delete from consumer_sessions where process_id = ${processId}`;
}
