import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { join } from 'node:path';
import { z } from 'zod';
import { runMark } from './leftover-processes.js';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'run.js');

/** What Claude Code accepts as a channel event: identifier keys, string values only. */
export const ChannelEvent = z.object({
  method: z.literal('notifications/claude/channel'),
  params: z.object({
    content: z.string(),
    meta: z.record(z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/), z.string()),
  }),
});
export const PermissionVerdict = z.object({
  method: z.literal('notifications/claude/channel/permission'),
  params: z.object({
    request_id: z.string().regex(/^[a-km-z]{5}$/),
    behavior: z.enum(['allow', 'deny']),
  }),
});

export interface ClaudeCode {
  client: Client;
  events: z.infer<typeof ChannelEvent>['params'][];
  verdicts: z.infer<typeof PermissionVerdict>['params'][];
  /** Anything the client reported: a notification failing its schema lands here. */
  errors: Error[];
  stderr(): string;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult & { text: string }>;
  /** Claude Code sends a permission prompt the way it does: a notification with four strings. */
  askPermission(params: {
    request_id: string;
    tool_name: string;
    description: string;
    input_preview: string;
  }): Promise<void>;
  close(): Promise<void>;
}

/** What to start, as an .mcp.json entry says: by default the checkout's `switchboard channel`. */
export interface ServerCommand {
  command: string;
  args: string[];
  /** Where Claude Code runs: the project directory (default: this process's). */
  cwd?: string;
}

/**
 * A test client that behaves like Claude Code (CHANNELS.md, "Testing without Claude Code"): it
 * spawns the real `switchboard channel`, connects as `claude-code` with only
 * `{roots, elicitation}` capabilities, and validates every channel notification by schema.
 */
export async function startClaudeCode(
  env: Record<string, string>,
  { command, args, cwd }: ServerCommand = { command: process.execPath, args: [BIN, 'channel'] },
): Promise<ClaudeCode> {
  const transport = new StdioClientTransport({
    command,
    args,
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...runMark(), ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client(
    { name: 'claude-code', version: '2.1.81' },
    { capabilities: { roots: {}, elicitation: {} } },
  );
  const errors: Error[] = [];
  let closing = false;
  client.onerror = (error) => {
    if (!closing) errors.push(error);
  };
  const events: ClaudeCode['events'] = [];
  const verdicts: ClaudeCode['verdicts'] = [];
  client.setNotificationHandler(ChannelEvent, ({ params }) => void events.push(params));
  client.setNotificationHandler(PermissionVerdict, ({ params }) => void verdicts.push(params));
  await client.connect(transport);
  return {
    client,
    events,
    verdicts,
    errors,
    stderr: () => stderr,
    async call(name, args = {}) {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      return {
        ...result,
        text: result.content.map((c) => (c.type === 'text' ? c.text : '')).join(''),
      };
    },
    askPermission: (params) =>
      client.notification({
        method: 'notifications/claude/channel/permission_request',
        params,
      }),
    async close() {
      closing = true;
      await client.close();
    },
  };
}
