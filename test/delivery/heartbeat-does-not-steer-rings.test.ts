import { afterAll, beforeAll, expect, test } from 'vitest';
import { openEventStream } from '../support/event-stream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
let agentToken: string;

beforeAll(async () => {
  server = await startTestServer();
  agentToken = (
    await server.api(server.adminToken, 'POST', '/agents', { name: 'pair', queues: ['turns'] })
  ).body.token;
});
afterAll(() => server.stop());

// Found by the fault runs, as a rare imbalance in the round-robin test: the heartbeat refreshed
// every session row of its process, and a ring skips session rows that are locked (so that rings
// at the same instant spread out), so whichever sessions the heartbeat held that moment were
// passed over. Liveness now lives in its own row per process, which rings never lock.
test('regression: a heartbeat in progress made rings pass its sessions over', async () => {
  const first = await openEventStream(server.url, agentToken);
  const second = await openEventStream(server.url, agentToken);
  const beating = await server.sql.reserve();
  try {
    // A heartbeat caught in the middle: its transaction holds the process's liveness row.
    await beating`begin`;
    const held = await beating`update consumer_processes set seen_at = now() returning id`;
    expect(held.length).toBeGreaterThan(0);
    for (let i = 0; i < 4; i++) {
      const { body } = await server.api(server.adminToken, 'POST', '/todos', {
        queue: 'turns',
        title: `turn ${i}`,
      });
      await expect
        .poll(() => [...first.wakes(), ...second.wakes()].some((w) => w.todo_id === body.todo.id))
        .toBe(true);
    }
    // Taking turns: two each, though the heartbeat never let go.
    expect([first.wakes().length, second.wakes().length]).toEqual([2, 2]);
  } finally {
    await beating`rollback`.catch(() => {});
    beating.release();
    first.close();
    second.close();
  }
});
