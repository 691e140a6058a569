import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openEventStream } from '../support/event-stream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const TIMING = {
  rerings: [60_000],
  scanMs: 100,
  heartbeatMs: 200,
  sessionTtlMs: 2000,
  webhookRetriesMs: [50],
};

// Two server processes on one schema: both hear every wake, one may act on it.
let a: TestServer;
let b: TestServer;
let humanNumber = 0;

beforeAll(async () => {
  // The webhooks' receivers are on 127.0.0.1: allowed here, as SWITCHBOARD_OUTBOUND_ALLOW would.
  const outbound = { allow: ['127.0.0.1/32'] };
  a = await startTestServer({ deliveryTiming: TIMING, outbound });
  b = await startTestServer({ schema: a.schema, deliveryTiming: TIMING, outbound });
});
afterAll(async () => {
  await b.stop();
  await a.stop();
});

/** A fresh human and their agent, so that no other test's sessions or webhooks count. */
async function humanWithAgent() {
  const n = ++humanNumber;
  const human = (await a.api(a.adminToken, 'POST', '/humans', { name: `owner-${n}` })).body.token;
  const agent = (await a.api(human, 'POST', '/agents', { name: `asker-${n}`, queues: ['work'] }))
    .body.token;
  return { name: `owner-${n}`, human, agent, agentName: `asker-${n}` };
}

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

async function startReceiver(): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    server,
  };
}

const historyOf = async (token: string, id: number) =>
  (await a.api(token, 'GET', `/todos/${id}`)).body.history as any[];

test('regression: an approval for a human with no session attached never rang their webhook', async () => {
  const cast = await humanWithAgent();
  const receiver = await startReceiver();
  try {
    const { secret } = (await a.api(cast.human, 'PUT', '/webhook', { url: receiver.url })).body;
    const asked = await a.api(cast.agent, 'POST', '/approvals', { question: 'may I deploy?' });
    const id = asked.body.todo.id as number;
    await expect.poll(() => receiver.received.length).toBe(1);
    const [delivery] = receiver.received;
    const verified = new Webhook(secret).verify(
      delivery!.body,
      delivery!.headers as Record<string, string>,
    );
    expect(verified).toMatchObject({
      type: 'todo.approval',
      data: { todo_id: id, requested_by: cast.agentName, title: 'may I deploy?' },
    });
    await expect
      .poll(async () =>
        (await historyOf(cast.human, id))
          .filter((e) => e.action === 'notified')
          .map((e) => [e.data.principal, e.data.path, e.data.outcome]),
      )
      .toEqual([[cast.name, 'webhook', 'delivered']]);
    // Two processes heard the wake; the webhook was rung once.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.received).toHaveLength(1);
  } finally {
    receiver.server.close();
  }
});

test('regression: an approval that reached nobody left no trace in its history', async () => {
  const cast = await humanWithAgent();
  const asked = await a.api(cast.agent, 'POST', '/approvals', { question: 'may I merge?' });
  const id = asked.body.todo.id as number;
  await expect
    .poll(async () =>
      (await historyOf(cast.human, id))
        .filter((e) => e.action === 'wake_stored')
        .map((e) => e.data.reason),
    )
    .toEqual([`nobody was told: ${cast.name} has no session attached and no webhook`]);
  // Recorded once, though both processes heard the wake.
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect((await historyOf(cast.human, id)).filter((e) => e.action === 'wake_stored')).toHaveLength(
    1,
  );
  // Offered when the human next attaches.
  const stream = await openEventStream(b.url, cast.human, '?queue=approvals');
  try {
    const digest = stream.events.find((e) => e.event === 'digest');
    expect(digest?.data.todos.map((t: { todo_id: number }) => t.todo_id)).toContain(id);
  } finally {
    stream.close();
  }
});

test('a verdict for an agent with no session attached rings its webhook', async () => {
  const cast = await humanWithAgent();
  const receiver = await startReceiver();
  try {
    const { secret } = (await a.api(cast.agent, 'PUT', '/webhook', { url: receiver.url })).body;
    const asked = await a.api(cast.agent, 'POST', '/approvals', { question: 'may I tag?' });
    const id = asked.body.todo.id as number;
    await a.api(cast.human, 'POST', `/todos/${id}/deny`, { note: 'not today' });
    await expect.poll(() => receiver.received.length).toBe(1);
    const [delivery] = receiver.received;
    expect(
      new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>),
    ).toMatchObject({
      type: 'todo.verdict',
      data: { todo_id: id, verdict: 'deny', decided_by: cast.name, note: 'not today' },
    });
  } finally {
    receiver.server.close();
  }
});

test('an approval for a human with a session attached to either process is pushed there, not to the webhook', async () => {
  const cast = await humanWithAgent();
  const receiver = await startReceiver();
  const stream = await openEventStream(b.url, cast.human, '?queue=approvals');
  try {
    await a.api(cast.human, 'PUT', '/webhook', { url: receiver.url });
    const asked = await a.api(cast.agent, 'POST', '/approvals', { question: 'may I ship?' });
    const id = asked.body.todo.id as number;
    await stream.waitFor((e) => e.event === 'wake' && e.data.todo_id === id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.received).toEqual([]);
    expect(
      (await historyOf(cast.human, id)).filter((e) => e.action === 'wake_stored'),
    ).toHaveLength(0);
  } finally {
    stream.close();
    receiver.server.close();
  }
});
