// What the bare MCP servers (bare-mcp-server.ts, bare-mcp-server-same-rows.ts) share: node:http,
// the MCP SDK's Streamable HTTP transport with one SDK server and transport per session, as the
// SDK's own example has it, and JSON answers. The tools, and whether a bearer token is asked
// for, are each server's own.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export interface BareServer {
  url: string;
  close(): Promise<void>;
}

export interface McpSessionsOptions<P extends { name: string }> {
  name: string;
  /** Registers one session's tools, which act for the principal that opened it. */
  tools(server: McpServer, principal: P): void;
  /**
   * The principal a request's `Authorization` header stands for, asked of every request; none
   * is answered 401. Without it, every request is `anyone`'s.
   */
  authenticate?: (authorization: string | undefined) => Promise<P | undefined>;
  anyone?: P;
}

interface Session<P> {
  transport: StreamableHTTPServerTransport;
  principal: P;
}

/** Serves MCP at /mcp on 127.0.0.1. */
export async function serveMcpSessions<P extends { name: string }>(
  options: McpSessionsOptions<P>,
): Promise<BareServer> {
  const sessions = new Map<string, Session<P>>();

  const newSession = async (principal: P): Promise<StreamableHTTPServerTransport> => {
    const server = new McpServer(
      { name: options.name, version: '1.0.0' },
      { capabilities: { tools: {} } },
    );
    options.tools(server, principal);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => void sessions.set(id, { transport, principal }),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const principal = options.authenticate
      ? await options.authenticate(req.headers.authorization)
      : options.anyone;
    if (!principal) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'token is missing, invalid or revoked' }));
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    const known = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    // Another principal's session is unknown to this one.
    if (known && known.principal.name === principal.name)
      return known.transport.handleRequest(req, res);
    if (req.method !== 'POST' || sessionId !== undefined) {
      res.writeHead(sessionId ? 404 : 405).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (!isInitializeRequest(body)) {
      res.writeHead(400).end();
      return;
    }
    await (await newSession(principal)).handleRequest(req, res, body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const { transport } of sessions.values()) await transport.close().catch(() => {});
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
