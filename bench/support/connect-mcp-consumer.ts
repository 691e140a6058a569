import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

export interface McpConsumer {
  client: Client;
  close(): Promise<void>;
}

/**
 * A real MCP client on the server's /mcp endpoint, authenticated as `token`, calling `onMessage`
 * with the `data` of every `notifications/message` it receives. The SDK opens the session's
 * notification stream (the standalone GET) by itself right after initializing; the server
 * attaches the session as a consumer once that stream is open.
 */
export async function connectMcpConsumer(
  baseUrl: string,
  token: string,
  onMessage: (data: unknown) => void = () => {},
): Promise<McpConsumer> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'switchboard-bench', version: '1.0.0' });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    onMessage(notification.params.data);
  });
  await client.connect(transport);
  return {
    client,
    // A well-behaved client ends its session (DELETE): one that only disconnects leaves it on
    // the server, resumable, until it has been idle for 30 minutes.
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}
