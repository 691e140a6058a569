// The reference for signed intake: a bare Probot app. Probot verifies the signature and routes the
// event as it does for any GitHub App; its one handler records the delivery and makes one todo,
// in one statement (so one transaction and one commit), and the sender is answered once it has
// committed (Probot's middleware answers after the handlers). No rules, no trust, no replay
// defence, no write-back, no wake.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createNodeMiddleware, Probot } from 'probot';
import type postgres from 'postgres';
import type { BareServer } from './bare-mcp-server.js';

/** The two events the benchmarks send: a `/switchboard` comment, and a labelled issue. */
const EVENTS = ['issue_comment.created', 'issues.labeled'] as const;

/** The app's tables, in `schema` (created): a delivery and a todo, each with its key. */
export async function createBareIntakeTables(sql: postgres.Sql, schema: string): Promise<void> {
  await sql`create schema if not exists ${sql(schema)}`;
  await sql`
    create table ${sql(schema)}.todos (
      id bigint generated always as identity primary key,
      queue text not null,
      title text not null,
      body text,
      state text not null default 'pending',
      attributed_to text not null,
      created_at timestamptz not null default now()
    )`;
  await sql`
    create table ${sql(schema)}.deliveries (
      id bigint generated always as identity primary key,
      delivery_id text not null unique,
      event text not null,
      action text,
      repository text,
      sender text,
      installation_id bigint,
      todo_id bigint references ${sql(schema)}.todos (id),
      received_at timestamptz not null default now()
    )`;
}

/** A Probot app at /api/github/webhooks on 127.0.0.1, verifying with `secret`. */
export async function startBareProbotApp(
  sql: postgres.Sql,
  schema: string,
  secret: string,
): Promise<BareServer> {
  const todos = sql(`${schema}.todos`);
  const deliveries = sql(`${schema}.deliveries`);
  // Probot insists on App credentials; nothing here calls GitHub, so any key will do.
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const probot = new Probot({ appId: 1, privateKey, secret, log: pino({ level: 'silent' }) });
  const middleware = await createNodeMiddleware(
    (app) => {
      app.on([...EVENTS], async (context) => {
        const payload = context.payload as {
          action?: string;
          issue: { title: string; body?: string | null };
          comment?: { body: string };
          repository?: { full_name: string };
          sender: { login: string };
          installation?: { id: number };
        };
        await sql`
          with t as (
            insert into ${todos} (queue, title, body, attributed_to)
            values ('issues', ${payload.issue.title}, ${payload.comment?.body ?? payload.issue.body ?? null},
                    ${payload.sender.login})
            returning id
          )
          insert into ${deliveries}
            (delivery_id, event, action, repository, sender, installation_id, todo_id)
          select ${context.id}, ${context.name}, ${payload.action ?? null},
                 ${payload.repository?.full_name ?? null}, ${payload.sender.login},
                 ${payload.installation?.id ?? null}, t.id
          from t`;
      });
    },
    { probot, webhooksPath: '/api/github/webhooks' },
  );
  const server = createServer((req, res) => {
    void middleware(req, res, () => res.writeHead(404).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
