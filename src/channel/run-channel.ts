import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Readable, Writable } from 'node:stream';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { Doorbell } from '../contract/doorbell.js';
import { excerpt, neutraliseLine } from '../contract/neutralise-text.js';
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
 * request_approval's arguments, answered here rather than on /mcp: the same rules and hints as
 * there (src/mcp/todo-tools.ts), so that a mistyped argument is refused, never silently dropped.
 */
const QuestionArgs = z.object({
  question: z
    .string({ error: 'question must be the yes/no question for your human' })
    .max(10_000, { error: 'question is too long (at most 10000 characters)' })
    .refine((question) => question.trim() !== '', {
      error: 'question must be the yes/no question for your human',
    }),
  body: z
    .string({ error: 'body must be text' })
    .max(65_536, { error: 'body is too long (at most 65536 characters)' })
    .optional(),
  todo_id: z
    .number({ error: 'todo_id must be the number of a todo, e.g. 42 (list_todos shows them)' })
    .int({ error: 'todo_id must be a whole number' })
    .positive({ error: 'todo_id must be positive' })
    .optional(),
  ttl_seconds: z
    .number({ error: 'ttl_seconds must be a number of seconds' })
    .int({ error: 'ttl_seconds must be a whole number of seconds' })
    .min(1, { error: 'ttl_seconds must be at least 1' })
    .max(604_800, { error: 'ttl_seconds must be at most 604800 (7 days)' })
    .optional(),
});

/**
 * `switchboard channel`: the stdio MCP server Claude Code starts. It proxies the switchboard
 * tools to the server's /mcp endpoint with the agent's token, attaches to the server as a
 * `channel` consumer and turns each doorbell into a `notifications/claude/channel` event, and
 * relays Claude Code's permission prompts into approval todos whose verdicts it sends back.
 * Resolves when stdin closes (Claude Code went away).
 */
export async function runChannel(options: ChannelOptions): Promise<void> {
  const { url, token, log } = options;
  const base = url.replace(/\/+$/, '');
  const stopped = new AbortController();
  const server = new Server(
    { name: 'switchboard', version: options.version },
    { capabilities: CHANNEL_CAPABILITIES, instructions: CHANNEL_INSTRUCTIONS },
  );

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
      throw new Error(typeof json.error === 'string' ? json.error : `HTTP ${response.status}`);
    return json;
  };

  // --- tools: proxied to the server's /mcp, where their definitions live -----------------------
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

  /** The server was reached and said no (a 4xx): not a reason to try again in a minute. */
  const refused = (error: unknown): CallToolResult | undefined => {
    if (!(error instanceof StreamableHTTPError)) return undefined;
    const status = error.code;
    if (status === undefined || status < 400 || status >= 500) return undefined;
    const text =
      status === 401 || status === 403
        ? `switchboard at ${base} refused this channel's token (HTTP ${status}); nothing changed. Ask your human to check SWITCHBOARD_TOKEN.`
        : `switchboard refused the call (HTTP ${status}${reasonOf(error.message)}); nothing changed. Fix the arguments and call again.`;
    return { isError: true, content: [{ type: 'text', text }] };
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    try {
      const { tools } = await (await connectRemote()).listTools();
      return { tools };
    } catch {
      return { tools: [] as Tool[] };
    }
  });

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

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const { name, arguments: args = {} } = request.params;
    try {
      if (name === 'request_approval') return await askQuestion(args);
      const result = (await (
        await connectRemote()
      ).callTool({ name, arguments: args })) as CallToolResult;
      noteHeld(name, args, result);
      return result;
    } catch (error) {
      log(
        `tool ${JSON.stringify(name.slice(0, 100))} failed: ${JSON.stringify(String(error).slice(0, 300))}`,
      );
      return refused(error) ?? unreachable();
    }
  });

  /** request_approval is answered here, so that its verdict comes back to this session only. */
  const askQuestion = async (args: Record<string, unknown>): Promise<CallToolResult> => {
    const parsed = QuestionArgs.safeParse(args);
    if (!parsed.success) {
      const problems = [...new Set(parsed.error.issues.map((issue) => issue.message))];
      return {
        isError: true,
        content: [
          { type: 'text', text: `${problems.join('; ')}. Fix the arguments and call again.` },
        ],
      };
    }
    const { question, body, todo_id, ttl_seconds } = parsed.data;
    const json = await api('POST', '/approvals', {
      question,
      body,
      about_todo_id: todo_id,
      ttl_seconds,
      channel_session: await attachedSession(),
    }).catch((error: unknown) => ({ error: String((error as Error).message ?? error) }));
    if ('error' in json)
      return {
        isError: true,
        content: [
          { type: 'text', text: `${String(json.error)}. Fix the arguments and call again.` },
        ],
      };
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

  const consumeEvents = async () => {
    let failures = 0;
    let toldUnreachable = false;
    while (!stopped.signal.aborted) {
      let tokenRefused: number | undefined;
      try {
        const response = await fetch(`${base}/api/v1/events?consumer=channel`, {
          headers: {
            authorization: `Bearer ${token}`,
            'x-switchboard-client': 'channel',
            accept: 'text/event-stream',
          },
          signal: stopped.signal,
        });
        if (response.status === 401 || response.status === 403) tokenRefused = response.status;
        if (!response.ok || !response.body)
          throw new Error(`the event stream answered HTTP ${response.status}`);
        for await (const { name, data } of readServerSentEvents(response.body)) {
          if (name === 'ready') {
            channelSession = (JSON.parse(data) as { session_id?: string }).session_id;
            onAttached();
            failures = 0;
            if (toldUnreachable) {
              toldUnreachable = false;
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
        }
      } catch (error) {
        if (stopped.signal.aborted) return;
        log(`event stream: ${String((error as Error).message ?? error)}`);
      }
      detached();
      // Lost or never there: say so once per outage, and keep trying without exiting.
      if (!toldUnreachable) {
        toldUnreachable = true;
        event({
          content: tokenRefused
            ? `switchboard: ${base} refused this channel's token (HTTP ${tokenRefused}); retrying. Ask your human to check SWITCHBOARD_TOKEN.`
            : `switchboard: cannot reach ${base}; retrying. Waiting todos stay queued and arrive as a digest when it is back.`,
          meta: { event: 'status' },
        });
      }
      failures++;
      await sleep(Math.min(RECONNECT_MAX_MS, 500 * 2 ** failures), undefined, {
        signal: stopped.signal,
      }).catch(() => {});
    }
  };

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
  await server.connect(transport);
  await closedInput;
  // Claude Code is gone: stop listening, and let the remote session end on its own time (the
  // server expires it) rather than keep Claude Code waiting for this process to exit.
  stopped.abort();
  void server.close().catch(() => {});
  void remote?.then((client) => client.close()).catch(() => {});
}

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

/**
 * Server-sent events from a fetch body: the name and data of each event (eventsource-parser:
 * lines end at LF/CR only, so JSON carrying U+2028 or U+2029 unescaped stays one line).
 */
async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ name: string; data: string }> {
  const events = body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  for await (const { event, data } of events) if (event) yield { name: event, data };
}
