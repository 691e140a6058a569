import { afterAll, beforeAll, expect, test } from 'vitest';
import { openEventStream, type EventStreamClient } from '../support/event-stream.js';
import { connectMcp, initializeRequest, type TestMcpClient } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// What one principal may hold at once (README, Reliability: limits): live MCP sessions, and
// event streams wherever they are opened (the API's /events, MCP's notification stream, the
// console's /live). A refusal names the cap and how to free a slot.

let server: TestServer;
let agent: string;
let other: string;
let human: string;

beforeAll(async () => {
  server = await startTestServer({ limits: { mcpSessions: 3, streams: 2 } });
  const add = async (name: string) =>
    (await server.api(server.adminToken, 'POST', '/agents', { name, queues: ['caps'] })).body
      .token as string;
  agent = await add('busy');
  other = await add('calm');
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'hana' })).body.token;
});
afterAll(() => server.stop());

/** An MCP session opened by hand: the SDK client would open its notification stream at once. */
async function initialize(token: string): Promise<Response> {
  return fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(initializeRequest('caps')),
  });
}

const end = (token: string, session: string) =>
  fetch(`${server.url}/mcp`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}`, 'mcp-session-id': session },
  });

test('regression: one token opened MCP sessions without limit (3,000 in 2.3 s)', async () => {
  const sessions: string[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const response = await initialize(agent);
      expect(response.status).toBe(200);
      sessions.push(response.headers.get('mcp-session-id')!);
    }
    const fourth = await initialize(agent);
    expect(fourth.status).toBe(429);
    const refusal = (await fourth.json()) as any;
    expect(refusal).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
    expect(refusal.error.message).toMatch(/busy has 3 live MCP sessions/);
    expect(refusal.error.message).toMatch(/SWITCHBOARD_MAX_MCP_SESSIONS/);
    expect(refusal.error.message).toMatch(/DELETE \/mcp/);

    // The cap is per principal: another agent opens its own, with a real client.
    const calm: TestMcpClient = await connectMcp(server.url, other, 'calm');
    await calm.close();

    // Ending one frees its slot.
    expect((await end(agent, sessions.shift()!)).status).toBe(200);
    const again = await initialize(agent);
    expect(again.status).toBe(200);
    sessions.push(again.headers.get('mcp-session-id')!);
  } finally {
    for (const session of sessions) await end(agent, session);
  }
});

test('regression: one token opened event streams without limit: /events, MCP notification streams and console pages share the cap', async () => {
  const streams: EventStreamClient[] = [];
  let session: string | undefined;
  try {
    streams.push(await openEventStream(server.url, agent));
    streams.push(await openEventStream(server.url, agent));

    const third = await fetch(`${server.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${agent}` },
    });
    expect(third.status).toBe(429);
    const refusal = (await third.json()) as any;
    expect(refusal).toEqual({ error: expect.any(String), code: 'too_many_streams' });
    expect(refusal.error).toMatch(/busy has 2 event streams open/);
    expect(refusal.error).toMatch(/SWITCHBOARD_MAX_STREAMS/);
    expect(refusal.error).toMatch(/close one to free its slot/);

    // An MCP session of the same agent cannot open its notification stream either.
    const opened = await initialize(agent);
    session = opened.headers.get('mcp-session-id')!;
    const mcpStream = await fetch(`${server.url}/mcp`, {
      headers: {
        authorization: `Bearer ${agent}`,
        'mcp-session-id': session,
        accept: 'text/event-stream',
      },
    });
    expect(mcpStream.status).toBe(429);
    expect(((await mcpStream.json()) as any).error.message).toMatch(/SWITCHBOARD_MAX_STREAMS/);

    // Another principal is not affected.
    const calm = await openEventStream(server.url, other);
    calm.close();

    // Closing one frees its slot (the server hears the close a moment later).
    streams.shift()!.close();
    await expect
      .poll(async () => {
        const response = await fetch(`${server.url}/mcp`, {
          headers: {
            authorization: `Bearer ${agent}`,
            'mcp-session-id': session!,
            accept: 'text/event-stream',
          },
        });
        await response.body?.cancel();
        return response.status;
      })
      .toBe(200);
  } finally {
    for (const stream of streams) stream.close();
    if (session) await end(agent, session);
  }
});

test("a human's console pages count among their streams", async () => {
  const link = await server.api(human, 'POST', '/web/sign-in-links');
  const redeemed = await fetch(link.body.url, { redirect: 'manual' });
  const cookie = redeemed.headers.get('set-cookie')!.split(';')[0]!;
  const live = () =>
    fetch(`${server.url}/live?page=%2F`, { headers: { cookie, accept: 'text/event-stream' } });
  const streams: EventStreamClient[] = [];
  const pages: Response[] = [];
  try {
    pages.push(await live());
    expect(pages[0]!.status).toBe(200);
    streams.push(await openEventStream(server.url, human));
    const third = await live();
    expect(third.status).toBe(429);
    expect(await third.json()).toMatchObject({ code: 'too_many_streams' });
    const api = await fetch(`${server.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${human}` },
    });
    expect(api.status).toBe(429);
    await api.body?.cancel();
  } finally {
    for (const stream of streams) stream.close();
    for (const page of pages) await page.body?.cancel();
  }
});
