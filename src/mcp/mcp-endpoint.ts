import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express, { Router, type Request, type Response } from 'express';
import type postgres from 'postgres';
import { authenticate, actorOf } from '../http/authenticate.js';
import type { TodoHooks } from '../http/todo-routes.js';
import type { Actor } from '../ledger/index.js';
import type { Logger } from '../logger.js';
import { registerTodoTools } from './todo-tools.js';

export const MCP_PATH = '/mcp';
const IDLE_MS = 30 * 60_000;

/** One MCP client session: who it is, and whether its notification stream is open. */
export interface McpSession {
  id: string;
  actor: Actor;
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  /** The standalone GET stream is open: notifications can reach the client now. */
  streamOpen: boolean;
  lastActiveAt: number;
}

export interface McpEndpoint {
  routes: Router;
  sessions: ReadonlyMap<string, McpSession>;
  /** Sends an MCP log notification (`notifications/message`, level info); false when the session cannot take it now. */
  notify(sessionId: string, data: Record<string, unknown>): Promise<boolean>;
  close(): Promise<void>;
}

export interface McpEndpointOptions {
  sql: postgres.Sql;
  log: Logger;
  hooks: TodoHooks;
  version: string;
  /** Called when a session's notification stream opens or closes, and when a session ends. */
  onSessionChange?: (
    session: McpSession,
    change: 'stream_opened' | 'stream_closed' | 'closed',
  ) => void;
}

/**
 * MCP over Streamable HTTP at /mcp. Every request carries a bearer token; a session belongs to
 * the principal that opened it, and another principal's request for it is answered like an
 * unknown session. Sessions idle for 30 minutes with no open stream are closed.
 */
export function createMcpEndpoint({
  sql,
  log,
  hooks,
  version,
  onSessionChange,
}: McpEndpointOptions): McpEndpoint {
  const sessions = new Map<string, McpSession>();
  const routes = Router();

  const closeSession = async (session: McpSession) => {
    if (!sessions.delete(session.id)) return;
    onSessionChange?.(session, 'closed');
    await session.server.close().catch(() => {});
  };

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const session of sessions.values()) {
      if (!session.streamOpen && now - session.lastActiveAt > IDLE_MS) void closeSession(session);
    }
  }, 60_000);
  sweep.unref();

  const sessionFor = (req: Request, res: Response): McpSession | undefined => {
    const id = req.get('mcp-session-id');
    const session = id ? sessions.get(id) : undefined;
    return session && session.actor.name === actorOf(res).name ? session : undefined;
  };

  const handle = async (req: Request, res: Response) => {
    const existing = sessionFor(req, res);
    if (existing) {
      existing.lastActiveAt = Date.now();
      if (req.method === 'GET') {
        existing.streamOpen = true;
        onSessionChange?.(existing, 'stream_opened');
        res.once('close', () => {
          existing.streamOpen = false;
          existing.lastActiveAt = Date.now();
          onSessionChange?.(existing, 'stream_closed');
        });
      }
      await existing.transport.handleRequest(req, res, req.body);
      return;
    }
    if (req.get('mcp-session-id')) {
      res
        .status(404)
        .json({
          jsonrpc: '2.0',
          error: { code: -32001, message: 'Session not found: start a new one with initialize' },
          id: null,
        });
      return;
    }
    if (req.method !== 'POST') {
      res
        .status(400)
        .json({
          jsonrpc: '2.0',
          error: { code: -32000, message: 'Bad request: initialize first (POST)' },
          id: null,
        });
      return;
    }
    // A new session: the SDK accepts it only for an initialize request.
    const actor = { ...actorOf(res), via: 'mcp' };
    const server = new McpServer(
      { name: 'switchboard', version },
      { capabilities: { logging: {}, tools: {} }, instructions: INSTRUCTIONS },
    );
    registerTodoTools(server, { sql, actor, hooks, leases: new Map() });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, {
          id,
          actor,
          server,
          transport,
          streamOpen: false,
          lastActiveAt: Date.now(),
        });
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      const session = id ? sessions.get(id) : undefined;
      if (session) void closeSession(session);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
    if (!transport.sessionId) await server.close(); // not an initialize request: nothing to keep
  };

  routes.use(MCP_PATH, express.json({ limit: '2mb' }), authenticate(sql));
  routes.post(MCP_PATH, handle);
  routes.get(MCP_PATH, handle);
  routes.delete(MCP_PATH, handle);

  return {
    routes,
    sessions,
    async notify(sessionId, data) {
      const session = sessions.get(sessionId);
      if (!session?.streamOpen) return false;
      try {
        await session.server.sendLoggingMessage({ level: 'info', logger: 'switchboard', data });
        return true;
      } catch (error) {
        log.debug({ err: error, session: sessionId }, 'MCP notification failed');
        return false;
      }
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map(closeSession));
    },
  };
}

const INSTRUCTIONS = [
  'switchboard holds durable todos for you: work from GitHub events and requests from people.',
  'Use claim_next with one of your queues (or claim_todo with an id) to take a todo; you hold it for',
  'the lease (default 300 s): heartbeat_todo to keep it, then complete_todo, fail_todo or release_todo.',
  'Lease tokens are remembered by this session. Notifications (level info, logger "switchboard") tell you',
  'when a todo is waiting: they carry todo_id and queue; claim to get the work. To ask your human a',
  'yes/no question, use request_approval and read the verdict with get_todo.',
].join(' ');
