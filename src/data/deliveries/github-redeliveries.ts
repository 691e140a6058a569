import type postgres from 'postgres';

/** An event GitHub was asked to deliver again: its latest attempt then, and how often. */
export interface AskedRedelivery {
  guid: string;
  attempt_id: string;
  requests: number;
  accepted: boolean;
}

/**
 * Where a pass over GitHub's delivery log starts: `sinceMs` ago, but never before this database
 * existed (a delivery from before it was another deployment's, or one before this
 * installation). GitHub's times are whole seconds.
 */
export async function redeliveryWindowStart(sql: postgres.Sql, sinceMs: number): Promise<Date> {
  const [{ since }] = await sql<[{ since: Date }]>`
    select date_trunc('second', greatest(now() - make_interval(secs => ${sinceMs / 1000}),
                                         (select min(applied_at) from schema_migrations))) as since`;
  return since;
}

/**
 * Which of these events have a record of GitHub's, under their delivery id. Any record means it
 * arrived, a `duplicate` too (its body had come before under another id).
 */
export async function recordedGitHubDeliveries(
  sql: postgres.Sql,
  guids: string[],
): Promise<Set<string>> {
  const rows = await sql<{ delivery_id: string }[]>`
    select distinct delivery_id from deliveries
    where source = 'github' and delivery_id = any(${guids})`;
  return new Set(rows.map((row) => row.delivery_id));
}

/** What was asked before of each of these events, by guid. */
export async function askedRedeliveries(
  sql: postgres.Sql,
  guids: string[],
): Promise<Map<string, AskedRedelivery>> {
  const rows = await sql<AskedRedelivery[]>`
    select guid, attempt_id::text, requests, accepted from github_redeliveries
    where guid = any(${guids})`;
  return new Map(rows.map((row) => [row.guid, row]));
}

/**
 * Writes down that an event is being asked for again, before it is asked, so that whichever
 * process runs the next pass knows; returns how often it has been asked, this time included.
 */
export async function recordRedeliveryRequest(
  sql: postgres.Sql,
  attempt: {
    guid: string;
    event: string;
    action: string | null;
    id: number | bigint;
    status_code: number;
  },
): Promise<number> {
  const [row] = await sql<[{ requests: number }]>`
    insert into github_redeliveries (guid, event, action, attempt_id, status_code)
    values (${attempt.guid}, ${attempt.event.slice(0, 100)}, ${attempt.action?.slice(0, 100) ?? null},
            ${String(attempt.id)}, ${attempt.status_code})
    on conflict (guid) do update
      set requests = github_redeliveries.requests + 1, attempt_id = excluded.attempt_id,
          status_code = excluded.status_code, requested_at = now(), accepted = false, error = null
    returning requests`;
  return row.requests;
}

/** GitHub took the request: the redelivery is on its way. */
export async function markRedeliveryAccepted(sql: postgres.Sql, guid: string): Promise<void> {
  await sql`update github_redeliveries set accepted = true where guid = ${guid}`;
}

/** GitHub refused the request, for this reason. */
export async function markRedeliveryRefused(
  sql: postgres.Sql,
  guid: string,
  error: string,
): Promise<void> {
  await sql`update github_redeliveries set error = ${error.slice(0, 500)} where guid = ${guid}`;
}
