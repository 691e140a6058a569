import { afterAll, beforeAll, expect, test } from 'vitest';
import { connectMcp, type TestMcpClient } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  buildTenancyWorld,
  CALLERS,
  checkVerb,
  foreignPairs,
  type Caller,
  type TenancyWorld,
} from './support/tenancy-world.js';

let server: TestServer;
let world: TenancyWorld;
const clients = {} as Record<Caller, TestMcpClient>;

beforeAll(async () => {
  server = await startTestServer();
  world = await buildTenancyWorld(server);
  // Any principal may use /mcp: humans as well as agents.
  for (const caller of CALLERS)
    clients[caller] = await connectMcp(server.url, world.tokens[caller]);
});
afterAll(async () => {
  for (const client of Object.values(clients)) await client.close();
  await server?.stop();
});

/** Every MCP tool that takes a todo id, with the arguments it is called with for `id`. */
const TOOLS: Record<string, (id: number, lease: string) => Record<string, unknown>> = {
  get_todo: (id) => ({ todo_id: id }),
  claim_todo: (id) => ({ todo_id: id, lease_seconds: 60 }),
  heartbeat_todo: (id, lease) => ({ todo_id: id, lease_token: lease, lease_seconds: 60 }),
  complete_todo: (id, lease) => ({ todo_id: id, lease_token: lease, summary: 'done' }),
  fail_todo: (id, lease) => ({ todo_id: id, lease_token: lease, reason: 'no' }),
  release_todo: (id, lease) => ({ todo_id: id, lease_token: lease }),
  reply: (id) => ({ todo_id: id, text: 'hello' }),
  request_approval: (id) => ({ question: 'May I?', todo_id: id }),
};

test.each(Object.keys(TOOLS))(
  'tenancy matrix (MCP): %s on a todo the caller cannot read answers as a missing id and changes nothing',
  async (tool) => {
    const wrong = await checkVerb(
      world,
      foreignPairs(),
      async (caller, id, lease) => {
        const { isError, content, structuredContent } = await clients[caller].call(
          tool,
          TOOLS[tool]!(id, lease),
        );
        return JSON.stringify({ isError, content, structuredContent });
      },
      () => /^\{"isError":true,"content":\[\{"type":"text","text":"todo #\d+ not found\. /,
    );
    expect(wrong).toEqual([]);
    for (const caller of CALLERS) expect(clients[caller].errors).toEqual([]);
  },
);
