import { afterAll, beforeAll, expect, test } from 'vitest';
import { openEventStream } from '../support/event-stream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// A todo its queue's limits hold back is not rung (a consumer would only be told to come back):
// its ring waits for the time it may be claimed, and comes sooner when a slot frees (issue 25).

let server: TestServer;
let human: string;
let agent: string;

beforeAll(async () => {
  server = await startTestServer({ deliveryTiming: { scanMs: 50 } });
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
  agent = (await server.api(human, 'POST', '/agents', { name: 'bot', queues: ['paced'] })).body
    .token;
  await server.api(server.adminToken, 'PATCH', '/queues/paced', { max_in_flight: 1 });
});
afterAll(() => server.stop());

test('a held-back todo is rung when a slot frees, not before', async () => {
  const stream = await openEventStream(server.url, agent, '?queue=paced');
  try {
    const create = async (title: string) =>
      (await server.api(human, 'POST', '/todos', { queue: 'paced', title })).body.todo.id as number;
    const first = await create('first');
    await stream.waitFor((e) => e.event === 'wake' && e.data.todo_id === first);
    const claimed = (await server.api(agent, 'POST', '/queues/paced/claim')).body.todo;
    expect(claimed.id).toBe(first);

    const second = await create('second');
    // Its ring is taken, and put off until the slot's lease ends: nobody was rung for it.
    await expect
      .poll(async () =>
        (
          await server.sql<{ next_ring_at: Date }[]>`
              select next_ring_at from todo_rings where todo_id = ${second}`
        )[0]?.next_ring_at.toISOString(),
      )
      .toBe(claimed.lease_expires_at);
    expect(
      await server.sql`select from todo_events where todo_id = ${second} and action = 'rung'`,
    ).toHaveLength(0);

    // The holder finishes: the slot frees, and the second is rung at once.
    await server.api(agent, 'POST', `/todos/${first}/complete`, {
      lease_token: claimed.lease_token,
    });
    await stream.waitFor((e) => e.event === 'wake' && e.data.todo_id === second);
    expect(stream.wakes().map((wake) => wake.todo_id)).toEqual([first, second]);
  } finally {
    stream.close();
  }
});
