import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import { ApiError } from '../client/client-errors.js';
import { followEventStream } from '../client/follow-event-stream.js';
import type { Doorbell } from '../contract/doorbell.js';
import { excerpt, neutraliseLine } from '../contract/neutralise-text.js';
import {
  databaseUnavailableHint,
  TODO_TOOLS,
  type TodoToolDefinition,
} from '../contract/todo-tools.js';
import { dropOverlongLines } from './drop-overlong-lines.js';
import {
  CHANNEL_CAPABILITIES,
  CHANNEL_INSTRUCTIONS,
  channelNotification,
  PermissionRequest,
  permissionVerdict,
  type ChannelEvent,
} from './channel-protocol.js';

export interface ChannelOptions {
  url: string;
  token: string;
  version: string;
  /** How long a relayed permission prompt waits for a human before it is canceled. */
  approvalTtlSeconds: number;
  /** Where diagnostics go: never stdout, which carries JSON-RPC only. */
  log: (message: string) => void;
  stdin?: Readable;
  stdout?: Writable;
}

const INPUT_PREVIEW_MAX = 4000;
const TOOL_NAME_MAX = 200;
const DESCRIPTION_MAX = 2000;
/**
 * The longest stdin line read. The MCP SDK's stdio transport closes (and so ends the channel)
 * when its read buffer passes 10 MB; longer lines are dropped before they reach it.
 */
const LINE_MAX_BYTES = 8 * 1024 * 1024;
const RECONNECT_MAX_MS = 30_000;
/** How long a permission prompt waits for the channel to attach before it is relayed anyway. */
const ATTACH_WAIT_MS = 10_000;

/**
 * `switchboard channel`: the stdio MCP server Claude Code starts. It offers the switchboard
 * tools — the contract's definitions, so that they are listed even while the server is down —
 * and forwards each call to the server's /mcp endpoint with the agent's token; it attaches to
 * the server as a `channel` consumer and turns each doorbell into a
 * `notifications/claude/channel` event; and it relays Claude Code's permission prompts into
 * approval todos whose verdicts it sends back.
 * Resolves when stdin closes (Claude Code went away).
 */
export async function runChannel(options: ChannelOptions): Promise<void> {
  const { url, token, log } = options;
  const base = url.replace(/\/+$/, '');
  const stopped = new AbortController();
  const mcp = new McpServer(
    { name: 'switchboard', version: options.version },
    { capabilities: CHANNEL_CAPABILITIES, instructions: CHANNEL_INSTRUCTIONS },
  );
  // The protocol level: the channel's own notifications, both ways.
  const server = mcp.server;

  // Nothing may reach Claude Code before it says `initialized`: events sent earlier are dropped.
  let initialized = false;
  const pending: ReturnType<typeof channelNotification>[] = [];
  const send = (message: { method: string; params: object }) => {
    if (!initialized) {
      pending.push(message as ReturnType<typeof channelNotification>);
      return;
    }
    server
      .notification(message as never)
      .catch((error: unknown) => log(`could not notify Claude Code: ${String(error)}`));
  };
  const event = (channelEvent: ChannelEvent) => send(channelNotification(channelEvent));

  // Approvals this session asked for: permission prompts (approval id → Claude's request id)
  // and its own request_approval questions. Verdicts on anything else belong to other sessions.
  const permissionPrompts = new Map<number, string>();
  const questions = new Set<number>();

  // The consumer session this channel is attached as, once its event stream said `ready`: the
  // approvals it asks for end with it. Claude Code may relay a prompt before that (at start-up,
  // during a reconnect); such a prompt waits for the session, or it would outlive it.
  let channelSession: string | undefined;
  let onAttached = () => {};
  let attached = new Promise<void>((resolve) => (onAttached = resolve));
  const attachedSession = async () => {
    if (channelSession === undefined) {
      await Promise.race([
        attached,
        sleep(ATTACH_WAIT_MS, undefined, { signal: stopped.signal }).catch(() => {}),
      ]);
    }
    return channelSession;
  };
  const detached = () => {
    if (channelSession === undefined) return;
    channelSession = undefined;
    attached = new Promise<void>((resolve) => (onAttached = resolve));
  };

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'x-switchboard-client': 'channel',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const json = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (!response.ok)
      throw new ApiError(
        response.status,
        typeof json.code === 'string' ? json.code : `http_${response.status}`,
        typeof json.error === 'string' ? json.error : `HTTP ${response.status}`,
      );
    return json;
  };

  // --- tools: listed from the contract, each call forwarded to the server's /mcp ----------------
  let remote: Promise<Client> | undefined;
  const connectRemote = () =>
    (remote ??= (async () => {
      const client = new Client({ name: 'switchboard-channel', version: options.version });
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
        requestInit: {
          headers: { authorization: `Bearer ${token}`, 'x-switchboard-client': 'channel' },
        },
      });
      client.onclose = () => (remote = undefined);
      await client.connect(transport);
      return client;
    })().catch((error: unknown) => {
      remote = undefined;
      throw error;
    }));
  const unreachable = (): CallToolResult => ({
    isError: true,
    content: [
      {
        type: 'text',
        text: `switchboard at ${base} cannot be reached right now; nothing changed. Try again in a minute.`,
      },
    ],
  });

  const toolError = (text: string): CallToolResult => ({
    isError: true,
    content: [{ type: 'text', text }],
  });

  /**
   * The server was reached and said no (a 4xx): not a reason to try again in a minute. Or it
   * said that its database is not answering (503 database_unavailable): then it is.
   */
  const refused = (tool: string, error: unknown): CallToolResult | undefined => {
    if (!(error instanceof StreamableHTTPError)) return undefined;
    const status = error.code;
    // The SDK keeps the body of the refusal in the message: the API's {error, code}.
    if (status === 503 && error.message.includes('"code":"database_unavailable"'))
      return toolError(databaseUnavailableHint(tool));
    if (status === undefined || status < 400 || status >= 500) return undefined;
    const text =
      status === 401 || status === 403
        ? `switchboard at ${base} refused this channel's token (HTTP ${status}); nothing changed. Ask your human to check SWITCHBOARD_TOKEN.`
        : `switchboard refused the call (HTTP ${status}${reasonOf(error.message)}); nothing changed. Fix the arguments and call again.`;
    return { isError: true, content: [{ type: 'text', text }] };
  };

  // The todos this session holds, newest claim last: a permission prompt is about the work at hand.
  const held = new Set<number>();
  const noteHeld = (name: string, args: Record<string, unknown>, result: CallToolResult) => {
    if (result.isError) return;
    const claimed = (result.structuredContent as { todo?: { id?: unknown } | null } | undefined)
      ?.todo?.id;
    if ((name === 'claim_todo' || name === 'claim_next') && typeof claimed === 'number') {
      held.delete(claimed);
      held.add(claimed);
    }
    if (['complete_todo', 'fail_todo', 'release_todo'].includes(name))
      held.delete(args.todo_id as number);
  };

  /** Forwards a call, its arguments already checked here against the same schema as /mcp's. */
  const forward = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    try {
      const result = (await (
        await connectRemote()
      ).callTool({ name, arguments: args })) as CallToolResult;
      noteHeld(name, args, result);
      return result;
    } catch (error) {
      log(`tool ${name} failed: ${JSON.stringify(String(error).slice(0, 300))}`);
      return refused(name, error) ?? unreachable();
    }
  };

  /** request_approval is answered here, so that its verdict comes back to this session only. */
  const askQuestion = async ({
    question,
    body,
    todo_id,
    ttl_seconds,
  }: QuestionArgs): Promise<CallToolResult> => {
    let json: Record<string, unknown>;
    try {
      json = await api('POST', '/approvals', {
        question,
        body,
        about_todo_id: todo_id,
        ttl_seconds,
        channel_session: await attachedSession(),
      });
    } catch (error) {
      log(`tool request_approval failed: ${JSON.stringify(String(error).slice(0, 300))}`);
      if (!(error instanceof ApiError)) return unreachable();
      if (error.code === 'database_unavailable')
        return toolError(databaseUnavailableHint('request_approval'));
      if (error.status === 401 || error.status === 403)
        return toolError(
          `switchboard at ${base} refused this channel's token (HTTP ${error.status}); nothing changed. Ask your human to check SWITCHBOARD_TOKEN.`,
        );
      if (error.status >= 500)
        return toolError(
          'request_approval failed inside switchboard (the server log has the details). Try again later; if it keeps failing, tell your human.',
        );
      return toolError(`${neutraliseLine(error.message, 300)}. Fix the arguments and call again.`);
    }
    const todo = json.todo as { id: number; assignee: string };
    questions.add(todo.id);
    return {
      content: [
        {
          type: 'text',
          text: `asked ${todo.assignee} (approval #${todo.id}); the verdict arrives as a channel event\n${JSON.stringify(json)}`,
        },
      ],
      structuredContent: json,
    };
  };

  // The SDK validates each call's arguments against the tool's schema, and refuses a bad one
  // (or an unknown tool) with a tool error naming the argument, as /mcp does.
  const definitions: Record<string, TodoToolDefinition> = TODO_TOOLS;
  for (const [name, definition] of Object.entries(definitions)) {
    mcp.registerTool(name, definition, (args: Record<string, unknown>) =>
      name === 'request_approval' ? askQuestion(args as QuestionArgs) : forward(name, args),
    );
  }

  // --- permission relay: Claude Code's prompt becomes an approval todo for the human ------------
  server.setNotificationHandler(PermissionRequest, async ({ params }) => {
    try {
      const json = await api('POST', '/approvals', {
        // Cut before sending: the human sees a one-line title of 200 characters anyway, and an
        // over-long question would be refused, leaving the prompt unrelayed.
        question: `Claude Code wants to use ${excerpt(params.tool_name, TOOL_NAME_MAX)}: ${excerpt(params.description, DESCRIPTION_MAX)}`,
        body: excerpt(params.input_preview, INPUT_PREVIEW_MAX),
        request_id: params.request_id,
        about_todo_id: [...held].at(-1),
        ttl_seconds: options.approvalTtlSeconds,
        channel_session: await attachedSession(),
      });
      permissionPrompts.set((json.todo as { id: number }).id, params.request_id);
    } catch (error) {
      // The terminal dialog is still open: the human can answer there.
      log(`could not relay permission request ${params.request_id}: ${String(error)}`);
    }
  });

  // --- doorbells: the server's event stream, turned into channel events --------------------------
  const onDoorbell = (doorbell: Doorbell) => {
    switch (doorbell.type) {
      case 'wake':
        return event({
          content: doorbell.content,
          meta: {
            event: 'claimable',
            todo_id: doorbell.todo_id,
            queue: doorbell.queue,
            kind: doorbell.kind,
            url: doorbell.url,
          },
        });
      case 'digest':
        return event({
          content: doorbell.content,
          meta: {
            event: 'digest',
            todo_ids: doorbell.todos.map((t) => t.todo_id).join(','),
            count: doorbell.todos.length + doorbell.more,
          },
        });
      case 'approval':
        return event({
          content: doorbell.content,
          meta: {
            event: 'approval',
            todo_id: doorbell.todo_id,
            queue: doorbell.queue,
            kind: 'approval',
            requested_by: doorbell.requested_by,
          },
        });
      case 'verdict': {
        const requestId = permissionPrompts.get(doorbell.todo_id);
        if (requestId) {
          permissionPrompts.delete(doorbell.todo_id);
          return send(permissionVerdict(requestId, doorbell.verdict));
        }
        if (!questions.delete(doorbell.todo_id)) return; // another session's question
        return event({
          content: doorbell.content,
          meta: {
            event: 'verdict',
            todo_id: doorbell.todo_id,
            verdict: doorbell.verdict,
            decided_by: doorbell.decided_by,
            about_todo_id: doorbell.about_todo_id,
          },
        });
      }
    }
  };

  // What Claude Code was last told is wrong with the stream; undefined while nothing is.
  let told: 'refused' | 'unreachable' | undefined;
  const consumeEvents = () =>
    followEventStream({
      credentials: { url, token },
      query: { consumer: 'channel' },
      client: 'channel',
      signal: stopped.signal,
      maxDelayMs: RECONNECT_MAX_MS,
      onEvent(name, data) {
        if (name === 'ready') {
          channelSession = (JSON.parse(data) as { session_id?: string }).session_id;
          onAttached();
          if (told) {
            told = undefined;
            event({ content: 'switchboard: connected again', meta: { event: 'status' } });
          }
        } else if (name === 'wake' || name === 'digest') {
          // One unreadable doorbell is logged and skipped; it must not end the stream.
          try {
            onDoorbell(JSON.parse(data) as Doorbell);
          } catch (error) {
            log(`ignored an unreadable ${name} event: ${String((error as Error).message)}`);
          }
        }
      },
      onLost(error) {
        const tokenRefused =
          error instanceof ApiError && (error.status === 401 || error.status === 403)
            ? error.status
            : undefined;
        log(
          `event stream: ${
            tokenRefused
              ? `${base} refused this channel's token (HTTP ${tokenRefused}); trying again — check SWITCHBOARD_TOKEN`
              : error.message
          }`,
        );
        detached();
        // Lost or never there: say so once per outage (and again if the reason changes: a server
        // back after a restart may now refuse the token), and keep trying without exiting.
        if (told !== (tokenRefused ? 'refused' : 'unreachable')) {
          told = tokenRefused ? 'refused' : 'unreachable';
          event({
            content: tokenRefused
              ? `switchboard: ${base} refused this channel's token (HTTP ${tokenRefused}); retrying. Ask your human to check SWITCHBOARD_TOKEN.`
              : `switchboard: cannot reach ${base}; retrying. Waiting todos stay queued and arrive as a digest when it is back.`,
            meta: { event: 'status' },
          });
        }
        return true;
      },
    });

  // Whatever stdin carries that is not JSON-RPC, or fails a handler's schema, is dropped: say so
  // on stderr (briefly: the input may be huge or hostile), never on stdout.
  server.onerror = (error) =>
    log(`ignored: ${JSON.stringify(String(error.message).slice(0, 300))}`);

  server.oninitialized = () => {
    // A repeated `initialized` is not a second session: one event stream per process.
    if (initialized) return;
    initialized = true;
    for (const message of pending.splice(0)) send(message);
    void consumeEvents();
  };

  const stdin = options.stdin ?? process.stdin;
  const transport = new StdioServerTransport(
    stdin.pipe(
      dropOverlongLines(LINE_MAX_BYTES, (bytes) =>
        log(`ignored a line of ${bytes} bytes or more (at most ${LINE_MAX_BYTES})`),
      ),
    ),
    options.stdout,
  );
  const closedInput = new Promise<void>((resolve) => {
    stdin.once('end', resolve);
    stdin.once('close', resolve);
    // Piped, stdin's errors no longer reach the transport: an unreadable stdin is a closed one.
    stdin.on('error', (error) => {
      log(`stdin: ${String(error.message)}`);
      resolve();
    });
    transport.onclose = () => resolve();
  });
  await mcp.connect(transport);
  await closedInput;
  // Claude Code is gone: stop listening, and let the remote session end on its own time (the
  // server expires it) rather than keep Claude Code waiting for this process to exit.
  stopped.abort();
  void mcp.close().catch(() => {});
  void remote?.then((client) => client.close()).catch(() => {});
}

type QuestionArgs = z.infer<(typeof TODO_TOOLS)['request_approval']['inputSchema']>;

/** `: why`, from the JSON-RPC error a refusing server sent, if there is one to read. */
function reasonOf(message: string): string {
  const quoted = /"message":("(?:[^"\\]|\\.)*")/.exec(message)?.[1];
  if (quoted === undefined) return '';
  try {
    return `: ${neutraliseLine(JSON.parse(quoted) as string, 200)}`;
  } catch {
    return '';
  }
}
