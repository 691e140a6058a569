// The reference for the agents' MCP path: an MCP server that does only the protocol's work.
// node:http, the same MCP SDK as switchboard (Streamable HTTP, one SDK server and transport per
// session, as the SDK's own example has it), no authentication, and two tools whose whole work
// is one statement each on a five-column table: `claim_next` one UPDATE … SKIP LOCKED …
// RETURNING, `complete_todo` one UPDATE. No lease token, no history, no wake.
import type postgres from 'postgres';
import { z } from 'zod';
import { serveMcpSessions, type BareServer } from './serve-mcp-sessions.js';

export type { BareServer } from './serve-mcp-sessions.js';

/** The bare server's table, in `schema` (created), with the index any SKIP LOCKED queue has. */
export async function createBareJobs(sql: postgres.Sql, schema: string): Promise<void> {
  await sql`create schema if not exists ${sql(schema)}`;
  await sql`
    create table ${sql(schema)}.jobs (
      id bigint generated always as identity primary key,
      queue text not null,
      state text not null,
      locked_until timestamptz
    )`;
  await sql`create index jobs_pending_idx on ${sql(schema)}.jobs (queue, id) where state = 'pending'`;
}

/** `count` pending jobs on `queue`, in one statement, before anything is timed. */
export async function seedBareJobs(
  sql: postgres.Sql,
  schema: string,
  queue: string,
  count: number,
): Promise<void> {
  await sql`
    insert into ${sql(schema)}.jobs (queue, state)
    select ${queue}, 'pending' from generate_series(1, ${count}::int)`;
  await sql`vacuum analyze ${sql(schema)}.jobs`;
}

/** Serves MCP at /mcp on 127.0.0.1, claiming from `schema`.jobs through `sql`. */
export function startBareMcpServer(sql: postgres.Sql, schema: string): Promise<BareServer> {
  const jobs = sql(`${schema}.jobs`);
  return serveMcpSessions({
    name: 'bare',
    anyone: { name: 'anyone' },
    tools(server) {
      server.registerTool(
        'claim_next',
        { description: 'Claim the oldest pending job', inputSchema: { queue: z.string() } },
        async ({ queue }) => {
          const [job] = await sql<{ id: number }[]>`
            update ${jobs} set state = 'claimed', locked_until = now() + interval '300 s'
            where id = (
              select id from ${jobs} where queue = ${queue} and state = 'pending'
              order by id limit 1 for update skip locked
            )
            returning id`;
          const todo = job ? { id: Number(job.id) } : null;
          return {
            content: [{ type: 'text', text: JSON.stringify({ todo }) }],
            structuredContent: { todo },
          };
        },
      );
      server.registerTool(
        'complete_todo',
        {
          description: 'Finish a claimed job',
          inputSchema: { todo_id: z.number().int(), summary: z.string().optional() },
        },
        async ({ todo_id }) => {
          await sql`update ${jobs} set state = 'done' where id = ${todo_id} and state = 'claimed'`;
          const todo = { id: todo_id };
          return {
            content: [{ type: 'text', text: JSON.stringify({ todo }) }],
            structuredContent: { todo },
          };
        },
      );
    },
  });
}
