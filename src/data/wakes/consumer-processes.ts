import type postgres from 'postgres';

/**
 * The process says it is alive, and learns how many server processes are, itself included (at
 * least one): the others are counted as rings count them alive (take-ring.ts), this one as it
 * beats.
 */
export async function beatProcess(
  sql: postgres.Sql,
  processId: string,
  sessionTtlMs: number,
): Promise<number> {
  const [row] = await sql<[{ live: number }?]>`
    with me as (
      insert into consumer_processes (id) values (${processId})
      on conflict (id) do update set seen_at = now()
      returning id
    )
    select 1 + (select count(*)::int from consumer_processes
                where id <> ${processId}
                  and seen_at > now() - make_interval(secs => ${sessionTtlMs / 1000})) as live
    from me`;
  return row?.live ?? 1;
}

/**
 * Removes the processes that stopped beating (for twice the session TTL) and their sessions;
 * returns the sessions removed.
 */
export async function removeDeadProcesses(
  sql: postgres.Sql,
  sessionTtlMs: number,
): Promise<{ id: string; path: string }[]> {
  return sql<{ id: string; path: string }[]>`
    with dead as (
      delete from consumer_processes
      where seen_at < now() - make_interval(secs => ${(sessionTtlMs * 2) / 1000})
    )
    delete from consumer_sessions s
    where not exists (
      select 1 from consumer_processes p
      where p.id = s.process_id
        and p.seen_at >= now() - make_interval(secs => ${(sessionTtlMs * 2) / 1000}))
    returning s.id, s.path`;
}

/** A process that closes, once its sessions are gone. */
export async function removeProcess(sql: postgres.Sql, processId: string): Promise<void> {
  await sql`delete from consumer_processes where id = ${processId}`;
}
