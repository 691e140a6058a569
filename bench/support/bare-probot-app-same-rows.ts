// The reference for signed intake that writes the same rows as switchboard and keeps the same
// guarantees, the cheapest way: a bare Probot app (Probot checks the signature and routes the
// event) whose one handler writes, in ONE statement (so one round trip and one commit, before
// the sender is answered): the delivery with its facts and its body's SHA-256, refused if its
// id was recorded before or if the same body was recorded under another id within a day; the
// todo with its idempotency key, as switchboard's GitHub todos have it (made of the delivery id:
// a live key means a recorded id, refused first; were a key live anyway, the todo would not be
// made, the delivery's reference to it would fail the statement, and nothing would commit); the
// todo's history row; its 👀 write-back when it has one; and its wake (`pg_notify`).
// Its tables are switchboard's `deliveries`, `todos`, `todo_events` and `outbox` as migrations
// leave them, with their indexes. Not in it: rules, trust, quarantine, verdicts, neutralising
// provider text, the dispatcher's ring.
import { createHash, generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Probot } from 'probot';
import type postgres from 'postgres';
import type { BareServer } from './serve-mcp-sessions.js';

const PATH = '/api/github/webhooks';
const EVENTS = ['issue_comment.created', 'issues.labeled'] as const;
/** A todo's idempotency key holds while the todo is live, as switchboard's does. */
const LIVE_KEY = `idempotency_key is not null
  and (state in ('pending', 'claimed', 'quarantined') or (state = 'failed' and available_at is not null))`;

/** The reference's tables, in `schema` (created). */
export async function createSameRowsIntakeTables(sql: postgres.Sql, schema: string): Promise<void> {
  const s = sql(schema);
  await sql`create schema if not exists ${s}`;
  // Equality on text and bytea in a GiST index, for the replay window's exclusion constraint:
  // installed once for the database, in `public`, where dropping a benchmark's schema cannot take
  // it away (and with it every constraint built on it); under a lock, as two runs may ask at once.
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended('bench:btree_gist', 0))`;
    await tx`create extension if not exists btree_gist with schema public`;
  });
  await sql`create type ${s}.todo_state as enum ('pending', 'claimed', 'done', 'failed', 'canceled', 'quarantined')`;
  await sql`create type ${s}.actor_kind as enum ('human', 'agent', 'system')`;
  await sql`
    create type ${s}.delivery_disposition as enum ('created', 'quarantined', 'no_rule',
      'bot_sender', 'unreadable', 'duplicate', 'verdict', 'verdict_refused')`;
  await sql`create type ${s}.write_back_state as enum ('pending', 'sent', 'dead')`;
  await sql`create type ${s}.write_back_kind as enum ('comment', 'reaction')`;
  await createTodoTables(sql, schema);
  await sql`
    create table ${s}.deliveries (
      id bigint generated always as identity primary key,
      source text not null,
      kind text not null,
      delivery_id text not null,
      event text not null,
      action text,
      subject text,
      actor text,
      installation_id bigint,
      disposition ${s}.delivery_disposition not null,
      todo_id bigint references ${s}.todos (id),
      note text,
      facts jsonb,
      body_sha256 bytea check (length(body_sha256) = 32),
      received_at timestamptz not null default now()
    )`;
  await sql`
    create unique index on ${s}.deliveries (source, delivery_id)
    where disposition not in ('duplicate', 'unreadable')`;
  // The replay window, held by the database: no two recorded copies of one body less than a day
  // apart. A constraint, not a look-up, so that two copies arriving at once are weighed one
  // after the other (the second waits for the first to commit), as switchboard's lock does. It
  // stands where switchboard has its index of bodies.
  await sql`
    create function ${s}.replay_window(at timestamptz) returns tstzrange
    language sql immutable as $$ select tstzrange(at, at + interval '24 hours') $$`;
  await sql`
    alter table ${s}.deliveries add constraint deliveries_no_replay exclude using gist
      (source with =, body_sha256 with =, ${s}.replay_window(received_at) with &&)
      where (disposition not in ('duplicate', 'unreadable') and body_sha256 is not null)`;
  await sql`create index on ${s}.deliveries (received_at)`;
  await sql`create index on ${s}.deliveries (source, id)`;
  await sql`create index on ${s}.deliveries (todo_id) where todo_id is not null`;
  await sql`
    create table ${s}.outbox (
      id bigint generated always as identity primary key,
      todo_id bigint not null references ${s}.todos (id),
      source text not null,
      kind text not null,
      write_back ${s}.write_back_kind not null,
      target jsonb not null,
      body text not null,
      state ${s}.write_back_state not null default 'pending',
      attempts integer not null default 0,
      next_attempt_at timestamptz not null default now(),
      last_error text,
      created_at timestamptz not null default now(),
      sent_at timestamptz
    )`;
  await sql`create index on ${s}.outbox (next_attempt_at, id) where state = 'pending'`;
  await sql`create index on ${s}.outbox (created_at) where state <> 'pending'`;
}

/** switchboard's todos (columns, indexes, the lease rule) and their history. */
async function createTodoTables(sql: postgres.Sql, schema: string): Promise<void> {
  const s = sql(schema);
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
  await sql`create index on ${s}.todos (queue, available_at, id) where available_at is not null`;
  await sql`create unique index on ${s}.todos (queue, idempotency_key) where ${sql.unsafe(LIVE_KEY)}`;
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

interface Payload {
  action?: string;
  issue: {
    number: number;
    title: string;
    body?: string | null;
    html_url: string;
    author_association?: string;
  };
  comment?: { id: number; body: string; html_url: string; author_association?: string };
  repository: {
    id: number;
    name: string;
    full_name: string;
    html_url: string;
    owner: { login: string };
  };
  sender: { login: string; type: string };
  installation?: { id: number };
}

/** What a delivery is recorded with and the todo it makes, shaped as switchboard's are. */
function readDelivery(id: string, event: string, payload: Payload) {
  const { issue, comment, repository, sender } = payload;
  const installationId = payload.installation?.id ?? null;
  const facts = {
    event,
    action: payload.action ?? null,
    fields: {
      action: payload.action ?? null,
      issue: {
        number: issue.number,
        title: issue.title,
        body: issue.body ?? null,
        html_url: issue.html_url,
        author_association: issue.author_association ?? null,
      },
      ...(comment && {
        comment: {
          id: comment.id,
          body: comment.body,
          html_url: comment.html_url,
          first_line: comment.body.split('\n')[0]!,
          author_association: comment.author_association ?? null,
        },
      }),
    },
    sender: { type: sender.type, login: sender.login },
    repository: {
      id: repository.id,
      name: repository.name,
      owner: repository.owner.login,
      htmlUrl: repository.html_url,
      fullName: repository.full_name,
    },
    installation_id: installationId,
  };
  const on = `#${issue.number} in ${repository.full_name}`;
  const rule = comment ? 'comment' : 'label';
  const todo = {
    queue: 'issues',
    kind: `github.${event}.${payload.action ?? 'none'}`,
    title: comment
      ? `comment by @${sender.login} on ${on}: ${comment.body.split('\n')[0]!}`
      : `issue ${on}: ${issue.title}`,
    body: comment
      ? `${comment.body}\n\n(on issue #${issue.number}: ${issue.title})`
      : (issue.body ?? null),
    url: comment?.html_url ?? issue.html_url,
    attributed_to: sender.login,
    key: `github:${id}:${rule}`,
    meta: {
      github: {
        repo: repository.name,
        rule,
        event,
        owner: repository.owner.login,
        action: payload.action ?? null,
        sender: sender.login,
        ...(comment && { comment_id: comment.id }),
        delivery_id: id,
        issue_number: issue.number,
        installation_id: installationId,
      },
    },
  };
  const target = {
    installation_id: installationId,
    owner: repository.owner.login,
    repo: repository.name,
    issue_number: issue.number,
    ...(comment && { comment_id: comment.id }),
  };
  return { facts, todo, target, installationId };
}

export interface SameRowsProbotOptions {
  /** Queue the 👀 write-back of each todo made, as switchboard does when it has App credentials. */
  writeBack: boolean;
}

/** A Probot app at /api/github/webhooks on 127.0.0.1, verifying with `secret`. */
export async function startSameRowsProbotApp(
  sql: postgres.Sql,
  schema: string,
  secret: string,
  { writeBack }: SameRowsProbotOptions,
): Promise<BareServer> {
  const s = sql(schema);
  const [{ sequence }] = await sql<[{ sequence: string }]>`
    select pg_get_serial_sequence(${`${schema}.todos`}, 'id') as sequence`;
  const wakes = `${schema}.wakes`;
  // Probot insists on App credentials; nothing here calls GitHub, so any key will do.
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const probot = new Probot({ appId: 1, privateKey, secret, log: pino({ level: 'silent' }) });
  // The body's hash, for the payload object Probot hands the handler.
  const bodyHashes = new WeakMap<object, Buffer>();

  const record = (id: string, event: string, payload: Payload) => {
    const { facts, todo, target, installationId } = readDelivery(id, event, payload);
    const queuesWriteBack = writeBack && installationId !== null;
    return sql<[{ recorded: number; made: string | null }]>`
      with ids as (
        select nextval(${sequence}::regclass) as todo_id
      ), d as (
        insert into ${s}.deliveries (source, kind, delivery_id, event, action, subject, actor,
                                     installation_id, disposition, todo_id, facts, body_sha256)
        select 'github', 'github', ${id}, ${event}, ${payload.action ?? null}::text,
               ${payload.repository.full_name}, ${payload.sender.login}, ${installationId}::bigint,
               'created', ids.todo_id, ${sql.json(facts)}, ${bodyHashes.get(payload)!}
        from ids
        on conflict do nothing
        returning todo_id
      ), t as (
        insert into ${s}.todos (id, queue, kind, title, body, state, source, url, attributed_to,
                                idempotency_key, available_at, meta)
        overriding system value
        select d.todo_id, ${todo.queue}, ${todo.kind}, ${todo.title}, ${todo.body}::text,
               'pending', 'github', ${todo.url}, ${todo.attributed_to}, ${todo.key}, now(),
               ${sql.json(todo.meta)}
        from d
        on conflict (queue, idempotency_key) where ${sql.unsafe(LIVE_KEY)} do nothing
        returning id, queue
      ), e as (
        insert into ${s}.todo_events (todo_id, actor_kind, actor, via, action)
        select t.id, 'system', 'github', 'github', 'created' from t
      ), w as (
        insert into ${s}.outbox (todo_id, source, kind, write_back, target, body)
        select t.id, 'github', 'github', 'reaction', ${sql.json(target)}, 'eyes'
        from t where ${queuesWriteBack}
      ), wake as (
        select pg_notify(${wakes}, json_build_object(
          'todo_id', t.id, 'queue', t.queue, 'assignee', null, 'requested_by', null,
          'wake_id', gen_random_uuid(), 'event', 'claimable')::text)
        from t
      )
      select (select count(*) from d)::int as recorded, (select id from t) as made
      from (select count(*) from wake) woken`;
  };

  await probot.load((app) => {
    app.on([...EVENTS], async (context) => {
      await record(context.id, context.name, context.payload);
    });
  });

  const server = createServer((req, res) => {
    receive(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  /** What Probot's middleware does — read, verify, parse, run the handlers, answer — keeping the body's hash. */
  const receive = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const header = (name: string) => req.headers[name] as string | undefined;
    const [id, name, signature] = [
      header('x-github-delivery'),
      header('x-github-event'),
      header('x-hub-signature-256'),
    ];
    if (req.method !== 'POST' || req.url !== PATH) return void res.writeHead(404).end();
    if (!id || !name || !signature) return void res.writeHead(400).end();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const text = body.toString('utf8');
    if (!(await probot.webhooks.verify(text, signature))) return void res.writeHead(400).end();
    const payload = JSON.parse(text) as object;
    bodyHashes.set(payload, createHash('sha256').update(body).digest());
    await probot.receive({ id, name, payload } as Parameters<Probot['receive']>[0]);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
