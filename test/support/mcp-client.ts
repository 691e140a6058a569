import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface TestMcpClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Errors the client reported (e.g. a notification failing its schema); a test expects none. */
  errors: Error[];
  /** Calls a tool; returns the result with its text and (when not an error) parsed structured content. */
  call(
    name: string,
    args?: Record<string, unknown>,
  ): Promise<CallToolResult & { text: string; data: any }>;
  close(): Promise<void>;
}

/** A raw JSON-RPC `initialize` request, for tests that speak to /mcp without the SDK's client. */
export function initializeRequest(client: string, id: number = 1) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: client, version: '1' },
    },
  };
}

/** A real MCP client on the server's /mcp endpoint, authenticated with `token`. */
export async function connectMcp(
  url: string,
  token: string,
  name = 'test-agent',
): Promise<TestMcpClient> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: '1.0.0' });
  const errors: Error[] = [];
  let closing = false;
  client.onerror = (error) => {
    if (!closing) errors.push(error);
  };
  await client.connect(transport);
  return {
    client,
    transport,
    errors,
    async call(toolName, args = {}) {
      const result = (await client.callTool({ name: toolName, arguments: args })) as CallToolResult;
      const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      return { ...result, text, data: result.structuredContent };
    },
    async close() {
      closing = true;
      await client.close();
    },
  };
}
