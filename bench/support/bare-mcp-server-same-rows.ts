// The reference for the agents' MCP path that writes the same rows as switchboard and keeps the
// same guarantees, the cheapest way: the bare MCP server (same SDK, serve-mcp-sessions.ts), plus
// a bearer token checked on every request (its SHA-256 looked up, then kept in memory for a
// minute, forgotten at once when a revocation is announced, as switchboard's token cache does),
// a claim that is exclusive and leased (SKIP LOCKED, a fresh lease token and a lease end), a
// completion fenced by that token and the lease's end, and the history row of each — one
// statement per call. Its tables are switchboard's `todos` and `todo_events` as migrations leave
// them (columns, indexes, the lease rule), and the columns of `principals` and `tokens` that
// authentication reads. Not in it: JSON-RPC batches' rate limits, queue limits, approvals,
// assignees, quarantine, wakes, whole todos in the answers.
import { createHash, randomBytes } from 'node:crypto';
import type postgres from 'postgres';
import { z } from 'zod';
import { serveMcpSessions, type BareServer } from './serve-mcp-sessions.js';

const LEASE_SECONDS = 300;
/** A principal seen within this long is taken from memory, as switchboard's token cache does. */
const TOKEN_TTL_MS = 60_000;
const TOKEN = /^sbk_[A-Za-z0-9_-]{43}$/;

interface Principal {
  id: number;
  name: string;
  queues: string[];
}

/** The reference's tables, in `schema` (created). */
export async function createSameRowsLedger(sql: postgres.Sql, schema: string): Promise<void> {
  const s = sql(schema);
  await sql`create schema if not exists ${s}`;
  await sql`create type ${s}.principal_kind as enum ('human', 'agent')`;
  await sql`create type ${s}.todo_state as enum ('pending', 'claimed', 'done', 'failed', 'canceled', 'quarantined')`;
  await sql`create type ${s}.actor_kind as enum ('human', 'agent', 'system')`;
  await sql`
    create table ${s}.principals (
      id bigint generated always as identity primary key,
      name text not null unique,
      kind ${s}.principal_kind not null,
      owner text references ${s}.principals (name),
      queues text[],
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    )`;
  await sql`
    create table ${s}.tokens (
      id bigint generated always as identity primary key,
      principal_id bigint not null references ${s}.principals (id),
      hash bytea not null unique check (length(hash) = 32),
      created_at timestamptz not null default now(),
      revoked_at timestamptz,
      expires_at timestamptz
    )`;
  // A revocation is announced in its transaction; every process forgets its tokens on hearing it.
  await sql`
    create function ${s}.notify_revocation() returns trigger language plpgsql as $$
    begin
      perform pg_notify(tg_table_schema || '.revocations', tg_table_name);
      return null;
    end
    $$`;
  for (const table of ['tokens', 'principals']) {
    await sql`
      create trigger ${sql(`${table}_notify_revocation`)}
        after update of revoked_at on ${s}.${sql(table)} for each row
        when (new.revoked_at is distinct from old.revoked_at)
        execute function ${s}.notify_revocation()`;
  }
  await sql`
    create table ${s}.todos (
      id bigint generated always as identity primary key,
      queue text not null,
      kind text not null,
      title text not null,
      body text,
      state ${s}.todo_state not null default 'pending',
      source text not null,
      url text,
      attributed_to text not null,
      assignee text,
      idempotency_key text,
      available_at timestamptz,
      claimed_by text,
      lease_token uuid,
      attempt integer not null default 0,
      max_attempts integer not null default 5,
      summary text,
      result jsonb,
      requested_by text,
      request_id text,
      about_todo_id bigint,
      expires_at timestamptz,
      verdict text,
      decided_by text,
      decided_at timestamptz,
      meta jsonb not null default '{}',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      constraint todos_lease_matches_state check (
        (state = 'claimed') = (lease_token is not null)
        and (state <> 'claimed' or (claimed_by is not null and available_at is not null))
        and (available_at is null or state in ('pending', 'claimed', 'failed'))
      )
    )`;
  // Every index switchboard's todos have: a claim or a completion moves indexed columns, so each
  // gets a new entry on every such update.
  await sql`create index on ${s}.todos (queue, available_at, id) where available_at is not null`;
  await sql`
    create unique index on ${s}.todos (queue, idempotency_key)
    where idempotency_key is not null
      and (state in ('pending', 'claimed', 'quarantined') or (state = 'failed' and available_at is not null))`;
  await sql`create index on ${s}.todos (assignee) where assignee is not null`;
  await sql`create index on ${s}.todos (requested_by) where requested_by is not null`;
  await sql`create index on ${s}.todos (expires_at) where kind = 'approval' and state = 'pending'`;
  await sql`
    create index on ${s}.todos (updated_at, id)
    where state in ('done', 'canceled') or (state = 'failed' and available_at is null)`;
  await sql`
    create index on ${s}.todos (available_at)
    where state in ('claimed', 'failed') and available_at is not null`;
  await sql`
    create table ${s}.todo_events (
      id bigint generated always as identity,
      todo_id bigint not null references ${s}.todos (id),
      at timestamptz not null default clock_timestamp(),
      actor_kind ${s}.actor_kind not null,
      actor text not null,
      via text not null,
      action text not null,
      data jsonb,
      primary key (todo_id, id)
    )`;
}

export interface SameRowsAgent {
  name: string;
  owner: string;
  token: string;
}

/** An agent on `queues`, owned by a human, and its token (stored as its SHA-256 only). */
export async function createSameRowsAgent(
  sql: postgres.Sql,
  schema: string,
  name: string,
  queues: string[],
): Promise<SameRowsAgent> {
  const s = sql(schema);
  const owner = `${name}-owner`;
  const token = `sbk_${randomBytes(32).toString('base64url')}`;
  await sql`
    with human as (
      insert into ${s}.principals (name, kind) values (${owner}, 'human')
    ), agent as (
      insert into ${s}.principals (name, kind, owner, queues)
      values (${name}, 'agent', ${owner}, ${queues}) returning id
    )
    insert into ${s}.tokens (principal_id, hash) select id, ${hashOf(token)} from agent`;
  return { name, owner, token };
}

/**
 * `count` pending todos on `queue`, each with its `created` history row, as switchboard's
 * benchmark seeds its own, in one statement before anything is timed.
 */
export async function seedSameRowsTodos(
  sql: postgres.Sql,
  schema: string,
  queue: string,
  count: number,
  agent: SameRowsAgent,
): Promise<void> {
  const s = sql(schema);
  await sql`
    with t as (
      insert into ${s}.todos (queue, kind, title, state, source, attributed_to, available_at)
      select ${queue}, 'manual', 'bench todo ' || g, 'pending', 'api', ${agent.owner}, now()
      from generate_series(1, ${count}::int) g
      returning id
    )
    insert into ${s}.todo_events (todo_id, actor_kind, actor, via, action)
    select t.id, 'agent', ${agent.name}, 'api', 'created' from t`;
  await sql`vacuum analyze ${s}.todos, ${s}.todo_events`;
}

function hashOf(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

interface TokenCache {
  authenticate(authorization: string | undefined): Promise<Principal | undefined>;
  close(): Promise<void>;
}

/**
 * Bearer tokens resolved once and kept for a minute. Every revocation NOTIFYs
 * `<schema>.revocations`, and the cache forgets everything when it hears one, and on every
 * (re)LISTEN; until it first listens it keeps nothing, and a lookup that raced a revocation is
 * not kept. The rule: the token not revoked nor expired, its principal not revoked, nor an
 * agent's owner.
 */
async function createTokenCache(sql: postgres.Sql, schema: string): Promise<TokenCache> {
  const s = sql(schema);
  const entries = new Map<string, { principal: Principal; until: number }>();
  let generation = 0;
  let listening = false;
  const clear = () => {
    generation++;
    entries.clear();
  };
  const subscription = await sql.listen(`${schema}.revocations`, clear, () => {
    clear();
    listening = true;
  });
  return {
    async authenticate(authorization) {
      const token = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
      if (!token || !TOKEN.test(token)) return undefined;
      const hash = hashOf(token);
      const key = hash.toString('base64');
      const cached = entries.get(key);
      if (cached && cached.until > Date.now()) return cached.principal;
      const seen = generation;
      const [row] = await sql<(Principal & { expires_at: Date | null })[]>`
        select p.id, p.name, p.queues, t.expires_at
        from ${s}.tokens t join ${s}.principals p on p.id = t.principal_id
        where t.hash = ${hash} and t.revoked_at is null
          and (t.expires_at is null or t.expires_at > now())
          and p.revoked_at is null
          and (p.owner is null or exists (
            select from ${s}.principals o where o.name = p.owner and o.revoked_at is null))`;
      if (!row) return undefined;
      const { expires_at: expiresAt, ...principal } = row;
      if (listening && seen === generation) {
        const until = Math.min(Date.now() + TOKEN_TTL_MS, expiresAt?.getTime() ?? Infinity);
        entries.set(key, { principal, until });
      }
      return principal;
    },
    async close() {
      listening = false;
      clear();
      await subscription.unlisten().catch(() => {});
    },
  };
}

const answer = (structured: Record<string, unknown>) => ({
  content: [{ type: 'text' as const, text: JSON.stringify(structured) }],
  structuredContent: structured,
});

const refusal = (text: string) => ({ content: [{ type: 'text' as const, text }], isError: true });

/** Serves MCP at /mcp on 127.0.0.1, on the tables createSameRowsLedger made in `schema`. */
export async function startSameRowsMcpServer(
  sql: postgres.Sql,
  schema: string,
): Promise<BareServer> {
  const s = sql(schema);
  const tokens = await createTokenCache(sql, schema);
  const server = await serveMcpSessions<Principal>({
    name: 'bare-same-rows',
    authenticate: (authorization) => tokens.authenticate(authorization),
    tools(mcp, principal) {
      // The session keeps each claim's lease token, as switchboard's does.
      const leases = new Map<number, string>();
      mcp.registerTool(
        'claim_next',
        { description: 'Claim the oldest claimable todo', inputSchema: { queue: z.string() } },
        async ({ queue }) => {
          if (!principal.queues.includes(queue))
            return refusal(`agent ${principal.name} may not use queue ${queue}`);
          // `limit 1` in the text: `limit $n` has no generic plan.
          const [todo] = await sql<{ id: string; lease_token: string; lease_expires_at: Date }[]>`
            with target as (
              select id from ${s}.todos t
              where t.queue = ${queue} and t.available_at <= now() and t.attempt < t.max_attempts
              order by t.available_at, t.id limit 1 for no key update skip locked
            ), t as (
              update ${s}.todos t set
                state = 'claimed', claimed_by = ${principal.name}, lease_token = gen_random_uuid(),
                available_at = now() + make_interval(secs => ${LEASE_SECONDS}),
                attempt = t.attempt + 1, updated_at = now()
              from target where t.id = target.id
              returning t.id, t.lease_token, t.available_at, t.attempt
            ), e as (
              insert into ${s}.todo_events (todo_id, actor_kind, actor, via, action, data)
              select t.id, 'agent', ${principal.name}, 'mcp', 'claimed',
                     jsonb_build_object('lease_seconds', ${LEASE_SECONDS}::int, 'attempt', t.attempt)
              from t
            )
            select id, lease_token, available_at as lease_expires_at from t`;
          if (!todo) return answer({ todo: null });
          const id = Number(todo.id);
          leases.set(id, todo.lease_token);
          return answer({ todo: { ...todo, id } });
        },
      );
      mcp.registerTool(
        'complete_todo',
        {
          description: 'Finish a claimed todo',
          inputSchema: {
            todo_id: z.number().int(),
            lease_token: z.string().uuid().optional(),
            summary: z.string().optional(),
          },
        },
        async ({ todo_id, lease_token, summary }) => {
          const lease = lease_token ?? leases.get(todo_id);
          if (!lease) return refusal(`no lease token for todo #${todo_id} in this session`);
          const [done] = await sql`
            with t as (
              update ${s}.todos t set state = 'done', available_at = null, lease_token = null,
                                      summary = ${summary ?? null}, updated_at = now()
              where t.id = ${todo_id} and t.state = 'claimed' and t.lease_token = ${lease}::uuid
                and t.claimed_by = ${principal.name} and t.available_at > now()
              returning t.id
            ), e as (
              insert into ${s}.todo_events (todo_id, actor_kind, actor, via, action, data)
              select t.id, 'agent', ${principal.name}, 'mcp', 'completed',
                     case when ${summary ?? null}::text is not null
                          then jsonb_build_object('summary', ${summary ?? null}::text) end
              from t
            )
            select id from t`;
          if (!done) return refusal(`lease on todo #${todo_id} is lost`);
          leases.delete(todo_id);
          return answer({ todo: { id: todo_id } });
        },
      );
    },
  });
  return {
    url: server.url,
    async close() {
      await server.close();
      await tokens.close();
    },
  };
}
