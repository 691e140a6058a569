import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startClaudeCode, type ClaudeCode } from '../support/claude-code-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// A Claude Code session dies mid-approval: its `switchboard channel` process is killed with
// SIGKILL — no stdin close, no goodbye — while a relayed permission prompt waits for the human.
// The server must notice on its own, cancel the prompt's approval with the reason in its
// history, refuse a verdict that comes too late, and greet the agent's next session with a
// digest of what waits for it.

let server: TestServer;
let human: string;
let agents = 0;

beforeAll(async () => {
  server = await startTestServer({
    deliveryTiming: { rerings: [60_000], scanMs: 100, heartbeatMs: 200, sessionTtlMs: 1000 },
    sweepIntervalMs: 200,
  });
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
});
afterAll(() => server.stop());

/** A fresh agent of bob's, working a queue of its own. */
async function newAgent(): Promise<{ name: string; queue: string; token: string }> {
  const n = ++agents;
  const { body } = await server.api(human, 'POST', '/agents', {
    name: `claude-${n}`,
    queues: [`work-${n}`],
  });
  return { name: `claude-${n}`, queue: `work-${n}`, token: body.token };
}

const channelSessions = async (agent: string) =>
  server.sql<{ id: string }[]>`
    select id from consumer_sessions where principal = ${agent} and path = 'channel'`;

async function attach(agent: { name: string; token: string }): Promise<ClaudeCode> {
  const claude = await startClaudeCode({
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: agent.token,
  });
  await expect.poll(async () => (await channelSessions(agent.name)).length).toBe(1);
  return claude;
}

/** Kills the channel process the way a crash or `kill -9` would, and waits until it is gone. */
async function killChannel(claude: ClaudeCode): Promise<void> {
  const transport = claude.client.transport as StdioClientTransport;
  const pid = transport.pid!;
  const exited = new Promise<void>((resolve) => (transport.onclose = () => resolve()));
  process.kill(pid, 'SIGKILL');
  await exited;
  expect(() => process.kill(pid, 0)).toThrow();
}

async function approvalFor(requestId: string): Promise<{ id: number }> {
  let found: { id: number } | undefined;
  await expect
    .poll(async () => {
      found = (await server.api(human, 'GET', '/todos?mine=true')).body.todos.find(
        (todo: { request_id: string }) => todo.request_id === requestId,
      );
      return found;
    })
    .toBeTruthy();
  return found!;
}

const create = async (queue: string, title: string) =>
  (await server.api(human, 'POST', '/todos', { queue, title })).body.todo.id as number;

test('SIGKILL mid-approval: the approval is canceled with the reason, a late verdict is refused, the next session gets a digest', async () => {
  const agent = await newAgent();
  const held = await create(agent.queue, 'Fix the login redirect');
  const claude = await attach(agent);
  const claimed = await claude.call('claim_todo', { todo_id: held, lease_seconds: 2 });
  expect(claimed.isError).toBeFalsy();
  await claude.askPermission({
    request_id: 'kqxzv',
    tool_name: 'Bash',
    description: 'Run the migration',
    input_preview: '{"command":"npm run migrate"}',
  });
  const approval = await approvalFor('kqxzv');
  const [session] = await channelSessions(agent.name);
  const before = await server.api(human, 'GET', `/todos/${approval.id}`);
  expect(before.body.todo).toMatchObject({ state: 'pending', about_todo_id: held });

  await killChannel(claude);

  // The server notices the dead session by itself and cancels what it was waiting on.
  await expect
    .poll(async () => (await server.api(human, 'GET', `/todos/${approval.id}`)).body.todo.state)
    .toBe('canceled');
  const after = await server.api(human, 'GET', `/todos/${approval.id}`);
  expect(after.body.todo).toMatchObject({
    state: 'canceled',
    verdict: null,
    summary: 'the asking session went away',
  });
  expect(after.body.history.at(-1)).toMatchObject({
    action: 'expired',
    actor_kind: 'system',
    data: { reason: 'the asking session went away' },
  });
  expect(await channelSessions(agent.name)).toEqual([]);
  expect(await server.sql`select 1 from consumer_sessions where id = ${session!.id}`).toHaveLength(
    0,
  );

  // The human answers too late: a clear conflict, and nothing changes.
  const late = await server.api(human, 'POST', `/todos/${approval.id}/approve`, {
    note: 'go ahead',
  });
  expect(late.status).toBe(409);
  expect(late.body).toEqual({
    code: 'conflict',
    error: expect.stringMatching(new RegExp(`#${approval.id}.*session went away`)),
  });
  expect((await server.api(human, 'GET', `/todos/${approval.id}`)).body.todo).toMatchObject({
    state: 'canceled',
    verdict: null,
    decided_by: null,
  });

  // Work piles up meanwhile: a new todo, and the held one once its lease has run out.
  const added = await create(agent.queue, 'Update the changelog');
  await expect
    .poll(async () => (await server.api(human, 'GET', `/todos/${held}`)).body.todo.state, {
      timeout: 5000,
    })
    .toBe('pending');

  // The agent's next session is told, at once, of everything that waits for it.
  const next = await attach(agent);
  try {
    await expect.poll(() => next.events.length).toBeGreaterThanOrEqual(1);
    expect(next.events[0]).toEqual({
      content: `switchboard: 2 todos wait for you: #${held} on ${agent.queue}, #${added} on ${agent.queue}`,
      meta: { event: 'digest', todo_ids: `${held},${added}`, count: '2' },
    });
    expect(next.errors).toEqual([]);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  } finally {
    await next.close();
  }
});

test('regression: a permission prompt relayed before the channel attached was not tied to its session, and outlived it', async () => {
  const agent = await newAgent();
  // No waiting for the channel to attach: Claude Code may ask as soon as it is connected.
  const claude = await startClaudeCode({
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: agent.token,
  });
  await claude.askPermission({
    request_id: 'bcdef',
    tool_name: 'Edit',
    description: 'Edit package.json',
    input_preview: '{}',
  });
  const approval = await approvalFor('bcdef');
  await expect.poll(async () => (await channelSessions(agent.name)).length).toBe(1);
  await killChannel(claude);
  await expect
    .poll(async () => (await server.api(human, 'GET', `/todos/${approval.id}`)).body.todo.state)
    .toBe('canceled');
});

test('regression: a verdict on a canceled approval was refused as if it had expired', async () => {
  const asked = await server.api(human, 'POST', '/approvals', { question: 'Ship it today?' });
  const id = asked.body.todo.id as number;
  await server.api(human, 'POST', `/todos/${id}/cancel`, { reason: 'asked the wrong person' });
  const late = await server.api(human, 'POST', `/todos/${id}/deny`);
  expect(late).toMatchObject({
    status: 409,
    body: {
      code: 'conflict',
      error: `todo #${id} was canceled (asked the wrong person); it takes no verdict now`,
    },
  });
});
