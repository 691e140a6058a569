import { afterAll, beforeAll, expect, test } from 'vitest';
import { openEventStream } from '../support/event-stream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
let agentToken: string;

beforeAll(async () => {
  server = await startTestServer();
  agentToken = (
    await server.api(server.adminToken, 'POST', '/agents', { name: 'solo', queues: ['busy'] })
  ).body.token;
});
afterAll(() => server.stop());

// Found by the PostgreSQL-restart fault test: with one consumer attached, todos created at the
// same moment raced for its session row; the rings that found it locked skipped it, found
// nobody, and recorded "wake_stored — no consumer attached", so the consumer heard of those
// todos only at their re-ring, 30 s later.
test('todos created together all ring the one consumer at once: none is stored while it is being rung', async () => {
  const stream = await openEventStream(server.url, agentToken);
  try {
    const created = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        server.api(server.adminToken, 'POST', '/todos', { queue: 'busy', title: `together ${i}` }),
      ),
    );
    const ids = created.map(({ body }) => body.todo.id as number);
    await expect
      .poll(() => ids.filter((id) => !stream.wakes().some((wake) => wake.todo_id === id)), {
        timeout: 5000,
      })
      .toEqual([]);
    const stored = await server.sql`
      select todo_id from todo_events where action = 'wake_stored' and todo_id = any(${ids}::bigint[])`;
    expect(stored).toEqual([]);
  } finally {
    stream.close();
  }
});
