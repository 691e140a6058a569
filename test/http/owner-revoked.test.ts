import { afterAll, beforeAll, expect, test } from 'vitest';
import { openEventStream } from '../support/event-stream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
/** A second process on the same database: what the database says, every process must hold to. */
let other: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  other = await startTestServer({ schema: server.schema });
});
afterAll(async () => {
  await other?.stop();
  await server?.stop();
});

/** A human added by the admin, and an agent of theirs: both tokens. */
async function humanWithAgent(name: string): Promise<{ human: string; agent: string }> {
  const added = await server.api(server.adminToken, 'POST', '/humans', { name });
  expect(added.status).toBe(201);
  const agent = await server.api(added.body.token, 'POST', '/agents', {
    name: `${name}-bot`,
    queues: ['reviews'],
  });
  expect(agent.status).toBe(201);
  return { human: added.body.token, agent: agent.body.token };
}

test('regression: a revoked human’s agent token still answered whoami and raised an approval', async () => {
  const { agent } = await humanWithAgent('gone');
  // Seen once by each process, so that a cached answer would be found.
  for (const process of [server, other])
    expect((await process.api(agent, 'GET', '/whoami')).status).toBe(200);

  await server.sql`update principals set revoked_at = now() where name = 'gone'`;

  for (const process of [server, other]) {
    await expect.poll(async () => (await process.api(agent, 'GET', '/whoami')).status).toBe(401);
    const asked = await process.api(agent, 'POST', '/approvals', { question: 'May I?' });
    expect(asked.status).toBe(401);
  }
  const [{ approvals }] = await server.sql<[{ approvals: number }]>`
    select count(*)::int as approvals from todos where kind = 'approval' and assignee = 'gone'`;
  expect(approvals).toBe(0);
});

test('regression: a revoked human’s agent kept its event stream open in another process', async () => {
  const { agent } = await humanWithAgent('left');
  const stream = await openEventStream(other.url, agent);
  try {
    await server.sql`update principals set revoked_at = now() where name = 'left'`;
    // Rung for a todo on its queue, a stream that went on would carry it.
    await server.api(server.adminToken, 'POST', '/todos', {
      queue: 'reviews',
      title: 'after left left',
    });
    await stream.ended;
    expect(stream.wakes()).toEqual([]);
    expect((await other.api(agent, 'GET', '/whoami')).status).toBe(401);
  } finally {
    stream.close();
  }
});
