// The benchmarks' same-rows references set switchboard's figures against the same durable work
// written the cheapest way. They are honest only while they keep every guarantee switchboard
// keeps on that path: these tests hold them to it, as a user of either would see it.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sign } from '@octokit/webhooks-methods';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import {
  createSameRowsAgent,
  createSameRowsLedger,
  seedSameRowsTodos,
  startSameRowsMcpServer,
  type SameRowsAgent,
} from '../../bench/support/bare-mcp-server-same-rows.js';
import {
  createSameRowsIntakeTables,
  startSameRowsProbotApp,
} from '../../bench/support/bare-probot-app-same-rows.js';
import type { BareServer } from '../../bench/support/serve-mcp-sessions.js';
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';

const SECRET = 'same-rows-secret';
const FIXTURE = new URL('../fixtures/github/issue_comment.created.command.json', import.meta.url);

let sql: postgres.Sql;
const schemas: string[] = [];

beforeAll(() => {
  sql = connect(inject('databaseUrl'), { schema: 'public', max: 4, log: silentLogger });
});

afterAll(async () => {
  for (const schema of schemas) await sql`drop schema if exists ${sql(schema)} cascade`;
  await sql.end({ timeout: 5 });
});

function freshSchema(kind: string): string {
  const schema = `same_rows_${kind}_${randomBytes(4).toString('hex')}`;
  schemas.push(schema);
  return schema;
}

describe('the MCP reference writing the same rows', () => {
  let schema: string;
  let server: BareServer;
  let agent: SameRowsAgent;
  const clients: Client[] = [];

  beforeAll(async () => {
    schema = freshSchema('mcp');
    await createSameRowsLedger(sql, schema);
    agent = await createSameRowsAgent(sql, schema, 'worker', ['work']);
    await seedSameRowsTodos(sql, schema, 'work', 3, agent);
    server = await startSameRowsMcpServer(sql, schema);
  });

  afterAll(async () => {
    for (const client of clients) await client.close();
    await server.close();
  });

  const connectAs = async (token: string) => {
    const client = new Client({ name: 'same-rows-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const claimed = (result: CallToolResult) =>
    (result.structuredContent as { todo: { id: number; lease_token: string } | null }).todo;

  test('answers 401 to a request without a valid token, and to one whose token was revoked', async () => {
    const initialize = (authorization?: string) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(authorization && { authorization }),
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'x', version: '1' },
          },
        }),
      });
    expect((await initialize()).status).toBe(401);
    expect((await initialize(`Bearer sbk_${'a'.repeat(43)}`)).status).toBe(401);

    const other = await createSameRowsAgent(sql, schema, 'revoked', ['nothing-here']);
    const client = await connectAs(other.token);
    expect(claimed(await call(client, 'claim_next', { queue: 'nothing-here' }))).toBeNull();
    await sql`
      update ${sql(schema)}.tokens set revoked_at = now()
      where principal_id = (select id from ${sql(schema)}.principals where name = 'revoked')`;
    // The cache forgets the token when it hears the revocation: every request is checked.
    await expect.poll(async () => (await initialize(`Bearer ${other.token}`)).status).toBe(401);
    await expect(call(client, 'claim_next', { queue: 'work' })).rejects.toThrow(/revoked/);
  });

  test('refuses a queue the agent may not work', async () => {
    const client = await connectAs(agent.token);
    const result = await call(client, 'claim_next', { queue: 'elsewhere' });
    expect(result.isError).toBe(true);
  });

  test('claims exclusively, completes only under a live lease, and records both', async () => {
    const [a, b] = await Promise.all([connectAs(agent.token), connectAs(agent.token)]);
    const [first, second] = (
      await Promise.all([
        call(a, 'claim_next', { queue: 'work' }),
        call(b, 'claim_next', { queue: 'work' }),
      ])
    ).map(claimed);
    expect(first!.id).not.toBe(second!.id);

    // Another session's lease is not this one's, and a wrong token is refused.
    expect((await call(a, 'complete_todo', { todo_id: second!.id })).isError).toBe(true);
    const wrong = { todo_id: first!.id, lease_token: randomUUID() };
    expect((await call(a, 'complete_todo', wrong)).isError).toBe(true);
    // A lease that ended is refused too, and its todo may be claimed again.
    await sql`update ${sql(schema)}.todos set available_at = now() - interval '1 s' where id = ${second!.id}`;
    expect((await call(b, 'complete_todo', { todo_id: second!.id })).isError).toBe(true);

    expect(
      (await call(a, 'complete_todo', { todo_id: first!.id, summary: 'ok' })).structuredContent,
    ).toEqual({ todo: { id: first!.id } });
    expect((await call(a, 'complete_todo', { todo_id: first!.id })).isError).toBe(true);

    const again = claimed(await call(b, 'claim_next', { queue: 'work' }));
    const third = claimed(await call(b, 'claim_next', { queue: 'work' }));
    expect([again!.id, third!.id]).toContain(second!.id);
    expect(claimed(await call(b, 'claim_next', { queue: 'work' }))).toBeNull();

    const history = await sql<{ action: string; data: unknown }[]>`
      select action, data from ${sql(schema)}.todo_events where todo_id = ${first!.id} order by id`;
    expect(history).toEqual([
      { action: 'created', data: null },
      { action: 'claimed', data: { lease_seconds: 300, attempt: 1 } },
      { action: 'completed', data: { summary: 'ok' } },
    ]);
    const [todo] = await sql`
      select state, lease_token, available_at from ${sql(schema)}.todos where id = ${first!.id}`;
    expect(todo).toEqual({ state: 'done', lease_token: null, available_at: null });
  });
});

describe('the Probot reference writing the same rows', () => {
  let schema: string;
  let app: BareServer;
  let template: string;

  beforeAll(async () => {
    schema = freshSchema('probot');
    await createSameRowsIntakeTables(sql, schema);
    app = await startSameRowsProbotApp(sql, schema, SECRET, { writeBack: true });
    template = await readFile(FIXTURE, 'utf8');
  });

  afterAll(() => app.close());

  /** A `/switchboard` comment of its own, as GitHub would sign it. */
  const body = (commentId: number) => {
    const payload = JSON.parse(template) as { comment: { id: number } };
    payload.comment.id = commentId;
    return JSON.stringify(payload);
  };
  const deliver = async (payload: string, id = randomUUID(), secret = SECRET) => {
    const response = await fetch(`${app.url}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issue_comment',
        'x-github-delivery': id,
        'x-hub-signature-256': await sign(secret, payload),
      },
      body: payload,
    });
    await response.arrayBuffer();
    return response.status;
  };
  const counts = async () => {
    const [row] = await sql<
      [{ deliveries: number; todos: number; events: number; outbox: number }]
    >`
      select (select count(*)::int from ${sql(schema)}.deliveries) as deliveries,
             (select count(*)::int from ${sql(schema)}.todos) as todos,
             (select count(*)::int from ${sql(schema)}.todo_events) as events,
             (select count(*)::int from ${sql(schema)}.outbox) as outbox`;
    return row;
  };

  test('commits the delivery, its todo, its history, its write-back and its wake before answering 200', async () => {
    const heard: string[] = [];
    const listener = await sql.listen(`${schema}.wakes`, (payload) => heard.push(payload));
    try {
      const before = await counts();
      const id = randomUUID();
      expect(await deliver(body(1), id)).toBe(200);
      expect(await counts()).toEqual({
        deliveries: before.deliveries + 1,
        todos: before.todos + 1,
        events: before.events + 1,
        outbox: before.outbox + 1,
      });
      const [delivery] = await sql`
        select d.delivery_id, d.facts->'fields'->'comment'->>'id' as comment_id,
               length(d.body_sha256) as hash_bytes, t.idempotency_key, o.target->>'comment_id' as reacted_to
        from ${sql(schema)}.deliveries d
        join ${sql(schema)}.todos t on t.id = d.todo_id
        join ${sql(schema)}.outbox o on o.todo_id = t.id
        where d.delivery_id = ${id}`;
      expect(delivery).toEqual({
        delivery_id: id,
        comment_id: '1',
        hash_bytes: 32,
        idempotency_key: `github:${id}:comment`,
        reacted_to: '1',
      });
      await expect.poll(() => heard.length).toBe(1);
    } finally {
      await listener.unlisten();
    }
  });

  test('refuses a bad signature, a redelivery, and the same body under another id', async () => {
    const before = await counts();
    expect(await deliver(body(2), randomUUID(), 'not-the-secret')).toBe(400);
    const id = randomUUID();
    expect(await deliver(body(3), id)).toBe(200);
    expect(await deliver(body(3), id)).toBe(200);
    expect(await deliver(body(3))).toBe(200);
    expect(await counts()).toEqual({
      deliveries: before.deliveries + 1,
      todos: before.todos + 1,
      events: before.events + 1,
      outbox: before.outbox + 1,
    });
  });

  test('weighs copies of one body arriving at once one after the other', async () => {
    const before = await counts();
    const statuses = await Promise.all(Array.from({ length: 6 }, () => deliver(body(4))));
    expect(statuses).toEqual(Array(6).fill(200));
    expect((await counts()).todos).toBe(before.todos + 1);
  });

  test('takes the same body again once the replay window has passed', async () => {
    expect(await deliver(body(5))).toBe(200);
    await sql`
      update ${sql(schema)}.deliveries set received_at = now() - interval '25 hours'
      where facts->'fields'->'comment'->>'id' = '5'`;
    const before = await counts();
    expect(await deliver(body(5))).toBe(200);
    expect((await counts()).deliveries).toBe(before.deliveries + 1);
  });
});
