import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { startClaudeCode, type ClaudeCode } from '../support/claude-code-client.js';
import { connectMcp, type TestMcpClient } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// Claude Code asks for the tool list once, at start-up. A channel started during an outage
// must still offer every tool, and its calls must work once the server is back.

let first: TestServer;
let second: TestServer | undefined;
let claude: ClaudeCode | undefined;
let mcp: TestMcpClient | undefined;
let token: string;

beforeAll(async () => {
  // The agent is made on a first process; the channel's server is a second one on the same
  // database, started later on a port the channel was given while nothing listened there.
  first = await startTestServer();
  const { body } = await first.api(first.adminToken, 'POST', '/agents', {
    name: 'early',
    queues: ['early'],
  });
  token = body.token;
});
afterAll(async () => {
  await claude?.close();
  await mcp?.close();
  await second?.stop();
  await first?.stop();
});

test('regression: a channel started while the server is down listed no tools for the whole session', async () => {
  const port = await freePort();
  claude = await startClaudeCode({
    SWITCHBOARD_URL: `http://127.0.0.1:${port}`,
    SWITCHBOARD_TOKEN: token,
  });
  const listedWhileDown = (await claude.client.listTools()).tools;

  // A call meanwhile is refused with what to do, and changes nothing.
  const refused = await claude.call('list_todos');
  expect(refused.isError).toBe(true);
  expect(refused.text).toBe(
    `switchboard at http://127.0.0.1:${port} cannot be reached right now; nothing changed. Try again in a minute.`,
  );

  // A mistyped argument is refused for what it is, server or no server.
  const mistyped = await claude.call('claim_todo', { todo_id: 'abc' });
  expect(mistyped.isError).toBe(true);
  expect(mistyped.text).toMatch(/todo_id must be the number of a todo/);

  second = await startTestServer({ schema: first.schema, port });
  await first.api(first.adminToken, 'POST', '/todos', { queue: 'early', title: 'waited' });

  // Exactly what /mcp lists: names, descriptions, input schemas, hints.
  mcp = await connectMcp(second.url, token);
  const served = (await mcp.client.listTools()).tools;
  expect(served.map((tool) => tool.name)).toHaveLength(12);
  expect(listedWhileDown).toEqual(served);

  // The same call works now, in the same session: no restart of the channel.
  const listed = await claude.call('list_todos');
  expect(listed.isError, listed.text).toBeFalsy();
  expect(listed.structuredContent).toEqual({
    todos: [expect.objectContaining({ queue: 'early', title: 'waited' })],
  });
  expect((await claude.client.listTools()).tools).toEqual(served);
  expect(claude.errors).toEqual([]);
});
