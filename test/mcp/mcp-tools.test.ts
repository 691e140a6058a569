import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectMcp, type TestMcpClient } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
let human: string;
let agentToken: string;
let agent: TestMcpClient;

beforeAll(async () => {
  server = await startTestServer();
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
  agentToken = (
    await server.api(human, 'POST', '/agents', { name: 'bot', queues: ['reviews', 'ci', 'quiet'] })
  ).body.token;
  agent = await connectMcp(server.url, agentToken);
});
afterAll(async () => {
  expect(agent.errors).toEqual([]);
  await agent.close();
  await server.stop();
});

const TOOLS = [
  'list_todos',
  'get_todo',
  'claim_todo',
  'claim_next',
  'heartbeat_todo',
  'complete_todo',
  'fail_todo',
  'release_todo',
  'create_todo',
  'reply',
  'request_approval',
  'get_secret',
];

test('the tools of DESIGN 5.4, none of which records a verdict', async () => {
  const { tools } = await agent.client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
  for (const tool of tools) {
    expect(tool.description?.length).toBeGreaterThan(20);
    expect(tool.inputSchema.type).toBe('object');
  }
  expect(tools.map((t) => t.name)).not.toEqual(
    expect.arrayContaining(['approve', 'deny', 'decide']),
  );
});

test("ping and logging/setLevel are answered (the conformance suite's scenarios for switchboard)", async () => {
  await expect(agent.client.ping()).resolves.toEqual({});
  await expect(agent.client.setLoggingLevel('info')).resolves.toEqual({});
  expect(agent.client.getServerVersion()).toMatchObject({ name: 'switchboard' });
});

test('instructions tell the agent what to do', () => {
  expect(agent.client.getInstructions()).toMatch(/claim_next/);
});

describe('happy paths', () => {
  test('create, list, get, claim_next, heartbeat, complete — lease tokens kept by the session', async () => {
    const created = await agent.call('create_todo', {
      queue: 'reviews',
      title: 'review PR #7',
      key: 'pr-7',
    });
    expect(created.isError).toBeFalsy();
    const id = created.data.todo.id as number;
    expect(created.data.todo).toMatchObject({
      attributed_to: 'bob',
      source: 'mcp',
      state: 'pending',
    });
    expect(
      (await agent.call('create_todo', { queue: 'reviews', title: 'again', key: 'pr-7' })).data,
    ).toMatchObject({
      created: false,
      todo: { id },
    });
    const listed = await agent.call('list_todos', { queue: 'reviews' });
    expect(listed.data.todos.map((t: { id: number }) => t.id)).toContain(id);
    expect((await agent.call('get_todo', { todo_id: id })).data.history[0]).toMatchObject({
      action: 'created',
      via: 'mcp',
    });

    const claimed = await agent.call('claim_next', { queue: 'reviews', lease_seconds: 60 });
    expect(claimed.text).toMatch(new RegExp(`^claimed todo #${id}`));
    expect(claimed.data.todo.lease_token).toEqual(expect.any(String));
    expect((await agent.call('heartbeat_todo', { todo_id: id })).isError).toBeFalsy();
    const done = await agent.call('complete_todo', {
      todo_id: id,
      summary: 'LGTM',
      result: { score: 5 },
    });
    expect(done.data.todo).toMatchObject({ state: 'done', summary: 'LGTM', result: { score: 5 } });
  });

  test('claim_todo, fail_todo, release_todo, reply, request_approval', async () => {
    const { body } = await server.api(human, 'POST', '/todos', {
      queue: 'ci',
      title: 'fix the build',
      max_attempts: 3,
    });
    const id = body.todo.id as number;
    const claimed = await agent.call('claim_todo', { todo_id: id });
    expect(claimed.data.todo.claimed_by).toBe('bot');
    expect((await agent.call('fail_todo', { todo_id: id, reason: 'flaky' })).data.todo.state).toBe(
      'failed',
    );

    const other = (await server.api(human, 'POST', '/todos', { queue: 'ci', title: 'hand back' }))
      .body.todo.id;
    const token = (await agent.call('claim_todo', { todo_id: other })).data.todo.lease_token;
    expect(
      (await agent.call('release_todo', { todo_id: other, lease_token: token })).data.todo.state,
    ).toBe('pending');

    const replied = await agent.call('reply', {
      todo_id: other,
      text: 'I will get to it after lunch.',
    });
    expect(replied.data).toEqual({ todo_id: other, text: 'I will get to it after lunch.' });
    const history = (await server.api(human, 'GET', `/todos/${other}`)).body.history;
    expect(history.find((e: { action: string }) => e.action === 'replied')).toMatchObject({
      actor: 'bot',
      via: 'mcp',
      data: { text: 'I will get to it after lunch.' },
    });

    const asked = await agent.call('request_approval', {
      question: 'May I force-push?',
      todo_id: other,
    });
    expect(asked.data.todo).toMatchObject({
      kind: 'approval',
      assignee: 'bob',
      about_todo_id: other,
    });
    expect(asked.text).toMatch(/asked bob/);
  });

  test('claim_next on an empty queue says so', async () => {
    const result = await agent.call('claim_next', { queue: 'quiet' });
    expect(result.isError).toBeFalsy();
    expect(result.text).toMatch(/^no pending todo on quiet/);
    expect(result.data).toEqual({ todo: null });
  });
});

describe('refusals are tool errors with a next step', () => {
  test.each([
    ['get_todo', { todo_id: 999_999 }, /not found\. Check the id with list_todos/],
    ['claim_todo', { todo_id: 999_999 }, /not found\./],
    ['claim_next', { queue: 'issues' }, /may not use queue issues.*ask your human owner/],
    [
      'complete_todo',
      { todo_id: 999_998 },
      /no lease token for todo #999998 in this session: pass lease_token/,
    ],
    ['create_todo', { queue: 'issues', title: 'x' }, /may not use queue issues/],
    ['create_todo', { queue: 'reviews', title: '   ' }, /title is empty\. Fix the arguments/],
  ])('%s %j', async (tool, args, message) => {
    const result = await agent.call(tool, args);
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(message);
  });

  test.each([
    ['claim_todo', { todo_id: 'forty-two' }, /todo_id must be the number of a todo/],
    ['claim_todo', {}, /todo_id/],
    [
      'claim_next',
      { queue: 'reviews', lease_seconds: 999_999 },
      /lease_seconds must be at most 86400/,
    ],
    ['list_todos', { state: 'sleeping' }, /state must be one of/],
    ['reply', { todo_id: 1, text: 42 }, /text must be text/],
  ])('bad arguments to %s %j', async (tool, args, message) => {
    const result = await agent.call(tool, args);
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(message);
  });

  test('a lost lease is refused and says not to report the work', async () => {
    const id = (await server.api(human, 'POST', '/todos', { queue: 'reviews', title: 'slow' })).body
      .todo.id;
    const token = (await agent.call('claim_todo', { todo_id: id, lease_seconds: 1 })).data.todo
      .lease_token;
    await server.sql`update todos set available_at = now() - interval '1 second' where id = ${id}`;
    const late = await agent.call('complete_todo', {
      todo_id: id,
      lease_token: token,
      summary: 'late',
    });
    expect(late.isError).toBe(true);
    expect(late.text).toMatch(/lease on todo #\d+ is lost.*do not report this work/);
  });
});

describe('sessions', () => {
  test('a request without a token is refused', async () => {
    await expect(connectMcp(server.url, 'sbk_' + 'x'.repeat(43))).rejects.toThrow();
  });

  test("another principal cannot use an agent's session", async () => {
    const sessionId = agent.transport.sessionId!;
    const response = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${human}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(404);
  });
});
