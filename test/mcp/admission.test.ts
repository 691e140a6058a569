import { afterAll, beforeAll, expect, test } from 'vitest';
import { connectMcp, type TestMcpClient } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// A queue at its limit, as an agent sees it through a real MCP client (issue 25): claim_next
// skips to the queue's next claimable todo, or answers when to come back.

let server: TestServer;
let human: string;
let agent: TestMcpClient;

beforeAll(async () => {
  server = await startTestServer();
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
  const token = (
    await server.api(human, 'POST', '/agents', { name: 'bot', queues: ['paced', 'free'] })
  ).body.token;
  agent = await connectMcp(server.url, token);
});
afterAll(async () => {
  expect(agent.errors).toEqual([]);
  await agent.close();
  await server.stop();
});

const create = async (queue: string, title: string, assignee?: string) =>
  (await server.api(human, 'POST', '/todos', { queue, title, assignee })).body.todo.id as number;

test('claim_next skips what the agent may not take, then answers with the time to come back', async () => {
  await server.api(server.adminToken, 'PATCH', '/queues/paced', { max_in_flight: 2 });
  // The oldest is assigned to someone else: claim_next skips to the next claimable one.
  await create('paced', 'for bob only', 'bob');
  const first = await create('paced', 'first');
  const second = await create('paced', 'second');
  const third = await create('paced', 'third');

  const claimed = await agent.call('claim_next', { queue: 'paced', lease_seconds: 120 });
  expect(claimed.data.todo.id).toBe(first);
  expect((await agent.call('claim_next', { queue: 'paced' })).data.todo.id).toBe(second);

  const held = await agent.call('claim_next', { queue: 'paced' });
  expect(held.isError).toBeFalsy();
  const nextAt = claimed.data.todo.lease_expires_at as string;
  expect(held.data).toEqual({
    todo: null,
    held_back: {
      queue: 'paced',
      reason: 'max_in_flight',
      next_at: nextAt,
      message: `at its limit of 2 in flight — next at ${nextAt}`,
    },
  });
  expect(held.text).toMatch(
    new RegExp(
      `^no claimable todo on paced: at its limit of 2 in flight — next at ${nextAt}\\. Call claim_next again at ${nextAt}`,
    ),
  );
  // Another queue is not held back by this one's limits.
  const free = await create('free', 'unlimited');
  expect((await agent.call('claim_next', { queue: 'free' })).data.todo.id).toBe(free);

  // get_todo says why the third waits; claim_todo by id is refused with a next step.
  expect((await agent.call('get_todo', { todo_id: third })).data).toMatchObject({
    todo: { id: third, state: 'pending' },
    held_back: { reason: 'max_in_flight', next_at: nextAt },
  });
  const byId = await agent.call('claim_todo', { todo_id: third });
  expect(byId.isError).toBe(true);
  expect(byId.text).toBe(
    `todo #${third} is held back: queue paced is at its limit of 2 in flight — next at ${nextAt}. ` +
      'Leave this todo and take another with claim_next, or check its state with get_todo.',
  );

  // A completion frees a slot: the next claim_next takes the third.
  expect((await agent.call('complete_todo', { todo_id: first })).isError).toBeFalsy();
  expect((await agent.call('claim_next', { queue: 'paced' })).data.todo.id).toBe(third);
});
