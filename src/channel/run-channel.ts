import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Readable, Writable } from 'node:stream';
import { createApiClient } from '../client/api-client.js';
import type { Doorbell } from '../contract/doorbell.js';
import { TODO_TOOLS, type TodoToolDefinition } from '../contract/todo-tools.js';
import { createApprovalRelay, type QuestionArgs } from './approval-relay.js';
import {
  CHANNEL_CAPABILITIES,
  CHANNEL_INSTRUCTIONS,
  channelNotification,
  PermissionRequest,
} from './channel-protocol.js';
import { createChannelSession } from './channel-session.js';
import { doorbellEvent } from './doorbell-event.js';
import { dropOverlongLines } from './drop-overlong-lines.js';
import { followDoorbells } from './follow-doorbells.js';
import { createToolProxy } from './tool-proxy.js';

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

/**
 * The longest stdin line read. The MCP SDK's stdio transport closes (and so ends the channel)
 * when its read buffer passes 10 MB; longer lines are dropped before they reach it.
 */
const LINE_MAX_BYTES = 8 * 1024 * 1024;
/** How long one request to the API may stay unanswered (an approval asked, a prompt relayed). */
const API_TIMEOUT_MS = 10_000;

/**
 * `switchboard channel`: the stdio MCP server Claude Code starts. It offers the switchboard
 * tools — the contract's definitions, so that they are listed even while the server is down —
 * and forwards each call to the server's /mcp endpoint with the agent's token (tool-proxy.ts);
 * it attaches to the server as a `channel` consumer and turns each doorbell into a
 * `notifications/claude/channel` event (follow-doorbells.ts, doorbell-event.ts); and it relays
 * Claude Code's permission prompts into approval todos whose verdicts it sends back
 * (approval-relay.ts). Resolves when stdin closes (Claude Code went away).
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
  const pending: { method: string; params: object }[] = [];
  const send = (message: { method: string; params: object }) => {
    if (!initialized) {
      pending.push(message);
      return;
    }
    server
      .notification(message as never)
      .catch((error: unknown) => log(`could not notify Claude Code: ${String(error)}`));
  };

  const session = createChannelSession(stopped.signal);
  const tools = createToolProxy({ base, token, version: options.version, log });
  const relay = createApprovalRelay({
    api: createApiClient({ url, token }, { client: 'channel', timeoutMs: API_TIMEOUT_MS }),
    base,
    session,
    approvalTtlSeconds: options.approvalTtlSeconds,
    heldTodo: () => tools.heldTodo(),
    log,
  });

  // The SDK validates each call's arguments against the tool's schema, and refuses a bad one
  // (or an unknown tool) with a tool error naming the argument, as /mcp does.
  const definitions: Record<string, TodoToolDefinition> = TODO_TOOLS;
  for (const [name, definition] of Object.entries(definitions)) {
    mcp.registerTool(name, definition, (args: Record<string, unknown>) =>
      name === 'request_approval' ? relay.ask(args as QuestionArgs) : tools.forward(name, args),
    );
  }
  server.setNotificationHandler(PermissionRequest, ({ params }) => relay.relayPermission(params));

  const onDoorbell = (doorbell: Doorbell) => {
    if (doorbell.type !== 'verdict') return send(channelNotification(doorbellEvent(doorbell)));
    const answer = relay.verdict(doorbell);
    if (answer) send(answer);
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
    void followDoorbells({
      credentials: { url, token },
      signal: stopped.signal,
      session,
      onDoorbell,
      tell: (event) => send(channelNotification(event)),
      log,
    });
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
  tools.close();
}
