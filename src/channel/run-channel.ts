import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Doorbell } from '../delivery/doorbell.js';
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
const RECONNECT_MAX_MS = 30_000;
/** How long a permission prompt waits for the channel to attach before it is relayed anyway. */
const ATTACH_WAIT_MS = 10_000;

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
      log(`tool ${name} failed: ${String(error)}`);
      return unreachable();
    }
  });

  /** request_approval is answered here, so that its verdict comes back to this session only. */
  const askQuestion = async (args: Record<string, unknown>): Promise<CallToolResult> => {
    const question = args.question;
    if (typeof question !== 'string' || question.trim() === '') {
      return {
        isError: true,
        content: [
          {
            type: 'text',
            text: 'question must be the yes/no question for your human. Fix the arguments and call again.',
          },
        ],
      };
    }
    const json = await api('POST', '/approvals', {
      question,
      body: typeof args.body === 'string' ? args.body : undefined,
      about_todo_id: typeof args.todo_id === 'number' ? args.todo_id : undefined,
      ttl_seconds: typeof args.ttl_seconds === 'number' ? args.ttl_seconds : undefined,
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
        question: `Claude Code wants to use ${params.tool_name}: ${params.description}`,
        body: params.input_preview.slice(0, INPUT_PREVIEW_MAX),
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
      try {
        const response = await fetch(`${base}/api/v1/events?consumer=channel`, {
          headers: {
            authorization: `Bearer ${token}`,
            'x-switchboard-client': 'channel',
            accept: 'text/event-stream',
          },
          signal: stopped.signal,
        });
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
            onDoorbell(JSON.parse(data) as Doorbell);
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
          content: `switchboard: cannot reach ${base}; retrying. Waiting todos stay queued and arrive as a digest when it is back.`,
          meta: { event: 'status' },
        });
      }
      failures++;
      await sleep(Math.min(RECONNECT_MAX_MS, 500 * 2 ** failures), undefined, {
        signal: stopped.signal,
      }).catch(() => {});
    }
  };

  server.oninitialized = () => {
    initialized = true;
    for (const message of pending.splice(0)) send(message);
    void consumeEvents();
  };

  const transport = new StdioServerTransport(options.stdin, options.stdout);
  const stdin = options.stdin ?? process.stdin;
  const closedInput = new Promise<void>((resolve) => {
    stdin.once('end', resolve);
    stdin.once('close', resolve);
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

/** Server-sent events from a fetch body: `event:` name and `data:` line of each block. */
async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ name: string; data: string }> {
  let buffer = '';
  for await (const chunk of body.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const name = /^event: ?(.*)$/m.exec(block)?.[1];
      const data = /^data: ?(.*)$/m.exec(block)?.[1];
      if (name && data !== undefined) yield { name, data };
    }
  }
}
