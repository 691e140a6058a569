// A stand-in for a permission-prompt tool: an MCP server (the SDK's McpServer) on stdio, started
// by Claude Code from --mcp-config, or on Streamable HTTP on a loopback port, forked by
// stand-in-prompt-tool.ts. Configured by the environment that file sets; it writes everything it
// sees (every JSON-RPC message each way, every HTTP request, pipes and connections closing) as
// JSON lines to STAND_IN_LOG, synchronously, so a kill loses nothing already seen.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  CallToolResult,
  ServerNotification,
  ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { PromptAnswer } from './stand-in-prompt-tool.js';

const LOG = process.env.STAND_IN_LOG!;
const ANSWERS = JSON.parse(process.env.STAND_IN_ANSWERS ?? '[]') as PromptAnswer[];
const TOOL = process.env.STAND_IN_TOOL ?? 'approval_prompt';
const started = Date.now();
const log = (kind: string, fields: Record<string, unknown> = {}) =>
  appendFileSync(
    LOG,
    JSON.stringify({ kind, ms: Date.now() - started, at: Date.now(), ...fields }) + '\n',
  );

let calls = 0;

function createStandIn(): McpServer {
  const server = new McpServer({ name: 'stand-in', version: '1.0.0' });
  server.registerTool(
    TOOL,
    {
      description: 'Decides whether a tool may run (a stand-in for a permission-prompt tool).',
      // Loose: whatever Claude Code sends reaches the log and the answer, unknown fields too.
      inputSchema: z.looseObject({}),
    },
    async (args, extra) => {
      const answer = ANSWERS[Math.min(calls++, ANSWERS.length - 1)] ?? { text: '' };
      log('call', { arguments: args, meta: extra._meta ?? null, requestId: extra.requestId });
      extra.signal.addEventListener('abort', () => log('aborted', { requestId: extra.requestId }));
      await wait(answer, extra);
      log('answering', { requestId: extra.requestId, aborted: extra.signal.aborted });
      return result(answer, args);
    },
  );
  // Another tool on the same server: is an MCP tool's own use prompted for?
  server.registerTool(
    'note',
    { description: 'Notes a line.', inputSchema: { line: z.string() } },
    async () => {
      await sleep(Number(process.env.STAND_IN_NOTE_AFTER_MS ?? 0));
      return { content: [{ type: 'text', text: 'noted' }] };
    },
  );
  return server;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Waits answer.afterMs, sending progress every progressEveryMs on the call's progress token. */
async function wait(answer: PromptAnswer, extra: Extra): Promise<void> {
  const until = Date.now() + (answer.afterMs ?? 0);
  const token = extra._meta?.progressToken;
  for (let progress = 1; Date.now() < until && !extra.signal.aborted; progress++) {
    const step = Math.min(answer.progressEveryMs ?? Infinity, until - Date.now());
    await sleep(step);
    if (answer.progressEveryMs === undefined || token === undefined || Date.now() >= until)
      continue;
    await extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress },
      })
      .then(() => log('progress-sent', { progress }))
      .catch((error: Error) => log('progress-failed', { error: error.message }));
  }
}

function result(answer: PromptAnswer, args: Record<string, unknown>): CallToolResult {
  const value = answer.echoInput
    ? { ...(answer.json as object), updatedInput: args.input }
    : answer.json;
  const text = answer.text ?? JSON.stringify(value);
  return { content: [{ type: 'text', text }], ...(answer.isError ? { isError: true } : {}) };
}

/** Logs every message each way: the exact requests and notifications Claude Code sends. */
function logged(transport: Transport, session?: string): Transport {
  const { send } = transport;
  transport.send = (message, options) => {
    log('out', { session, message });
    return send.call(transport, message, options);
  };
  return transport;
}

async function connect(server: McpServer, transport: Transport, session?: string) {
  await server.connect(logged(transport, session));
  const handle = transport.onmessage!;
  transport.onmessage = (message, extra) => {
    log('in', { session, message });
    handle(message, extra);
  };
}

async function serveStdio() {
  process.stdin.on('end', () => log('stdin-end'));
  process.stdin.on('close', () => log('stdin-closed'));
  await connect(createStandIn(), new StdioServerTransport());
}

/** Stateful Streamable HTTP, the SDK's way: a transport and a server per session. */
function serveHttp() {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    const session = req.headers['mcp-session-id'] as string | undefined;
    log('http', { method: req.method, url: req.url, headers: req.headers, session });
    res.on('close', () =>
      log('http-closed', {
        ...{ method: req.method, session, status: res.statusCode },
        finished: res.writableFinished,
      }),
    );
    const known = session === undefined ? undefined : sessions.get(session);
    if (known) return void known.handleRequest(req, res);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      enableJsonResponse: process.env.STAND_IN_JSON_RESPONSE === '1',
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    void connect(createStandIn(), transport).then(() => transport.handleRequest(req, res));
  });
  http.listen(0, '127.0.0.1', () => {
    process.send!({ port: (http.address() as AddressInfo).port });
  });
  process.on('disconnect', () => process.exit(0));
}

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.on(signal, () => {
    log('signal', { signal });
    // Staying shows what else Claude Code does to a server that outlives its signal.
    if (process.env.STAND_IN_OUTLIVE_SIGNALS !== '1') process.exit(0);
  });
}
log('started', { transport: process.argv[2], pid: process.pid });
if (process.argv[2] === 'http') serveHttp();
else await serveStdio();
