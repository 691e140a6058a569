import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  Router,
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import type postgres from 'postgres';
import { backgroundLoop } from '../../platform/background-loop.js';
import type { Doorbell } from '../../contract/doorbell.js';
import type { Dispatcher } from '../../wakes/create-dispatcher.js';
import { authenticate, actorOf, tokenOf } from '../../kit/http/authenticate.js';
import { createEventStreams, type EventStream } from '../../kit/http/create-event-streams.js';
import { tooManyStreams } from '../../kit/http/principal-slots.js';
import { parseJsonBody } from '../../kit/http/read-json-body.js';
import type { Limits } from '../../kit/http/create-limits.js';
import { limitBatchRate, limitPrincipalRate } from '../../kit/http/principal-rate-limit.js';
import { atCap } from '../../kit/http/principal-slots.js';
import type { RevocationWatch } from '../../kit/http/revocation-watch.js';
import type { TokenCache } from '../../kit/http/token-cache.js';
import type { Actor } from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import type { TodoService } from '../../todos/create-todo-service.js';
import { JsonResponseTransport } from './json-response-transport.js';
import { registerTodoTools } from './todo-tools.js';

export const MCP_PATH = '/mcp';
/** The largest request body /mcp reads. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;
/**
 * A session with no request and no open stream for this long is closed. Clients that go away
 * without ending their session (the SDK's close() sends no DELETE) would otherwise hold memory.
 */
const IDLE_MS = 5 * 60_000;

/** One MCP client session: who it is, its leases, and its notification stream while open. */
interface McpSession {
  id: string;
  actor: Actor;
  /** The OAuth grant whose token opened it: revoking the grant ends the session. */
  grantId?: number;
  /** Lease tokens of this session's claims, so that an agent need not carry them around. */
  leases: Map<number, string>;
  lastActiveAt: number;
  /** The standalone GET stream: notifications reach the client while it is open. */
  stream?: EventStream;
  /** Ends the stream and detaches the session from the dispatcher. */
  closeStream?: () => void;
  /** Gives back the principal's session slot. */
  release: () => void;
}

export interface McpEndpoint {
  routes: Router;
  /** How many sessions are open in this process. */
  openSessions(): number;
  /** The OAuth grants that opened the sessions open now. */
  openGrants(): number[];
  /** Ends at once every session a grant opened (it was revoked), and their streams. */
  endGrant(grantId: number): void;
  /** Ends every session and its notification stream. */
  close(): void;
}

export interface McpEndpointOptions {
  sql: postgres.Sql;
  tokens: TokenCache;
  log: Logger;
  todos: TodoService;
  version: string;
  /** While a session's notification stream is open, the session is a consumer of wakes. */
  dispatcher: Dispatcher;
  /** Ends a notification stream, and its session, when the token that opened it is revoked. */
  revocations: RevocationWatch;
  /** Sessions and streams per principal, failed tokens, the rate per principal. */
  limits: Limits;
  /** Resolves the bearer token to `res.locals.actor` (default: the API's check; OAuth's with it on). */
  authenticate?: RequestHandler;
}

/**
 * MCP over Streamable HTTP at /mcp. Every request carries a bearer token; a session belongs to
 * the principal that opened it, and another principal's request for it is answered like an
 * unknown session. Sessions idle for 5 minutes with no open stream are closed.
 *
 * The sessions are this endpoint's own: a few fields each, so that an idle session costs little
 * more than its socket. Each POST is answered by a fresh SDK server bound to its session (about
 * 45 µs to build, with one JSON Schema validator shared by all; the SDK keeps an Ajv instance per
 * server otherwise), which speaks the protocol, and a transport that answers in plain JSON
 * straight from node:http (src/surfaces/mcp/json-response-transport.ts). The
 * notification stream (the standalone GET) is a plain server-sent-events response written here.
 */
export function createMcpEndpoint({
  sql,
  tokens,
  log,
  todos,
  version,
  dispatcher,
  revocations,
  limits,
  authenticate: authenticateBearer = authenticate(tokens, limits.authFailures),
}: McpEndpointOptions): McpEndpoint {
  const sessions = new Map<string, McpSession>();
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const streams = createEventStreams();
  const routes = Router({ caseSensitive: true });

  const closeSession = (session: McpSession) => {
    if (!sessions.delete(session.id)) return;
    session.release();
    session.closeStream?.();
  };

  /** Answers one POST in `session` with a fresh SDK server bound to it. */
  const serve = async (session: McpSession, req: Request, res: Response) => {
    const server = new McpServer(
      { name: 'switchboard', version },
      {
        capabilities: { logging: {}, tools: {} },
        instructions: INSTRUCTIONS,
        jsonSchemaValidator,
      },
    );
    registerTodoTools(server, { sql, todos, actor: session.actor, log, leases: session.leases });
    // Stateless to the SDK (no session id of its own): the session is checked here.
    const transport = new JsonResponseTransport();
    await server.connect(transport);
    // Answered in JSON, the request is over when this returns: the server and its transport hold
    // nothing else and go with it. (Closing them would only build the SDK's "connection closed"
    // error for requests that are not pending: a stack trace per request.)
    await transport.handle(req, res, req.body);
  };

  /** An MCP log notification (`notifications/message`, level info) on the session's stream. */
  const notify = (session: McpSession, doorbell: Doorbell): boolean => {
    const message = {
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'info', logger: 'switchboard', data: doorbell },
    };
    return session.stream?.send('message', JSON.stringify(message)) ?? false;
  };

  /** The GET stream is where notifications go: attached as a consumer for as long as it is open. */
  const openStream = async (session: McpSession, req: Request, res: Response) => {
    if (isChannelProxy(session)) {
      // switchboard's own connection (the channel proxying its tools) is never a consumer: the
      // channel is rung on its event stream, and a second, internal consumer of the same agent
      // would take its turn in the round-robin and drop the wake. 405 is how Streamable HTTP
      // says "no notification stream here"; the SDK client then simply does without one.
      return jsonRpcError(res, 405, 'Method not allowed: this session has no notification stream', {
        allow: 'POST, DELETE',
      });
    }
    if (!req.get('accept')?.includes('text/event-stream'))
      return jsonRpcError(res, 406, 'Not Acceptable: the client must accept text/event-stream');
    if (session.stream)
      return jsonRpcError(res, 409, 'Conflict: only one notification stream per session');
    const { name } = session.actor;
    const releaseStream = limits.streams.take(name);
    if (!releaseStream) {
      return jsonRpcError(
        res,
        429,
        `Too many streams: ${tooManyStreams(limits.streams, name).message}`,
      );
    }
    let detach: (() => Promise<void>) | undefined;
    let unwatch = () => {};
    const ended = () => {
      if (session.stream !== stream) return;
      unwatch();
      releaseStream();
      session.stream = undefined;
      session.closeStream = undefined;
      session.lastActiveAt = Date.now();
      void detach?.();
    };
    const stream = streams.open(res, { onClose: ended });
    session.stream = stream;
    // Every request of the session is authenticated on its own; the stream, once open, is not:
    // it ends (and the session with it) the moment its token or its principal is revoked.
    unwatch = revocations.watch(
      { kind: 'token', token: tokenOf(res), principalId: session.actor.principal!.id },
      () => closeSession(session),
    );
    session.closeStream = () => {
      ended();
      stream.end();
    };
    const attached = await dispatcher.attach({
      principal: session.actor.principal!,
      path: 'mcp_log',
      push: (doorbell) => notify(session, doorbell),
    });
    if (session.stream === stream) detach = () => attached.detach();
    else await attached.detach();
  };

  const sweep = backgroundLoop({
    everyMs: 60_000,
    delayFirst: true,
    pass: () => {
      const now = Date.now();
      for (const session of sessions.values()) {
        if (!session.stream && now - session.lastActiveAt > IDLE_MS) closeSession(session);
      }
    },
    onError: (error) => log.warn({ err: error }, 'closing idle MCP sessions failed'),
  });
  sweep.start();

  /** The session the request names, if it is the caller's; another principal's is unknown. */
  const sessionFor = (req: Request, res: Response): McpSession | undefined => {
    const id = req.get('mcp-session-id');
    const session = id ? sessions.get(id) : undefined;
    return session && session.actor.name === actorOf(res).name ? session : undefined;
  };

  const handle = async (req: Request, res: Response) => {
    const named = req.get('mcp-session-id');
    if (named) {
      const session = sessionFor(req, res);
      if (!session)
        return jsonRpcError(
          res,
          404,
          'Session not found: start a new one with initialize',
          {},
          -32001,
        );
      session.lastActiveAt = Date.now();
      if (req.method === 'GET') return openStream(session, req, res);
      if (req.method === 'DELETE') {
        closeSession(session);
        res.status(200).end();
        return;
      }
      return serve(session, req, res);
    }
    if (req.method !== 'POST' || !isInitializeRequest(req.body))
      return jsonRpcError(res, 400, 'Bad Request: no session: start one with initialize (POST)');
    // A new session. Tool calls a channel proxies for Claude Code are recorded as from the channel.
    const authenticated = actorOf(res);
    const release = limits.mcpSessions.take(authenticated.name);
    if (!release) {
      return jsonRpcError(
        res,
        429,
        `Too many sessions: ${authenticated.name} has ${atCap(limits.mcpSessions, 'live MCP sessions', 'SWITCHBOARD_MAX_MCP_SESSIONS')}). ` +
          `End one you no longer use (DELETE /mcp with its Mcp-Session-Id; the SDK's terminateSession()), or wait: a session idle for ${IDLE_MS / 60_000} minutes ends by itself.`,
      );
    }
    const session: McpSession = {
      id: randomUUID(),
      actor: { ...authenticated, via: authenticated.via === 'channel' ? 'channel' : 'mcp' },
      grantId: res.locals.grantId as number | undefined,
      leases: new Map(),
      lastActiveAt: Date.now(),
      release,
    };
    res.setHeader('mcp-session-id', session.id);
    sessions.set(session.id, session);
    await serve(session, req, res);
    if (res.statusCode !== 200) closeSession(session);
  };

  // Authenticated first: no body is read for a caller without a valid token. Each message of a
  // JSON-RPC batch counts against the rate, not only the request that carried them.
  const overRate = (res: Response, message: string) => jsonRpcError(res, 429, message);
  routes.use(
    MCP_PATH,
    authenticateBearer,
    limitPrincipalRate(limits.rate, overRate),
    parseJsonBody(MAX_BODY_BYTES),
    limitBatchRate(limits.rate, overRate),
  );
  routes.post(MCP_PATH, handle);
  routes.get(MCP_PATH, handle);
  routes.delete(MCP_PATH, handle);
  routes.use(MCP_PATH, bodyErrorsAsJsonRpc);

  return {
    routes,
    openSessions: () => sessions.size,
    openGrants: () => [...new Set([...sessions.values()].flatMap((s) => s.grantId ?? []))],
    endGrant(grantId) {
      for (const session of [...sessions.values()])
        if (session.grantId === grantId) closeSession(session);
    },
    close() {
      void sweep.stop();
      for (const session of [...sessions.values()]) closeSession(session);
    },
  };
}

function jsonRpcError(
  res: Response,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code = -32000,
): void {
  res.status(status).set(headers).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/** The body's refusals, by their error type (src/kit/http/read-json-body.ts): status, JSON-RPC code and message. */
const BODY_ERRORS: Record<string, [number, number, string]> = {
  'entity.parse.failed': [400, -32700, 'Parse error: the body is not valid JSON'],
  'entity.verify.failed': [400, -32700, 'Parse error: the body is not UTF-8'],
  'entity.too.large': [413, -32600, 'Invalid Request: the body is over 2 MB'],
  'encoding.unsupported': [415, -32700, 'Parse error: the body must be UTF-8 JSON'],
  'charset.unsupported': [415, -32700, 'Parse error: the body must be UTF-8 JSON'],
  'request.aborted': [400, -32700, 'Parse error: the body was cut short'],
  'request.size.invalid': [400, -32700, 'Parse error: the body was cut short'],
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

const INSTRUCTIONS = [
  'switchboard holds durable todos for you: work from GitHub events and requests from people.',
  'Use claim_next with one of your queues (or claim_todo with an id) to take a todo; you hold it for',
  'the lease (default 300 s): heartbeat_todo to keep it, then complete_todo, fail_todo or release_todo.',
  'Lease tokens are remembered by this session. Notifications (level info, logger "switchboard") tell you',
  'when a todo is waiting: they carry todo_id and queue; claim to get the work. To ask your human a',
  'yes/no question, use request_approval and read the verdict with get_todo. A [secret:ID] in a todo is a',
  'credential withheld from its text: get_secret gives its value, only when the work needs it.',
].join(' ');
