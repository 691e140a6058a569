import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startClaudeCode, type ClaudeCode } from '../support/claude-code-client.js';
import { openEventStream } from '../support/event-stream.js';
import { connectMcp, type TestMcpClient } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// Re-rings far away: every wake a test sees is the first ring, never a second chance.
const TIMING = { rerings: [60_000], scanMs: 100, heartbeatMs: 500, sessionTtlMs: 5000 };

let server: TestServer;
let human: string;
let agentNumber = 0;

beforeAll(async () => {
  server = await startTestServer({ deliveryTiming: TIMING });
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
});
afterAll(() => server.stop());

/** A fresh agent on a fresh queue: no other test's todos or sessions can ring it. */
async function freshAgent(): Promise<{ name: string; queue: string; token: string }> {
  const n = ++agentNumber;
  const { body } = await server.api(human, 'POST', '/agents', {
    name: `ranked-${n}`,
    queues: [`rq${n}`],
  });
  return { name: `ranked-${n}`, queue: `rq${n}`, token: body.token };
}

const create = async (queue: string, title = 'work') =>
  (await server.api(human, 'POST', '/todos', { queue, title })).body.todo.id as number;

const sessionsOf = async (principal: string) =>
  (
    await server.sql<{ path: string }[]>`
      select path from consumer_sessions where principal = ${principal} order by path`
  ).map((row) => row.path);

const rungPaths = async (id: number) =>
  (await server.api(human, 'GET', `/todos/${id}`)).body.history
    .filter((e: any) => e.action === 'rung')
    .map((e: any) => e.data.path);

/** A Claude Code stand-in on the real `switchboard channel`, once its stream is attached. */
async function claudeFor(agent: { name: string; token: string }, attached = 1) {
  const claude = await startClaudeCode({
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: agent.token,
  });
  await expect
    .poll(async () => (await sessionsOf(agent.name)).filter((p) => p === 'channel').length)
    .toBe(attached);
  return claude;
}

const wakesFor = (claude: ClaudeCode) =>
  claude.events.filter((e) => e.meta.event === 'claimable').map((e) => Number(e.meta.todo_id));

/** An MCP client on /mcp that keeps its notification stream open and collects doorbells. */
async function mcpListener(agent: { name: string; token: string }) {
  const mcp = await connectMcp(server.url, agent.token);
  const heard: number[] = [];
  mcp.client.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => {
    const data = params.data as { type?: string; todo_id?: number };
    if (data.type === 'wake') heard.push(data.todo_id!);
  });
  await expect.poll(async () => (await sessionsOf(agent.name)).includes('mcp_log')).toBe(true);
  return { mcp, heard };
}

describe('the channel is the best rung', () => {
  test('regression: a live Claude Code session missed every second wake once it had used the channel tools', async () => {
    const agent = await freshAgent();
    const claude = await claudeFor(agent);
    try {
      // The session works a first todo through the channel's tools (proxied to /mcp).
      const first = await create(agent.queue, 'first');
      await expect.poll(() => wakesFor(claude)).toEqual([first]);
      expect((await claude.call('claim_todo', { todo_id: first })).isError).toBeFalsy();
      expect((await claude.call('complete_todo', { todo_id: first })).isError).toBeFalsy();
      // The channel's own connection to /mcp is not a consumer: only its event stream is.
      expect(await sessionsOf(agent.name)).toEqual(['channel']);

      // 100 wakes in a row, each in front of the model within a second (re-rings are a minute
      // away, so a wake rung to anyone else would not arrive in time).
      for (let i = 0; i < 100; i++) {
        const id = await create(agent.queue, `todo ${i}`);
        await expect.poll(() => wakesFor(claude).includes(id), { timeout: 1000 }).toBe(true);
        // Worked through the tools as a session would, so the proxy stays in use throughout.
        if (i % 10 === 0)
          expect((await claude.call('claim_todo', { todo_id: id })).isError).toBeFalsy();
      }
      expect(wakesFor(claude)).toHaveLength(101);
      expect(await sessionsOf(agent.name)).toEqual(['channel']);
      expect(claude.errors).toEqual([]);
    } finally {
      await claude.close();
    }
  });

  test('an agent with a channel and an open /mcp stream gets every wake on the channel', async () => {
    const agent = await freshAgent();
    const claude = await claudeFor(agent);
    const { mcp, heard } = await mcpListener(agent);
    try {
      expect(await sessionsOf(agent.name)).toEqual(['channel', 'mcp_log']);
      const ids: number[] = [];
      for (let i = 0; i < 10; i++) {
        const id = await create(agent.queue, `todo ${i}`);
        ids.push(id);
        await expect.poll(() => wakesFor(claude).includes(id)).toBe(true);
      }
      expect(wakesFor(claude)).toEqual(ids);
      expect(heard).toEqual([]);
      // Each push is recorded once it is made, which may be just after it arrived.
      for (const id of ids) await expect.poll(() => rungPaths(id)).toEqual(['channel']);
    } finally {
      await mcp.close();
      await claude.close();
    }
  });

  test('two channel sessions of one agent still share rings round-robin', async () => {
    const agent = await freshAgent();
    const one = await claudeFor(agent, 1);
    const two = await claudeFor(agent, 2);
    try {
      const ids: number[] = [];
      for (let i = 0; i < 6; i++) {
        const id = await create(agent.queue, `todo ${i}`);
        ids.push(id);
        await expect.poll(() => wakesFor(one).length + wakesFor(two).length).toBe(i + 1);
        // Claimed once rung, as the session would (otherwise it is rung again later).
        await server.api(agent.token, 'POST', `/todos/${id}/claim`);
      }
      expect(wakesFor(one)).toHaveLength(3);
      expect(wakesFor(two)).toHaveLength(3);
      expect(new Set([...wakesFor(one), ...wakesFor(two)])).toEqual(new Set(ids));
    } finally {
      await one.close();
      await two.close();
    }
  });
});

describe('lower rungs', () => {
  test('an event stream outranks an MCP log notification; the MCP session is rung once the stream is gone', async () => {
    const agent = await freshAgent();
    let listener: { mcp: TestMcpClient; heard: number[] } | undefined;
    const stream = await openEventStream(server.url, agent.token);
    try {
      listener = await mcpListener(agent);
      // Round-robin would alternate between the two; the ladder gives the stream every one.
      for (let i = 0; i < 3; i++) {
        const id = await create(agent.queue, `for the stream ${i}`);
        await stream.waitFor((e) => e.event === 'wake' && e.data.todo_id === id);
        await expect.poll(() => rungPaths(id)).toEqual(['sse']);
      }
      expect(listener.heard).toEqual([]);

      stream.close();
      await expect.poll(async () => await sessionsOf(agent.name)).toEqual(['mcp_log']);
      const second = await create(agent.queue, 'for the MCP client');
      await expect.poll(() => listener!.heard).toEqual([second]);
      await expect.poll(() => rungPaths(second)).toEqual(['mcp_log']);
    } finally {
      stream.close();
      await listener?.mcp.close();
    }
  });

  test('a busy session of the best rank is waited for, never passed over for a lower rank', async () => {
    const agent = await freshAgent();
    const stream = await openEventStream(server.url, agent.token);
    const { mcp, heard } = await mcpListener(agent);
    try {
      // Created together: each ring takes the stream's session row while it pushes.
      const ids = await Promise.all(
        Array.from({ length: 8 }, (_, i) => create(agent.queue, `burst ${i}`)),
      );
      await expect.poll(() => new Set(stream.wakes().map((w) => w.todo_id))).toEqual(new Set(ids));
      expect(heard).toEqual([]);
    } finally {
      stream.close();
      await mcp.close();
    }
  });
});
