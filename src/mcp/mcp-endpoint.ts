import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express, { Router, type ErrorRequestHandler, type Request, type Response } from 'express';
import type postgres from 'postgres';
import { authenticate, actorOf } from '../http/authenticate.js';
import type { Dispatcher } from '../delivery/create-dispatcher.js';
import type { Doorbell } from '../contract/doorbell.js';
import type { TodoHooks } from '../http/todo-routes.js';
import type { TokenCache } from '../http/token-cache.js';
import type { Actor } from '../ledger/index.js';
import type { Logger } from '../logger.js';
import { registerTodoTools } from './todo-tools.js';

export const MCP_PATH = '/mcp';
/**
 * A session with no request and no open stream for this long is closed. Clients that go away
 * without ending their session (the SDK's close() sends no DELETE) would otherwise hold memory.
 */
const IDLE_MS = 5 * 60_000;

/** One MCP client session: who it is, and whether its notification stream is open. */
export interface McpSession {
  id: string;
  actor: Actor;
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  /** The standalone GET stream is open: notifications can reach the client now. */
  streamOpen: boolean;
  lastActiveAt: number;
  /** Detaches the session from the dispatcher (set while its stream is open). */
  detach?: () => Promise<void>;
}

export interface McpEndpoint {
  routes: Router;
  sessions: ReadonlyMap<string, McpSession>;
  close(): Promise<void>;
}

export interface McpEndpointOptions {
  sql: postgres.Sql;
  tokens: TokenCache;
  log: Logger;
  hooks: TodoHooks;
  version: string;
  /** While a session's notification stream is open, the session is a consumer of wakes. */
  dispatcher: Dispatcher;
}

/**
 * MCP over Streamable HTTP at /mcp. Every request carries a bearer token; a session belongs to
 * the principal that opened it, and another principal's request for it is answered like an
 * unknown session. Sessions idle for 5 minutes with no open stream are closed.
 */
export function createMcpEndpoint({
  sql,
  tokens,
  log,
  hooks,
  version,
  dispatcher,
}: McpEndpointOptions): McpEndpoint {
  const sessions = new Map<string, McpSession>();
  const routes = Router();

  const closeSession = async (session: McpSession) => {
    if (!sessions.delete(session.id)) return;
    await session.detach?.();
    await session.server.close().catch(() => {});
  };

  /** An MCP log notification (`notifications/message`, level info); false when the stream is gone. */
  const notify = async (session: McpSession, doorbell: Doorbell): Promise<boolean> => {
    if (!session.streamOpen) return false;
    try {
      await session.server.sendLoggingMessage({
        level: 'info',
        logger: 'switchboard',
        data: doorbell,
      });
      return true;
    } catch (error) {
      log.debug({ err: error, session: session.id }, 'MCP notification failed');
      return false;
    }
  };

  /** The GET stream is where notifications go: attached as a consumer for as long as it is open. */
  const openStream = async (session: McpSession, res: Response) => {
    session.streamOpen = true;
    res.once('close', () => {
      session.streamOpen = false;
      session.lastActiveAt = Date.now();
      const detach = session.detach;
      session.detach = undefined;
      void detach?.();
    });
    const attached = await dispatcher.attach({
      principal: session.actor.principal!,
      path: 'mcp_log',
      push: (doorbell) => notify(session, doorbell),
    });
    if (session.streamOpen) session.detach = () => attached.detach();
    else await attached.detach();
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
      if (req.method === 'GET' && isChannelProxy(existing)) {
        // switchboard's own connection (the channel proxying its tools) is never a consumer: the
        // channel is rung on its event stream, and a second, internal consumer of the same agent
        // would take its turn in the round-robin and drop the wake. 405 is how Streamable HTTP
        // says "no notification stream here"; the SDK client then simply does without one.
        res
          .status(405)
          .set('allow', 'POST, DELETE')
          .json({
            jsonrpc: '2.0',
            error: {
              code: -32000,
              message: 'Method not allowed: this session has no notification stream',
            },
            id: null,
          });
        return;
      }
      const head = req.method === 'GET' ? statusOnceWritten(res) : undefined;
      const handled = existing.transport.handleRequest(req, res, req.body);
      // A GET that the SDK answers 200 is the session's notification stream (a second one while
      // the first is open gets 409 and must not attach twice).
      if (
        head &&
        (await Promise.race([head, handled.then(() => res.statusCode)])) === 200 &&
        !existing.streamOpen
      ) {
        await openStream(existing, res);
      }
      await handled;
      return;
    }
    if (req.get('mcp-session-id')) {
      res.status(404).json({
        jsonrpc: '2.0',
        error: { code: -32001, message: 'Session not found: start a new one with initialize' },
        id: null,
      });
      return;
    }
    if (req.method !== 'POST') {
      res.status(400).json({
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Bad request: initialize first (POST)' },
        id: null,
      });
      return;
    }
    // A new session: the SDK accepts it only for an initialize request.
    // Tool calls a channel proxies for Claude Code are recorded as coming from the channel.
    const authenticated = actorOf(res);
    const actor = { ...authenticated, via: authenticated.via === 'channel' ? 'channel' : 'mcp' };
    const server = new McpServer(
      { name: 'switchboard', version },
      { capabilities: { logging: {}, tools: {} }, instructions: INSTRUCTIONS },
    );
    registerTodoTools(server, { sql, actor, hooks, log, leases: new Map() });
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

  routes.use(MCP_PATH, express.json({ limit: '2mb', verify: requireUtf8 }), authenticate(tokens));
  routes.post(MCP_PATH, handle);
  routes.get(MCP_PATH, handle);
  routes.delete(MCP_PATH, handle);
  routes.use(MCP_PATH, bodyErrorsAsJsonRpc);

  return {
    routes,
    sessions,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map(closeSession));
    },
  };
}

/**
 * Bytes that are not UTF-8 would be decoded with U+FFFD in their place, and text stored as sent
 * would then not be what was sent: refuse them. (body-parser answers a throw here with its
 * `entity.verify.failed`.)
 */
function requireUtf8(_req: unknown, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) throw Object.assign(new Error('the body is not UTF-8'), { status: 400 });
}

/** body-parser's refusals, by its error type: status, JSON-RPC code and message. */
const BODY_ERRORS: Record<string, [number, number, string]> = {
  'entity.parse.failed': [400, -32700, 'Parse error: the body is not valid JSON'],
  'entity.verify.failed': [400, -32700, 'Parse error: the body is not UTF-8'],
  'entity.too.large': [413, -32600, 'Invalid Request: the body is over 2 MB'],
  'encoding.unsupported': [415, -32700, 'Parse error: the body must be UTF-8 JSON'],
  'charset.unsupported': [415, -32700, 'Parse error: the body must be UTF-8 JSON'],
  'request.aborted': [400, -32700, 'Parse error: the body was cut short'],
};

/** A body that never became a message is answered in JSON-RPC, as the SDK answers the rest. */
const bodyErrorsAsJsonRpc: ErrorRequestHandler = (error, _req, res, next) => {
  const known = BODY_ERRORS[String((error as { type?: unknown }).type)];
  if (!known || res.headersSent) return next(error);
  const [status, code, message] = known;
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
};

/** A session `switchboard channel` opened to proxy its tools (it says so in X-Switchboard-Client). */
function isChannelProxy(session: McpSession): boolean {
  return session.actor.via === 'channel';
}

/** Resolves with the status code when the response head is written. */
function statusOnceWritten(res: Response): Promise<number> {
  return new Promise((resolve) => {
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
    res.writeHead = ((...args: unknown[]) => {
      resolve(args[0] as number);
      return writeHead(...args);
    }) as typeof res.writeHead;
  });
}

const INSTRUCTIONS = [
  'switchboard holds durable todos for you: work from GitHub events and requests from people.',
  'Use claim_next with one of your queues (or claim_todo with an id) to take a todo; you hold it for',
  'the lease (default 300 s): heartbeat_todo to keep it, then complete_todo, fail_todo or release_todo.',
  'Lease tokens are remembered by this session. Notifications (level info, logger "switchboard") tell you',
  'when a todo is waiting: they carry todo_id and queue; claim to get the work. To ask your human a',
  'yes/no question, use request_approval and read the verdict with get_todo.',
].join(' ');
