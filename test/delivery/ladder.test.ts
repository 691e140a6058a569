import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openEventStream } from '../support/event-stream.js';
import { connectMcp } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
let human: string;
let queueNumber = 0;

const TIMING = {
  rerings: [400, 800],
  scanMs: 50,
  heartbeatMs: 200,
  sessionTtlMs: 2000,
  webhookRetriesMs: [50],
};

beforeAll(async () => {
  // The webhooks' receivers are on 127.0.0.1: allowed here, as SWITCHBOARD_OUTBOUND_ALLOW would.
  server = await startTestServer({ deliveryTiming: TIMING, outbound: { allow: ['127.0.0.1/32'] } });
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
});
afterAll(() => server.stop());

/** A fresh agent on a fresh queue: no other test's todos or sessions can ring it. */
async function freshAgent(): Promise<{ name: string; queue: string; token: string }> {
  const n = ++queueNumber;
  const { body } = await server.api(human, 'POST', '/agents', {
    name: `agent-${n}`,
    queues: [`q${n}`],
  });
  return { name: `agent-${n}`, queue: `q${n}`, token: body.token };
}

const create = async (queue: string, title = 'work') =>
  (await server.api(human, 'POST', '/todos', { queue, title })).body.todo.id as number;

const history = async (id: number) =>
  (await server.api(human, 'GET', `/todos/${id}`)).body.history as any[];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('paths', () => {
  test('an MCP session with its stream open gets an MCP log notification', async () => {
    const agent = await freshAgent();
    const mcp = await connectMcp(server.url, agent.token);
    const heard: any[] = [];
    mcp.client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      heard.push(notification.params);
    });
    try {
      // The client opens its notification stream right after initializing; wait until attached.
      await expect
        .poll(
          async () =>
            (
              await server.sql`select count(*) as n from consumer_sessions where principal = ${agent.name}`
            )[0]!.n,
        )
        .toBe(1);
      const id = await create(agent.queue, 'review PR #1');
      await expect.poll(() => heard.length).toBe(1);
      expect(heard[0]).toMatchObject({
        level: 'info',
        logger: 'switchboard',
        data: {
          type: 'wake',
          todo_id: id,
          queue: agent.queue,
          content: `switchboard: todo #${id} on ${agent.queue} — review PR #1`,
        },
      });
      expect((await history(id)).find((e) => e.action === 'rung').data).toMatchObject({
        principal: agent.name,
        path: 'mcp_log',
        outcome: 'delivered',
      });
      expect(mcp.errors).toEqual([]);
    } finally {
      await mcp.close();
    }
  });

  test('with no live session, a registered webhook is rung, signed per Standard Webhooks, retried on failure', async () => {
    const agent = await freshAgent();
    const received: { headers: IncomingMessage['headers']; body: string }[] = [];
    let failuresLeft = 1;
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(failuresLeft-- > 0 ? 502 : 204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const registered = await server.api(agent.token, 'PUT', '/webhook', { url });
      expect(registered.body).toEqual({ url, secret: expect.stringMatching(/^whsec_/) });
      const id = await create(agent.queue, 'deploy');
      await expect.poll(() => received.length).toBe(2);
      const [first, second] = received as [(typeof received)[0], (typeof received)[0]];
      // The same message, twice: the receiver can drop the duplicate by webhook-id.
      expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
      const verified = new Webhook(registered.body.secret).verify(
        second.body,
        second.headers as Record<string, string>,
      );
      expect(verified).toMatchObject({
        type: 'todo.wake',
        data: { todo_id: id, queue: agent.queue, title: 'deploy' },
      });
      await expect
        .poll(async () => (await history(id)).find((e) => e.action === 'rung')?.data)
        .toMatchObject({ principal: agent.name, path: 'webhook', outcome: 'delivered' });
      // A forged signature does not verify.
      expect(() =>
        new Webhook('whsec_' + Buffer.alloc(32).toString('base64')).verify(
          second.body,
          second.headers as Record<string, string>,
        ),
      ).toThrow();
    } finally {
      receiver.close();
    }
  });

  test('webhook URLs must be https to a public address, or go to an allowed one', async () => {
    const agent = await freshAgent();
    for (const url of [
      // (http to a name is taken here, where something is allowed: what it resolves to decides)
      'http://93.184.215.14/hook',
      'https://10.0.0.1/hook',
      'http://127.0.0.2/hook',
      'ftp://127.0.0.1/x',
      'https://user:pw@example.com/',
      'not a url',
    ]) {
      const { status, body } = await server.api(agent.token, 'PUT', '/webhook', { url });
      expect(status).toBe(400);
      expect(body.code).toBe('invalid');
    }
  });
});

describe('ringing', () => {
  test('a pool todo rings one session at a time, round-robin', async () => {
    const agent = await freshAgent();
    const a = await openEventStream(server.url, agent.token);
    const b = await openEventStream(server.url, agent.token);
    try {
      const ids = [];
      for (let i = 0; i < 4; i++) {
        const id = await create(agent.queue, `todo ${i}`);
        ids.push(id);
        // one at a time, so the round-robin order is observable
        await expect.poll(() => a.wakes().length + b.wakes().length).toBe(i + 1);
        // Claimed once rung, as a consumer would: an unclaimed todo would be rung again (after
        // 400 ms here), which a slow machine reaches before the loop ends.
        await server.api(agent.token, 'POST', `/todos/${id}/claim`);
      }
      expect(a.wakes()).toHaveLength(2);
      expect(b.wakes()).toHaveLength(2);
      expect(new Set([...a.wakes(), ...b.wakes()].map((w) => w.todo_id))).toEqual(new Set(ids));
    } finally {
      a.close();
      b.close();
    }
  });

  test('an unclaimed todo is rung again, to another session; once claimed it stops', async () => {
    const agent = await freshAgent();
    const a = await openEventStream(server.url, agent.token);
    const b = await openEventStream(server.url, agent.token);
    try {
      const id = await create(agent.queue, 'nobody takes me');
      await expect.poll(() => a.wakes().length + b.wakes().length, { timeout: 5000 }).toBe(2);
      // The re-ring went to the other session.
      expect(a.wakes()).toHaveLength(1);
      expect(b.wakes()).toHaveLength(1);
      // Each push is recorded once it is made, which may be just after it arrived.
      await expect
        .poll(async () => (await history(id)).filter((e) => e.action === 'rung').length)
        .toBe(2);
      const rings = (await history(id)).filter((e) => e.action === 'rung');
      expect(rings.map((e) => e.data.ring)).toEqual([1, 2]);
      expect(rings[0].data.session).not.toBe(rings[1].data.session);

      await server.api(agent.token, 'POST', `/todos/${id}/claim`);
      const settled = a.wakes().length + b.wakes().length;
      await sleep(1500); // longer than the next re-ring would take
      expect(a.wakes().length + b.wakes().length).toBe(settled);
    } finally {
      a.close();
      b.close();
    }
  });

  test('a consumer that attaches gets one digest of what waits, not a burst', async () => {
    const agent = await freshAgent();
    const ids = [
      await create(agent.queue, 'one'),
      await create(agent.queue, 'two'),
      await create(agent.queue, 'three'),
    ];
    for (const id of ids)
      await expect
        .poll(async () => (await history(id)).some((e) => e.action === 'wake_stored'))
        .toBe(true);
    const stream = await openEventStream(server.url, agent.token);
    try {
      const digests = stream.events.filter((e) => e.event === 'digest');
      expect(digests).toHaveLength(1);
      expect(digests[0]!.data).toMatchObject({
        type: 'digest',
        more: 0,
        todos: ids.map((todo_id) => expect.objectContaining({ todo_id, queue: agent.queue })),
        content: `switchboard: 3 todos wait for you: ${ids.map((id) => `#${id} on ${agent.queue}`).join(', ')}`,
      });
      expect(stream.events.findIndex((e) => e.event === 'digest')).toBeLessThan(
        stream.events.findIndex((e) => e.event === 'ready'),
      );
    } finally {
      stream.close();
    }
  });

  test('quarantined todos are never rung; released, they are', async () => {
    const agent = await freshAgent();
    const stream = await openEventStream(server.url, agent.token);
    try {
      const [held] = await server.sql`
        insert into todos (queue, kind, title, state, source, attributed_to)
        values (${agent.queue}, 'github.issues.opened', 'from a stranger', 'quarantined', 'github', 'stranger')
        returning id`;
      await sleep(300);
      expect(stream.wakes()).toEqual([]);
      await server.api(human, 'POST', `/todos/${held!.id}/release-quarantine`);
      await stream.waitFor((e) => e.event === 'wake' && e.data.todo_id === held!.id);
    } finally {
      stream.close();
    }
  });

  test('a session left behind by a dead process costs a re-ring, never the todo', async () => {
    const agent = await freshAgent();
    // A session nobody serves any more (its process died without cleaning up). It looks alive
    // and is the longest attached, so it is rung first.
    await server.sql`
      with process as (insert into consumer_processes (id) values (gen_random_uuid()) returning id)
      insert into consumer_sessions (id, principal, process_id, path, connected_at)
      select gen_random_uuid(), ${agent.name}, id, 'sse', now() - interval '1 minute' from process`;
    const live = await openEventStream(server.url, agent.token);
    try {
      const id = await create(agent.queue, 'must arrive');
      await live.waitFor((e) => e.event === 'wake' && e.data.todo_id === id, 5000);
    } finally {
      live.close();
    }
  });
});

describe('approvals and verdicts', () => {
  test('an approval rings its human; the verdict rings the agent that asked', async () => {
    const agent = await freshAgent();
    const bob = await openEventStream(server.url, human, '?queue=approvals');
    const bot = await openEventStream(server.url, agent.token);
    try {
      const asked = await server.api(agent.token, 'POST', '/approvals', {
        question: 'may I deploy?',
      });
      const id = asked.body.todo.id as number;
      const approval = await bob.waitFor((e) => e.event === 'wake' && e.data.todo_id === id);
      expect(approval.data).toMatchObject({
        type: 'approval',
        requested_by: agent.name,
        title: 'may I deploy?',
      });
      await server.api(human, 'POST', `/todos/${id}/approve`, { note: 'go ahead' });
      const verdict = await bot.waitFor((e) => e.event === 'wake' && e.data.type === 'verdict');
      expect(verdict.data).toMatchObject({
        todo_id: id,
        verdict: 'allow',
        decided_by: 'bob',
        note: 'go ahead',
        content: `switchboard: approval #${id} allowed by bob — go ahead`,
      });
      // Each push is recorded once it is made, which may be just after it arrived.
      await expect
        .poll(async () =>
          (await history(id))
            .filter((e) => e.action === 'notified')
            .map((e) => [e.data.principal, e.data.outcome]),
        )
        .toEqual([
          ['bob', 'delivered'],
          [agent.name, 'delivered'],
        ]);
    } finally {
      bob.close();
      bot.close();
    }
  });
});
